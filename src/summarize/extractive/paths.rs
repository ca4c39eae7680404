//! Paths: which tokens of any text name files, kept in order of first mention.

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

/// Every path-looking token in `text`, in order (a token followed by `(` is a call).
pub(super) fn scan_paths(text: &str, out: &mut Ordered) {
    let b = text.as_bytes();
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
        if b.get(i) != Some(&b'(') {
            if let Some(p) = path_token(&text[start..i]) {
                out.insert(p);
            }
        }
    }
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
        assert_eq!(o.items, ["src/a.rs", "./b/c.ts", "README.md", "Cargo.toml"]);
    }
}
