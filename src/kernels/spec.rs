//! Parsing and checking a kernel spec (seed 002): the JSON fields, each error naming its field
//! (`buffers[1].type: "flaot" is not one of f32, f64, i32, u32`). Accepts this crate's form
//! (`buffers` with a `kind`, `scalars`) and PySchedCL's (`inputBuffers`, `outputBuffers`,
//! `ioBuffers` with `break`, `varArguments`, C type names `float`/`int`).

use super::expr::Expr;
use crate::ir::DType;
use serde_json::{Map, Value};
use std::path::Path;

/// How the kernel uses a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferKind {
    /// Read only: uploaded, never copied back.
    Input,
    /// Written only: copied back, never uploaded.
    Output,
    /// Read and written.
    InOut,
}

/// One buffer argument.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferSpec {
    /// Where it was given (`buffers[1]`), for errors.
    pub field: String,
    /// Read, written or both.
    pub kind: BufferKind,
    /// Element type.
    pub dtype: DType,
    /// Its length in elements, over `dataset`.
    pub size: Expr,
    /// The kernel argument's position.
    pub pos: u32,
    /// Whether a part of the launch needs only its rows (dimension 0) of the buffer.
    pub split: bool,
}

/// Where a scalar argument's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ScalarValue {
    /// A number written in the spec.
    Number(f64),
    /// An expression over `dataset`.
    Expr(Expr),
    /// Given by the caller at launch, by this name.
    Named(String),
}

/// One scalar argument.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarSpec {
    /// Where it was given (`scalars[0]`), for errors.
    pub field: String,
    /// Its type in the kernel (`float`, `double`, `int`, `uint`).
    pub dtype: DType,
    /// The kernel argument's position.
    pub pos: u32,
    /// Its value.
    pub value: ScalarValue,
}

const TYPES: &str = "f32, f64, i32, u32";

fn dtype_of(s: &str) -> Option<DType> {
    Some(match s {
        "f32" | "float" => DType::F32,
        "f64" | "double" => DType::F64,
        "i32" | "int" => DType::I32,
        "u32" | "uint" | "unsigned int" => DType::U32,
        _ => return None,
    })
}

type Res<T> = Result<T, String>;

fn err<T>(field: &str, msg: impl std::fmt::Display) -> Res<T> {
    Err(format!("{field}: {msg}"))
}

fn object<'a>(v: &'a Value, field: &str) -> Res<&'a Map<String, Value>> {
    v.as_object()
        .map_or_else(|| err(field, format!("expected an object, found {v}")), Ok)
}

fn check_keys(m: &Map<String, Value>, field: &str, allowed: &[&str]) -> Res<()> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            let at = if field.is_empty() {
                k.clone()
            } else {
                format!("{field}.{k}")
            };
            return err(
                &at,
                format!("unknown field (expected one of {})", allowed.join(", ")),
            );
        }
    }
    Ok(())
}

fn required<'a>(m: &'a Map<String, Value>, field: &str, key: &str) -> Res<&'a Value> {
    m.get(key)
        .map_or_else(|| err(&join(field, key), "missing"), Ok)
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_string()
    } else {
        format!("{field}.{key}")
    }
}

fn uint(v: &Value, field: &str, max: u64) -> Res<u64> {
    match v.as_u64() {
        Some(x) if x <= max => Ok(x),
        _ => err(field, format!("{v} is not an integer in 0..={max}")),
    }
}

fn expr(v: &Value, field: &str) -> Res<Expr> {
    match v {
        Value::String(s) => Expr::parse(s).or_else(|e| err(field, e)),
        Value::Number(_) => Ok(Expr::Int(uint(v, field, i64::MAX as u64)? as i64)),
        _ => err(field, format!("expected a size expression, found {v}")),
    }
}

