//! Paths: which tokens of any text name files, kept in order of first mention,
//! normalized, and which of them are worth listing.
//!
//! Not files: import specifiers (`from "../../utils/config.js"`, `require('./x')`),
//! which name modules relative to a file the reader does not know; any path that climbs
//! (`../x.ts`), for the same reason; the `a/…` `b/…` paths of git-diff headers, which
//! restate a file with a prefix; and a bare `/name.ext` (a template's `${dir}/name.ext`).
//! A leading `./` is dropped, and a path that ends another known path at a `/` (`config.ts`
//! beside `src/utils/config.ts`) is the same file.

use super::text::Ordered;

const KNOWN_EXTENSIONS: &[&str] = &[
    "rs",
    "ts",
    "tsx",
    "js",
    "jsx",
    "mjs",
    "cjs",
    "mts",
    "cts",
    "py",
    "pyi",
    "go",
    "java",
    "kt",
    "kts",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cxx",
    "cs",
    "rb",
    "php",
    "swift",
    "scala",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "md",
    "mdx",
    "txt",
    "rst",
    "toml",
    "json",
    "jsonl",
    "ndjson",
    "yaml",
    "yml",
    "xml",
    "html",
    "htm",
    "css",
    "scss",
    "less",
    "sql",
    "proto",
    "ini",
    "cfg",
    "conf",
    "gradle",
    "vue",
    "svelte",
    "lua",
    "zig",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "dart",
    "jl",
    "tf",
    "nix",
    "csv",
    "tsv",
    "svg",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "pdf",
    "wasm",
    "patch",
    "diff",
    "dockerfile",
    "makefile",
    "gitignore",
    "lockb",
];

pub(super) fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-' | b'~' | b'@' | b'+')
}

/// A token that names a file: `[\w./-]+\.\w+` with a slash or a known extension.
pub(super) fn path_token(tok: &str) -> Option<&str> {
    let t = tok
        .trim_start_matches('@')
        .trim_end_matches(['.', '-', '/', '+', '@']);
    if t.len() < 3 || t.len() > 240 || t.starts_with("//") || t.contains("...") {
        return None;
    }
    if t[1..].contains('~') {
        return None;
    }
    let last = t.rsplit('/').next().unwrap_or(t);
    let dot = last.rfind('.')?;
    let (stem, ext) = (&last[..dot], &last[dot + 1..]);
    if !stem.bytes().any(|c| c.is_ascii_alphanumeric())
        || ext.is_empty()
        || ext.len() > 10
        || !ext.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        || ext.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if !t.contains('/') && !KNOWN_EXTENSIONS.iter().any(|k| k.eq_ignore_ascii_case(ext)) {
        return None;
    }
    Some(t)
}

/// Every path-looking token in `text`, in order (a token followed by `(` is a call),
/// normalized, without import specifiers, climbing paths and diff headers.
pub(super) fn scan_paths(text: &str, out: &mut Ordered) {
    for line in text.lines() {
        if is_diff_header(line) {
            continue;
        }
        scan_line(line, out);
    }
}

fn scan_line(line: &str, out: &mut Ordered) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !is_path_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_path_byte(b[i]) {
            i += 1;
        }
        if b.get(i) == Some(&b'(') || is_import_specifier(&line[..start]) {
            continue;
        }
        if let Some(p) = path_token(&line[start..i]).and_then(normalize) {
            out.insert(p);
        }
    }
}

/// `diff --git a/x b/x`, `--- a/x`, `+++ b/x`: the file with a diff prefix.
pub(super) fn is_diff_header(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("diff --git ") || t.starts_with("--- a/") || t.starts_with("+++ b/")
}

/// Whether the text before a token ends in `from "`, `import '`, `require(` and the like.
pub(super) fn is_import_specifier(before: &str) -> bool {
    let quoted = before.trim_end_matches(['"', '\'', '`']);
    let call = quoted.ends_with("require(") || quoted.ends_with("import(");
    let keyword = quoted.len() < before.len() && {
        let word = quoted.trim_end();
        word.ends_with("from") || word.ends_with("import")
    };
    call || keyword
}

/// The path as listed: `./` dropped; `None` for paths that climb or name only a root file.
pub(super) fn normalize(path: &str) -> Option<&str> {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    if p.starts_with("../") || p.contains("/../") {
        return None;
    }
    if p.starts_with('/') && p[1..].find('/').is_none() {
        return None;
    }
    (p.len() >= 3).then_some(p)
}

/// Whether `path` names a file already in `known`: equal, or the end of a longer path at
/// a `/` (`config.ts`, `src/utils/config.ts` beside `/repo/src/utils/config.ts`).
pub(super) fn is_covered<'a>(path: &str, known: impl IntoIterator<Item = &'a str>) -> bool {
    known.into_iter().any(|k| {
        k == path
            || (k.len() > path.len()
                && k.ends_with(path)
                && k.as_bytes()[k.len() - path.len() - 1] == b'/')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_paths_in_text() {
        let mut o = Ordered::default();
        scan_paths(
            "See src/a.rs, ./b/c.ts and README.md (not res.json() nor v1.2.3 or https://x.com/y.html); e.g. Cargo.toml.",
            &mut o,
        );
        assert_eq!(o.items, ["src/a.rs", "b/c.ts", "README.md", "Cargo.toml"]);
    }

    #[test]
    fn import_specifiers_are_not_files() {
        let mut o = Ordered::default();
        scan_paths(
            "import { load } from \"../../utils/config.js\";\nimport x from './types.js';\nconst y = require(\"./shell.js\");\nawait import('./lazy.js');\nsed -i '' 's|from \"../compaction.js\"|from \"./core/compaction.js\"|g' src/core/agent-session.ts",
            &mut o,
        );
        assert_eq!(o.items, ["src/core/agent-session.ts"]);
    }

    #[test]
    fn paths_that_climb_or_name_a_bare_root_file_are_not_listed() {
        let mut o = Ordered::default();
        scan_paths(
            "see ../../../config.js and /config.ts, not ./src/x.ts",
            &mut o,
        );
        assert_eq!(o.items, ["src/x.ts"]);
    }

    #[test]
    fn diff_prefixed_paths_are_not_files() {
        let mut o = Ordered::default();
        scan_paths(
            "diff --git a/src/app.ts b/src/app.ts\nindex 1..2 100644\n--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1 +1 @@ see src/app.ts",
            &mut o,
        );
        assert_eq!(o.items, ["src/app.ts"]);
    }

    #[test]
    fn a_path_ending_a_known_path_is_the_same_file() {
        let known = ["/repo/src/utils/config.ts"];
        assert!(is_covered("config.ts", known));
        assert!(is_covered("src/utils/config.ts", known));
        assert!(is_covered("/repo/src/utils/config.ts", known));
        assert!(!is_covered("fig.ts", known));
        assert!(!is_covered("src/config.ts", known));
    }
}
