//! The console front end (`ARRAYFLOW_DEBUG=console`, [`crate::Debugger::console`]): at a stop it
//! prompts on the terminal and runs commands on the [`Stop`] until `continue` or `step`.

use super::breakpoint::BreakpointId;
use super::stop::{ArrayId, Stop, StopReason};
use crate::ir::Scalar;
use std::io::{BufRead, Write};

/// The prompt printed at a stop.
pub(crate) const PROMPT: &str = "(arrayflow) ";

const HELP: &str = "\
commands at a stop:
  where                      where the application stopped and why
  list                       the arrays the application holds (#id, name, type, shape, op, site)
  print <name|#id|$> [slice] an array's values ($: the one recorded here), e.g. print u [0:3]
  set <name|#id>[i,j] = v    set one element; `set <name|#id> = v` sets every element,
                             `set <name|#id> = v1, v2, ...` all of them in order
  step                       run to the next API call that records a result
  stepi [name|#id] [i]       step inside the fused kernel that computed the array (the
                             stop's by default) one IR node at a time, showing element i
                             (0 by default) of each node; computes a pending array first
  continue                   run to the next breakpoint (also: c)
  break <file:line>          add a breakpoint
  delete <n>                 delete breakpoint n
  info breakpoints           list breakpoints with their hits
  help                       this list";

/// `file:line` split (the line after the last `:`).
pub(crate) fn parse_location(s: &str) -> Option<(String, u32)> {
    let (file, line) = s.rsplit_once(':')?;
    let line = line.trim().parse().ok()?;
    (!file.trim().is_empty()).then(|| (file.trim().to_string(), line))
}

/// The console's state across stops.
pub(crate) struct Console {
    /// Standard input ended: stops no longer prompt.
    closed: bool,
}

impl Console {
    pub(crate) fn new() -> Console {
        Console { closed: false }
    }

    pub(crate) fn into_callback(mut self) -> impl FnMut(&mut Stop) + Send + 'static {
        move |stop: &mut Stop| self.at_stop(stop)
    }

    fn at_stop(&mut self, stop: &mut Stop) {
        if self.closed {
            return;
        }
        let stdin = std::io::stdin();
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{}", where_text(stop));
        loop {
            let _ = write!(out, "{PROMPT}");
            let _ = out.flush();
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => {
                    self.closed = true;
                    let _ = writeln!(out);
                    return;
                }
                Ok(_) => {}
            }
            match command(stop, line.trim()) {
                Flow::Prompt(text) => {
                    if !text.is_empty() {
                        let _ = writeln!(out, "{text}");
                    }
                }
                Flow::Resume(text) => {
                    if !text.is_empty() {
                        let _ = writeln!(out, "{text}");
                    }
                    let _ = out.flush();
                    return;
                }
            }
        }
    }
}

/// What a command does to the stop.
enum Flow {
    /// Print this and prompt again.
    Prompt(String),
    /// Print this and let the application run.
    Resume(String),
}

fn where_text(stop: &Stop) -> String {
    let why = match stop.reason() {
        StopReason::Breakpoint { id, hits } => format!("breakpoint {id}, hit {hits}"),
        StopReason::Watch { id, hits } => format!("watchpoint {id}, hit {hits}"),
        StopReason::Computed { id, hits } => format!("watchpoint {id}, hit {hits}: computed"),
        StopReason::Step => "step".to_string(),
    };
    let what = stop
        .live()
        .into_iter()
        .find(|a| a.id == stop.array())
        .map(|a| {
            let name = a.name.map(|n| format!(" ({n})")).unwrap_or_default();
            format!("{}{name} = {} {:?} {}", a.id, a.op, a.shape, a.dtype)
        })
        .unwrap_or_else(|| stop.array().to_string());
    format!("stopped at {} ({why}): {what}", stop.site())
}

/// `stepi [name|#id] [i]`: the kernel's micro-kernel steps at element `i` of the array.
fn stepi(stop: &Stop, rest: &str) -> String {
    let mut words = rest.split_whitespace();
    let (mut id, mut element) = (stop.array(), 0usize);
    for w in words.by_ref() {
        if let Ok(i) = w.parse::<usize>() {
            element = i;
        } else {
            match stop.find(w) {
                Some(found) => id = found,
                None => return format!("stepi: no array `{w}` (try `list`)"),
            }
        }
    }
    match stop.step_kernel(id, crate::StepScope::Element(element)) {
        Err(e) => format!("stepi: {e}"),
        Ok(steps) => {
            let mut s = format!(
                "kernel of {id}, element {element}: {} steps\nstep  op         site                           value            reference",
                steps.len()
            );
            for r in &steps {
                let v = r.values.first().map_or("-".to_string(), |v| format!("{v}"));
                let rf = r
                    .reference
                    .as_ref()
                    .and_then(|x| x.first())
                    .map_or("-".to_string(), |v| format!("{v}"));
                let stored = if r.stored.is_some() { " (stored)" } else { "" };
                s.push_str(&format!(
                    "\n{:<5} {:<10} {:<30} {:<16} {rf}{stored}",
                    r.step,
                    r.op,
                    r.site.to_string(),
                    v
                ));
            }
            s
        }
    }
}