/// A list of expressions: a JSON array, a string `"[a, b]"` (002's Python list) or one
/// expression.
fn exprs(v: &Value, field: &str) -> Res<Vec<Expr>> {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| expr(x, &format!("{field}[{i}]")))
            .collect(),
        Value::String(s) if s.trim_start().starts_with('[') => {
            let t = s.trim();
            let Some(inner) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
                return err(field, format!("\"{s}\" has no closing `]`"));
            };
            inner
                .split(',')
                .enumerate()
                .map(|(i, x)| Expr::parse(x).or_else(|e| err(&format!("{field}[{i}]"), e)))
                .collect()
        }
        _ => Ok(vec![expr(v, field)?]),
    }
}

fn dtype(m: &Map<String, Value>, field: &str) -> Res<DType> {
    let f = join(field, "type");
    let v = required(m, field, "type")?;
    let s = v
        .as_str()
        .map_or_else(|| err(&f, format!("{v} is not one of {TYPES}")), Ok)?;
    dtype_of(s).map_or_else(|| err(&f, format!("\"{s}\" is not one of {TYPES}")), Ok)
}

fn buffer(v: &Value, field: &str, kind: Option<BufferKind>) -> Res<BufferSpec> {
    let m = object(v, field)?;
    check_keys(m, field, &["kind", "type", "size", "pos", "split", "break"])?;
    let kind = match (kind, m.get("kind")) {
        (Some(k), None) => k,
        (_, Some(k)) => match k.as_str() {
            Some("input") => BufferKind::Input,
            Some("output") => BufferKind::Output,
            Some("io") => BufferKind::InOut,
            _ => {
                return err(
                    &join(field, "kind"),
                    format!("{k} is not one of input, output, io"),
                );
            }
        },
        (None, None) => return err(&join(field, "kind"), "missing (input, output or io)"),
    };
    let split = match (m.get("split"), m.get("break")) {
        (Some(_), Some(_)) => return err(field, "both `split` and `break` given"),
        (Some(v), None) => v.as_bool().map_or_else(
            || err(&join(field, "split"), format!("{v} is not true or false")),
            Ok,
        )?,
        (None, Some(v)) => uint(v, &join(field, "break"), 1)? == 1,
        (None, None) => false,
    };
    Ok(BufferSpec {
        field: field.to_string(),
        kind,
        dtype: dtype(m, field)?,
        size: expr(required(m, field, "size")?, &join(field, "size"))?,
        pos: uint(required(m, field, "pos")?, &join(field, "pos"), 255)? as u32,
        split,
    })
}

fn scalar(v: &Value, field: &str) -> Res<ScalarSpec> {
    let m = object(v, field)?;
    check_keys(m, field, &["type", "pos", "value", "name"])?;
    let value = match (m.get("value"), m.get("name")) {
        (Some(_), Some(_)) => return err(field, "both `value` and `name` given"),
        (Some(Value::Number(n)), None) => ScalarValue::Number(n.as_f64().unwrap_or(0.0)),
        (Some(v), None) => ScalarValue::Expr(expr(v, &join(field, "value"))?),
        (None, Some(Value::String(s))) if !s.is_empty() => ScalarValue::Named(s.clone()),
        (None, Some(v)) => return err(&join(field, "name"), format!("{v} is not a name")),
        (None, None) => return err(field, "needs a `value` or a `name`"),
    };
    Ok(ScalarSpec {
        field: field.to_string(),
        dtype: dtype(m, field)?,
        pos: uint(required(m, field, "pos")?, &join(field, "pos"), 255)? as u32,
        value,
    })
}

fn list<'a>(m: &'a Map<String, Value>, key: &str) -> Res<&'a [Value]> {
    match m.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => err(key, format!("expected a list, found {v}")),
    }
}

