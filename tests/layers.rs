//! The architecture of compactd, checked. The workspace is built in layers, bottom to top.
//! Cargo keeps the crates one way (`compactd-core` ← `compactd-hermes` ← `compactd`); this
//! test keeps the layers inside each crate.
//!
//! `compactd-core` (`crates/core/src`):
//! 0. `cancel`: the cancellation token and the checkpoints every step calls (std only);
//! 1. `json`: the JSON lexer the session reader and the `JSON.stringify` reader share;
//! 2. `session`: session files parsed, migrated and walked as a tree of entries;
//! 3. `compaction`: tokens, cut point, preparation, pruning, serialization, the ledger;
//! 4. `recall`: searching the entries a compaction took out of the context.
//!
//! `compactd-hermes` (`crates/hermes/src`): one layer; its files import each other one way.
//!
//! `compactd`, the service (`src`), above both cores (which it names by their crates,
//! `compactd_core::…` and `compactd_hermes::…`, never through its own re-exports):
//! 0. `cancel`: the cores' checkpoints, and work offloaded to tokio's blocking pool;
//! 1. `config`: the service's configuration and where each setting comes from;
//! 2. `telemetry`: logs and metrics;
//! 3. `state`: jobs, idempotency keys and the shared cache, in process or in Redis;
//! 4. `summarize`: the prompts and the summarizers (extractive, model engine);
//! 5. `pipeline`: one request from input to answer, shared by the server and the CLI;
//! 6. `http`: the axum handlers, their errors and the OpenAPI document;
//! 7. `startup`: the wiring of the application (`Application::build`);
//! 8. `cli`: the command line, whose `serve` runs what `startup` builds.
//!
//! A module may use its own layer and the layers below it, never one above it; a crate's
//! root (`lib.rs`, `main.rs`) sits above everything in it. Inside a module, the files of
//! one folder use each other one way: no two of them, and no ring of them, import each
//! other.
//!
//! The check is a text scan of each crate's `src/`, kept simple on purpose: comments and
//! string and character literals are blanked first, then every `crate::…` and `super::…`
//! path is read, with grouped imports (`crate::a::{b, c::{d, e}}`) expanded and `super::`
//! taken relative to the inline module (`mod tests { … }`) it is written in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate of the workspace: where its sources are and its layers, bottom to top (see
/// the module documentation).
struct Crate {
    src: &'static str,
    layers: &'static [&'static str],
}

const CORE: Crate = Crate {
    src: "crates/core/src",
    layers: &["cancel", "json", "session", "compaction", "recall"],
};

const HERMES: Crate = Crate {
    src: "crates/hermes/src",
    layers: &[],
};

const SERVICE: Crate = Crate {
    src: "src",
    layers: &[
        "cancel",
        "config",
        "telemetry",
        "state",
        "summarize",
        "pipeline",
        "http",
        "startup",
        "cli",
    ],
};

const CRATES: [Crate; 3] = [CORE, HERMES, SERVICE];

impl Crate {
    /// A module's layer.
    fn rank(&self, module: &str) -> Option<usize> {
        self.layers.iter().position(|m| *m == module)
    }
}

type ModPath = Vec<String>;

/// One source file: its module path and its code without comments or literals.
struct Source {
    file: PathBuf,
    module: ModPath,
    code: String,
}

fn sources(krate: &Crate) -> Vec<Source> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(krate.src);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| Source {
            module: module_path(&root, &file),
            code: code_of(&std::fs::read_to_string(&file).unwrap()),
            file,
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src/`: `src/http/compact.rs` → `["http", "compact"]`,
/// `src/config/mod.rs` → `["config"]`, `src/lib.rs` → `[]`.
fn module_path(root: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(root).unwrap();
    let mut parts: ModPath = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with comments (line, block, doc) and the contents of string and character
/// literals blanked, so prose or a message that mentions a module is not an import.
fn code_of(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, ch)| c.get(i + k) == Some(&ch))
    };
    while i < c.len() {
        if at(i, "//") {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            let mut depth = 0;
            while i < c.len() {
                if at(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if at(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if is_ident(c[i]) {
            let start = i;
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if (word == "r" || word == "br") && c.get(i + hashes) == Some(&'"') {
                // A raw string: ends at `"` followed by as many `#`.
                let close: String = std::iter::once('"')
                    .chain("#".repeat(hashes).chars())
                    .collect();
                i += hashes + 1;
                while i < c.len() && !at(i, &close) {
                    i += 1;
                }
                i += close.chars().count();
                out.push_str("\"\"");
            } else {
                out.push_str(&word);
            }
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal (a lifetime has no closing quote).
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Index of the `}` closing the group that starts just before `s`.
fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The paths `s` names after `prefix`: `a::b` → `[prefix.., a, b]`, and a group
/// `a::{b, c::{d, self}}` → each of `a::b`, `a::c::d`, `a::c`.
fn expand(prefix: ModPath, s: &str, out: &mut Vec<ModPath>) {
    let mut path = prefix;
    let mut rest = s.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for item in split_top_level(&group[..matching_brace(group)]) {
                expand(path.clone(), item, out);
            }
            return;
        }
        let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        if name.is_empty() {
            break;
        }
        if name != "self" {
            path.push(name.clone());
        }
        rest = &rest[name.len()..];
        match rest.trim_start().strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    out.push(path);
}

