//! The run database (the seed's 813): one folder per run of platform-independent files
//! (`schema::FILES`: `meta.json` and one JSON object per line in the others), its writer and its
//! reader, and finding the runs under a profiling directory.

use super::schema::{FILES, Meta, Run, SCHEMA_VERSION};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `run` into the folder `dir` (created).
pub fn write(dir: &Path, run: &Run) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let meta = serde_json::to_vec_pretty(&run.meta).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(FILES[0]), meta)?;
    lines(&dir.join(FILES[1]), &run.pcs)?;
    lines(&dir.join(FILES[2]), &run.cks)?;
    lines(&dir.join(FILES[3]), &run.launches)?;
    lines(&dir.join(FILES[4]), &run.runtime)
}

fn lines<T: Serialize>(path: &Path, items: &[T]) -> std::io::Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    for it in items {
        serde_json::to_writer(&mut w, it).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// Reads the run folder `dir`; `dir` may also be a profiling directory holding exactly one run,
/// or the latest of several ([`runs`]).
pub fn read(dir: &Path) -> Result<Run, String> {
    let dir = resolve(dir)?;
    let meta_path = dir.join(FILES[0]);
    let text =
        std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let meta: Meta =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    if meta.schema_version != SCHEMA_VERSION {
        return Err(format!(
            "{}: schema version {} (this reader reads version {SCHEMA_VERSION})",
            meta_path.display(),
            meta.schema_version
        ));
    }
    Ok(Run {
        meta,
        pcs: read_lines(&dir.join(FILES[1]))?,
        cks: read_lines(&dir.join(FILES[2]))?,
        launches: read_lines(&dir.join(FILES[3]))?,
        runtime: read_lines(&dir.join(FILES[4]))?,
    })
}

fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?,
        );
    }
    Ok(out)
}

/// The run folders under the profiling directory `dir`, oldest first.
pub fn runs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(FILES[0]).is_file())
        .collect();
    // `run-<unix-ms>-<pid>`: by time, then name.
    v.sort_by_key(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let ms: u64 = name
            .strip_prefix("run-")
            .and_then(|r| r.split('-').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        (ms, name)
    });
    v
}

/// `dir` itself when it is a run folder, else the latest run under it.
fn resolve(dir: &Path) -> Result<PathBuf, String> {
    if dir.join(FILES[0]).is_file() {
        return Ok(dir.to_path_buf());
    }
    runs(dir)
        .pop()
        .ok_or_else(|| format!("{}: no profile run here (no meta.json)", dir.display()))
}