/// Parses the JSON text of a spec: every field but the source (`src` as written, `source` and
/// `origin` empty until [`super::KernelSpec`]'s constructors read the file).
pub(crate) fn parse(text: &str) -> Res<super::KernelSpec> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let m = object(&v, "the spec")?;
    check_keys(
        m,
        "",
        &[
            "name",
            "id",
            "src",
            "workDimension",
            "globalWorkSize",
            "localWorkSize",
            "buffers",
            "inputBuffers",
            "outputBuffers",
            "ioBuffers",
            "scalars",
            "varArguments",
            "localArguments",
            "partition",
        ],
    )?;
    let name = match required(m, "", "name")? {
        Value::String(s)
            if !s.is_empty()
                && !s.starts_with(|c: char| c.is_ascii_digit())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            s.clone()
        }
        v => return err("name", format!("{v} is not a kernel function name")),
    };
    let src = match required(m, "", "src")? {
        Value::String(s) if !s.is_empty() => s.clone(),
        v => return err("src", format!("{v} is not a file name")),
    };
    let work_dim = match required(m, "", "workDimension")? {
        v if matches!(v.as_u64(), Some(1..=3)) => v.as_u64().unwrap_or(1) as usize,
        v => return err("workDimension", format!("{v} is not one of 1, 2, 3")),
    };
    let global = exprs(required(m, "", "globalWorkSize")?, "globalWorkSize")?;
    if global.len() != work_dim {
        return err(
            "globalWorkSize",
            format!("{} sizes for workDimension {work_dim}", global.len()),
        );
    }
    let local = match m.get("localWorkSize") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let l = exprs(v, "localWorkSize")?;
            if l.len() != work_dim {
                return err(
                    "localWorkSize",
                    format!("{} sizes for workDimension {work_dim}", l.len()),
                );
            }
            Some(l)
        }
    };
    if !list(m, "localArguments")?.is_empty() {
        return err(
            "localArguments",
            "local-memory arguments are not supported yet",
        );
    }
    let mut buffers = Vec::new();
    for (key, kind) in [
        ("buffers", None),
        ("inputBuffers", Some(BufferKind::Input)),
        ("outputBuffers", Some(BufferKind::Output)),
        ("ioBuffers", Some(BufferKind::InOut)),
    ] {
        for (i, b) in list(m, key)?.iter().enumerate() {
            buffers.push(buffer(b, &format!("{key}[{i}]"), kind)?);
        }
    }
    let mut scalars = Vec::new();
    for key in ["scalars", "varArguments"] {
        for (i, s) in list(m, key)?.iter().enumerate() {
            scalars.push(scalar(s, &format!("{key}[{i}]"))?);
        }
    }
    let partition = match m.get("partition") {
        None => 0,
        Some(v) => uint(v, "partition", 10)? as u32,
    };
    // Positions: each argument once, together 0..n.
    let n = buffers.len() + scalars.len();
    let mut seen: Vec<Option<&str>> = vec![None; n];
    let all = buffers
        .iter()
        .map(|b| (b.pos, b.field.as_str()))
        .chain(scalars.iter().map(|s| (s.pos, s.field.as_str())));
    for (pos, field) in all {
        let f = format!("{field}.pos");
        match seen.get_mut(pos as usize) {
            None => {
                return err(
                    &f,
                    format!("{pos} is past the last argument ({} arguments)", n),
                );
            }
            Some(Some(other)) => return err(&f, format!("{pos} is also the position of {other}")),
            Some(s) => *s = Some(field),
        }
    }
    if buffers.is_empty() {
        return err("buffers", "the kernel has no buffer");
    }
    Ok(super::KernelSpec {
        name,
        src: src.into(),
        source: String::new(),
        origin: String::new(),
        work_dim,
        global,
        local,
        buffers,
        scalars,
        partition,
    })
}

/// Reads the source named by `src`, relative to `dir`.
pub(crate) fn read_source(dir: &Path, src: &Path) -> Res<String> {
    let p = dir.join(src);
    std::fs::read_to_string(&p).or_else(|e| err("src", format!("cannot read {}: {e}", p.display())))
}