/// Spans of the inline modules (`mod name { … }`) of `code`, with their names.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("mod ") {
        let start = from + i;
        from = start + 4;
        if code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = code[from..].trim_start();
        let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len() + 1;
        out.push((open, open + matching_brace(&code[open..]), name));
    }
    out
}

/// Every module path `src` names through `crate::` or `super::`, made absolute.
fn named_paths(src: &Source) -> Vec<ModPath> {
    let code = &src.code;
    let inline = inline_modules(code);
    let mut out = Vec::new();
    for (start, _) in code.match_indices("crate::") {
        if code[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        expand(Vec::new(), &code[start + 7..], &mut out);
    }
    for (start, _) in code.match_indices("super::") {
        let before = code[..start].trim_end();
        if before.ends_with("::") || code[..start].chars().next_back().is_some_and(is_ident) {
            continue; // part of a longer `super::super::` or `crate::…` path
        }
        // The module this text is written in: the file's, plus the inline modules around.
        let mut module = src.module.clone();
        module.extend(
            inline
                .iter()
                .filter(|(open, close, _)| *open <= start && start < *close)
                .map(|(_, _, name)| name.clone()),
        );
        let mut rest = &code[start..];
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r.trim_start();
            module.pop();
        }
        expand(module, rest, &mut out);
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let mut violations = Vec::new();
    for (krate, src) in CRATES
        .iter()
        .filter(|k| !k.layers.is_empty())
        .flat_map(|k| sources(k).into_iter().map(move |s| (k, s)))
    {
        let Some(top) = src.module.first() else {
            continue; // the crate root
        };
        let Some(own) = krate.rank(top) else {
            violations.push(format!(
                "{}: module `{top}` has no layer",
                src.file.display()
            ));
            continue;
        };
        for path in named_paths(&src) {
            let Some(target) = path.first() else { continue };
            if target != top && krate.rank(target).is_none_or(|r| r >= own) {
                violations.push(format!(
                    "{}: `{top}` imports `crate::{}`",
                    src.file.display(),
                    path.join("::")
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "upward or unknown imports:\n{}",
        violations.join("\n")
    );
}

#[test]
fn files_of_one_folder_do_not_import_each_other_in_a_cycle() {
    for krate in &CRATES {
        assert_no_cycles(&sources(krate));
    }
}

fn assert_no_cycles(sources: &[Source]) {
    let modules: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    // File module → the sibling file modules it names (children of the same parent).
    // The parent (`mod.rs`) is where siblings meet, so only sibling files count.
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for src in sources {
        let Some((_, parent)) = src.module.split_last() else {
            continue;
        };
        for path in named_paths(src) {
            if path.len() > parent.len() && path.starts_with(parent) {
                let sibling = path[..=parent.len()].to_vec();
                if sibling != src.module && modules.contains(&sibling) {
                    edges.entry(src.module.clone()).or_default().insert(sibling);
                }
            }
        }
    }
    let reach = |from: &ModPath| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    // Files that reach each other form a cycle; report each cycle once, with its imports.
    let reached: BTreeMap<&ModPath, BTreeSet<ModPath>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut cycles = BTreeSet::new();
    for (m, from_m) in &reached {
        let members: BTreeSet<&ModPath> = from_m
            .iter()
            .filter(|o| reached.get(o).is_some_and(|r| r.contains(*m)))
            .collect();
        let imports: Vec<String> = members
            .iter()
            .flat_map(|a| {
                edges[*a]
                    .iter()
                    .filter(|b| members.contains(b))
                    .map(move |b| format!("  {} -> {}", a.join("::"), b.join("::")))
            })
            .collect();
        if !imports.is_empty() {
            cycles.insert(imports.join("\n"));
        }
    }
    assert!(
        cycles.is_empty(),
        "files of one folder importing each other:\n{}",
        cycles.into_iter().collect::<Vec<_>>().join("\n\n")
    );
}

/// The scanner itself: what counts as a path and what does not.
#[test]
fn the_scan_reads_paths_not_prose() {
    let code = code_of(
        "use crate::a::{b, c::{d, self}}; // crate::comment\n\
         /* crate::block /* nested */ crate::still */ let s = \"crate::string\";\n\
         let r = r#\"crate::raw\"#; let q = '\"'; fn f<'a>(x: &'a str) {}\n\
         mod tests { use super::x; use super::super::y; }\n",
    );
    let src = Source {
        file: PathBuf::from("src/m/f.rs"),
        module: vec!["m".into(), "f".into()],
        code,
    };
    let mut named: Vec<String> = named_paths(&src).iter().map(|p| p.join("::")).collect();
    named.sort();
    assert_eq!(named, ["a::b", "a::c", "a::c::d", "m::f::x", "m::y"]);
}
