//! `arrayflow-prof`: the profiler's analyzer and viewer on the command line (the analysis lives in
//! `arrayflow::profile::report`).
//!
//! ```text
//! arrayflow-prof report  <dir>                 the four reports (summary, compute, I/O, runtime)
//! arrayflow-prof compare <a> <b> [factor]      per call site, flagging changes of x factor (1.5)
//! arrayflow-prof trace   <dir> -o <out.json>   Chrome trace-event JSON (Perfetto, chrome://tracing)
//! arrayflow-prof html    <dir> -o <out.html>   a self-contained HTML report
//! ```
//! `<dir>` is a run folder or a profiling directory (its latest run).

use arrayflow::profile::{db, report};
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: arrayflow-prof report <dir> | compare <a> <b> [factor] | trace <dir> -o <out.json> | html <dir> -o <out.html>";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("arrayflow-prof: {e}");
        std::process::exit(2);
    }
}

fn out_path(args: &[String]) -> Result<PathBuf, String> {
    match args {
        [o, p, ..] if o == "-o" => Ok(PathBuf::from(p)),
        _ => Err(format!("missing -o <file>\n{USAGE}")),
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    let read = |p: &String| db::read(Path::new(p));
    match args {
        [cmd, dir] if cmd == "report" => {
            print!("{}", report::full_report(&read(dir)?));
            Ok(())
        }
        [cmd, a, b, rest @ ..] if cmd == "compare" => {
            let factor = match rest.first() {
                Some(f) => f.parse().map_err(|_| format!("bad factor `{f}`"))?,
                None => 1.5,
            };
            print!("{}", report::compare_text(&read(a)?, &read(b)?, factor));
            Ok(())
        }
        [cmd, dir, rest @ ..] if cmd == "trace" => {
            let json = report::chrome_trace(&read(dir)?);
            write(&out_path(rest)?, &json.to_string())
        }
        [cmd, dir, rest @ ..] if cmd == "html" => {
            write(&out_path(rest)?, &report::html(&read(dir)?))
        }
        _ => Err(USAGE.into()),
    }
}