fn command(stop: &mut Stop, line: &str) -> Flow {
    let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let text = match cmd {
        "" => String::new(),
        "help" | "h" => HELP.to_string(),
        "where" | "w" | "bt" => where_text(stop),
        "list" | "l" => {
            let mut s = String::from("id     name     type  shape          op         site");
            for a in stop.live() {
                s.push('\n');
                s.push_str(&a.to_string());
            }
            s
        }
        "print" | "p" => print(stop, rest),
        "set" => set(stop, rest),
        "step" | "s" | "next" | "n" => {
            stop.step();
            return Flow::Resume(String::new());
        }
        "stepi" | "si" => stepi(stop, rest),
        "continue" | "c" | "cont" => return Flow::Resume(String::new()),
        "break" | "b" => match parse_location(rest) {
            Some((file, line)) => {
                let id = stop.break_at(&file, line);
                format!("breakpoint {id} at {file}:{line}")
            }
            None => "usage: break <file:line>".to_string(),
        },
        "delete" | "d" => match rest.parse::<u32>() {
            Ok(n) if stop.delete(BreakpointId(n)) => format!("deleted breakpoint {n}"),
            Ok(n) => format!("no breakpoint {n}"),
            Err(_) => "usage: delete <n>".to_string(),
        },
        "info" if rest.starts_with('b') => {
            let bps = stop.breakpoints();
            if bps.is_empty() {
                "no breakpoints".to_string()
            } else {
                let mut s = String::from("num status   where                          hits");
                for b in bps {
                    s.push('\n');
                    s.push_str(&b.to_string());
                }
                s
            }
        }
        _ => format!("unknown command `{line}` (type `help`)"),
    };
    Flow::Prompt(text)
}

/// The array a command names: `$` (the one recorded at the stop), `#id` or a name.
fn target(stop: &Stop, name: &str) -> Result<ArrayId, String> {
    if name == "$" {
        return Ok(stop.array());
    }
    stop.find(name)
        .ok_or_else(|| format!("no array `{name}` (see `list`)"))
}

fn print(stop: &Stop, rest: &str) -> String {
    let (name, slice) = match rest.find(['[', ' ']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if name.is_empty() {
        return "usage: print <name|#id|$> [slice]".to_string();
    }
    let id = match target(stop, name) {
        Ok(id) => id,
        Err(e) => return e,
    };
    match stop.print(id, slice) {
        Ok(v) => format!("{name}{} = {v}", slice.trim()),
        Err(e) => e.to_string(),
    }
}

fn set(stop: &Stop, rest: &str) -> String {
    const USAGE: &str = "usage: set <name|#id>[i,j] = v  or  set <name|#id> = v[, v...]";
    let Some((lhs, rhs)) = rest.split_once('=') else {
        return USAGE.to_string();
    };
    let lhs = lhs.trim();
    let (name, index) = match lhs.split_once('[') {
        Some((n, i)) => (n.trim(), Some(i.trim_end_matches(']'))),
        None => (lhs, None),
    };
    let id = match target(stop, name) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let values: Result<Vec<f64>, _> = rhs
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|v| v.trim().parse::<f64>())
        .collect();
    let Ok(values) = values else {
        return format!("cannot read the values `{}`", rhs.trim());
    };
    let current = match stop.values_of(id) {
        Ok(v) => v,
        Err(e) => return e.to_string(),
    };
    let dtype = current.dtype();
    if dtype.is_complex() {
        return "complex arrays are set through the Rust API (Stop::set)".to_string();
    }
    let cast = |v: f64| Scalar::F64(v).cast(dtype);
    let n = current.len();
    let data = match (index, &values[..]) {
        (Some(index), [v]) => {
            let idx: Result<Vec<usize>, _> = index
                .split(',')
                .map(|i| i.trim().parse::<usize>())
                .collect();
            let Ok(idx) = idx else {
                return format!("cannot read the index `[{index}]`");
            };
            if idx.len() != current.shape().len()
                || idx.iter().zip(current.shape()).any(|(&i, &d)| i >= d)
            {
                return format!(
                    "index {idx:?} is out of range for shape {:?}",
                    current.shape()
                );
            }
            let at = crate::ir::ravel(&idx, current.shape());
            crate::ir::collect(dtype, n, |i| {
                if i == at {
                    cast(*v)
                } else {
                    current.data.get(i)
                }
            })
        }
        (Some(_), _) => return "one value sets one element".to_string(),
        (None, [v]) => crate::ir::collect(dtype, n, |_| cast(*v)),
        (None, vs) if vs.len() == n => crate::ir::collect(dtype, n, |i| cast(vs[i])),
        (None, vs) => {
            return format!("{name} has {n} elements; {} values were given", vs.len());
        }
    };
    match super::values::set_value(id.0, data, stop.site()) {
        Ok(()) => match stop.print(id, "") {
            Ok(v) => format!("{name} = {v}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}
