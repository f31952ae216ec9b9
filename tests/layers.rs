//! The crate's layers import one way: a module may use its own layer and the layers below it,
//! never one above. The layers are the table in ARCHITECTURE.md ("Layers"), read here, so the
//! document and the check cannot drift apart. Every `crate::` path (use declarations, paths in
//! code, `use crate::{...}` groups, `$crate::` in macros) and every `super::` path of every source
//! file under `src/`, `primitives/` and `intrinsics/` is resolved to a module and looked up.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, bottom first: each entry is a module path prefix (`debug::hooks`) and its layer.
fn layers() -> Vec<(Vec<String>, usize)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md is readable");
    let start = doc
        .find("<!-- layers -->")
        .expect("ARCHITECTURE.md has a `<!-- layers -->` table");
    let end = doc[start..]
        .find("<!-- /layers -->")
        .expect("the layers table ends with `<!-- /layers -->`")
        + start;
    let mut out = Vec::new();
    for line in doc[start..end].lines() {
        // Table rows: `| 3 | `exec` | ... |`
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 {
            continue;
        }
        let Ok(layer) = cells[1].parse::<usize>() else {
            continue;
        };
        for m in cells[2].split(',') {
            let m = m.trim().trim_matches('`');
            if !m.is_empty() {
                out.push((m.split("::").map(String::from).collect(), layer));
            }
        }
    }
    assert!(out.len() >= 5, "the layers table has too few rows: {out:?}");
    out
}

/// The layer of a module path: the longest prefix in the table.
fn layer_of(path: &[String], table: &[(Vec<String>, usize)]) -> Option<usize> {
    table
        .iter()
        .filter(|(p, _)| path.starts_with(p))
        .max_by_key(|(p, _)| p.len())
        .map(|&(_, l)| l)
}

/// The module path of a source file (`src/debug/hooks/read.rs` -> `debug::hooks::read`).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if parts[0] == "src" {
        parts.remove(0);
    }
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of a file without comments (line comments, doc comments, block comments) and string
/// literals' contents, so prose that names a path is not an import.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // a char literal such as '"'
            out.push_str("' '");
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The path segments starting at `s` (`a::b::{c, d}` -> `[a, b]` and the group's text).
fn segments(s: &str) -> (Vec<String>, Option<String>) {
    let mut segs = Vec::new();
    let mut rest = s;
    loop {
        let n = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if n == 0 {
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                return (segs, Some(group[..end].to_string()));
            }
            return (segs, None);
        }
        segs.push(rest[..n].to_string());
        rest = &rest[n..];
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => return (segs, None),
        }
    }
}

/// The items of a `{...}` group, split at top-level commas.
fn group_items(g: &str) -> Vec<String> {
    let (mut items, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for c in g.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items.push(cur);
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every module path the code refers to, absolute (`crate::` and `super::` resolved against the
/// file's module `me`).
fn references(code: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let mut starts: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| is_ident(c) && c != '$') {
            continue; // e.g. `arrayflow_crate::`
        }
        starts.push((i + "crate::".len(), Vec::new()));
    }
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("super::") || code[..i].chars().last().is_some_and(is_ident) {
            continue; // counted from the first `super::` of a chain
        }
        let mut base = me.to_vec();
        let mut j = i;
        while code[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        starts.push((j, base));
    }
    let mut stack = starts;
    while let Some((at, base)) = stack.pop() {
        let (segs, group) = segments(&code[at..]);
        let mut path = base.clone();
        path.extend(segs.iter().cloned());
        match group {
            Some(g) => {
                for item in group_items(&g) {
                    let (inner, _) = segments(&item);
                    if inner.first().is_some_and(|s| s == "self") {
                        out.insert(path.clone());
                        continue;
                    }
                    let mut p = path.clone();
                    p.extend(inner);
                    out.insert(p);
                }
            }
            None => {
                out.insert(path);
            }
        }
    }
    out
}

/// Every import from a layer above the importing module's: (file, module, its layer, path, layer).
fn violations(
    files: &[(PathBuf, Vec<String>, String)],
    table: &[(Vec<String>, usize)],
) -> Vec<String> {
    let mut bad = Vec::new();
    for (file, me, src) in files {
        let Some(mine) = layer_of(me, table) else {
            continue;
        };
        for path in references(&code_only(src), me) {
            if let Some(theirs) = layer_of(&path, table)
                && theirs > mine
            {
                bad.push(format!(
                    "{}: module `{}` (layer {mine}) uses `crate::{}` (layer {theirs})",
                    file.display(),
                    me.join("::"),
                    path.join("::"),
                ));
            }
        }
    }
    bad
}

fn sources() -> Vec<(PathBuf, Vec<String>, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack = vec![
        root.join("src"),
        root.join("primitives"),
        root.join("intrinsics"),
    ];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                // `src/bin/`: the commands are crates of their own, on the public API.
                if p != root.join("src").join("bin") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let me = module_of(&root, &p);
                if me.is_empty() || me == ["lib"] {
                    continue; // the crate root declares the modules
                }
                let src = std::fs::read_to_string(&p).unwrap();
                out.push((p.strip_prefix(&root).unwrap().to_path_buf(), me, src));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let table = layers();
    let files = sources();
    // Every top-level module has a layer.
    let mut unplaced: BTreeSet<String> = BTreeSet::new();
    for (_, me, _) in &files {
        if layer_of(me, &table).is_none() {
            unplaced.insert(me[0].clone());
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules missing from ARCHITECTURE.md's layers table: {unplaced:?}"
    );
    let bad = violations(&files, &table);
    assert!(
        bad.is_empty(),
        "imports from a layer above (ARCHITECTURE.md, \"Layers\"):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_finds_an_upward_import() {
    let table = layers();
    let file = |path: &str, me: &str, src: &str| {
        (
            PathBuf::from(path),
            me.split("::").map(String::from).collect::<Vec<_>>(),
            src.to_string(),
        )
    };
    let cases = [
        // A plain use, a path in code, a group, a macro's `$crate`, a `super` chain out of a
        // lower module into a higher one's sibling.
        file("src/ir/x.rs", "ir::x", "use crate::api::Array;"),
        file(
            "src/ir/x.rs",
            "ir::x",
            "fn f() { crate::runtime::Inner::get(); }",
        ),
        file(
            "src/exec/x.rs",
            "exec::x",
            "use crate::{ir::DType, compile::Inner};",
        ),
        file(
            "src/ir/x.rs",
            "ir::x",
            "macro_rules! m { () => { $crate::exec::X } }",
        ),
        file("src/debug/x.rs", "debug::x", "use super::hooks::read;"),
    ];
    for case in cases {
        let found = violations(std::slice::from_ref(&case), &table);
        assert_eq!(found.len(), 1, "{}: {found:?}", case.2);
    }
    // Comments, strings, downward and same-layer imports are not violations.
    let fine = [
        file(
            "src/api/x.rs",
            "api::x",
            "use crate::{ir::DType, exec::TypedVec, compile::Inner};",
        ),
        file(
            "src/ir/x.rs",
            "ir::x",
            "// see crate::api::Array\n/* crate::runtime */ const S: &str = \"crate::api\";",
        ),
        file(
            "src/debug/hooks/x.rs",
            "debug::hooks::x",
            "use super::super::reference; use crate::compile::Inner;",
        ),
    ];
    for case in fine {
        let found = violations(std::slice::from_ref(&case), &table);
        assert!(found.is_empty(), "{}: {found:?}", case.2);
    }
}
