//! The generator's random draws and the text it is made of: prose, code, command output,
//! diffs, ids and timestamps.

use fastrand::Rng;

// -------------------------------------------------------------------------------------------
// Random draws
// -------------------------------------------------------------------------------------------

/// The draws the generator makes, over a seeded `fastrand::Rng` (fastrand's output is
/// fixed for a given seed and version, which the cache stamp relies on).
pub(super) trait Draw {
    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: usize, hi: usize) -> usize;
    fn chance(&mut self, p: f64) -> bool;
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T;
    /// Log-uniform in `[lo, hi]`: many small values, a long tail of large ones.
    fn log_range(&mut self, lo: usize, hi: usize) -> usize;
}

impl Draw for Rng {
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        self.usize(lo..=hi)
    }
    fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.usize(..items.len())]
    }
    fn log_range(&mut self, lo: usize, hi: usize) -> usize {
        let (l, h) = ((lo as f64).ln(), (hi as f64).ln());
        ((l + (h - l) * self.f64()).exp() as usize).clamp(lo, hi)
    }
}

// -------------------------------------------------------------------------------------------
// Text material
// -------------------------------------------------------------------------------------------

#[rustfmt::skip]
pub(super) const WORDS: &[&str] = &[
    "the", "session", "compaction", "summary", "entry", "parent", "token", "budget", "cut",
    "point", "message", "assistant", "tool", "result", "file", "path", "read", "write", "edit",
    "bash", "output", "error", "refactor", "module", "function", "test", "build", "cache",
    "index", "config", "server", "request", "response", "handler", "stream", "buffer", "parse",
    "serialize", "migrate", "branch", "leaf", "context", "window", "model", "provider", "usage",
    "we", "should", "now", "then", "because", "so", "it", "is", "not", "a", "to", "and", "of",
    "in", "for", "with", "this", "that", "check", "fix", "update", "remove", "add", "keep",
    "naïve", "café", "façade", "über", "señor", "déjà-vu", "→", "—", "…", "✓", "✅", "🚀", "😀",
    "日本語", "テスト", "Привет", "λ", "π≈3.14", "“quoted”", "'single'", "\"double\"",
];

#[rustfmt::skip]
pub(super) const DIRS: &[&str] = &[
    "src", "src/session", "src/compaction", "src/http", "src/pipeline", "packages/agent/src",
    "packages/tui/src/components", "packages/ai/src/providers", "tests", "tests/api", "docs",
    "scripts",
];
#[rustfmt::skip]
pub(super) const STEMS: &[&str] = &[
    "main", "lib", "entry", "tree", "migrate", "serialize", "cut_point", "tokens", "handler",
    "router", "config", "session-manager", "agent-session", "compaction", "messages", "utils",
    "theme", "editor", "footer", "rpc-mode", "print-mode", "interactive-mode", "model-registry",
];
#[rustfmt::skip]
pub(super) const EXTS: &[&str] = &["rs", "ts", "ts", "tsx", "md", "json", "toml", "mjs"];

#[rustfmt::skip]
pub(super) const IDENTS: &[&str] = &[
    "entries", "pathEntries", "firstKeptEntryId", "tokensBefore", "keepRecentTokens",
    "reserveTokens", "cutPoint", "summary", "fileOps", "readFiles", "modifiedFiles", "byId",
    "leafId", "parentId", "messages", "content", "usage", "totalTokens", "settings", "result",
    "buffer", "line", "idx", "count", "state", "handler", "request", "options", "builder",
];

#[rustfmt::skip]
pub(super) const COMMANDS: &[&str] = &[
    "cargo test --all-features 2>&1 | tail -50", "cargo build --release", "npm run check",
    "npm test -- --run packages/coding-agent", "git status --short", "git diff --stat HEAD~1",
    "git log --oneline -20", "rg -n \"firstKeptEntryId\" src/ packages/",
    "ls -la src/compaction", "grep -rn 'TODO\\|FIXME' src | head -40", "wc -l src/**/*.rs",
    "cat package.json | jq '.dependencies'", "find . -name '*.jsonl' -size +1M",
    "python3 -c \"import json; print(json.dumps({'a': 1}))\"",
    "cd packages/tui && npx tsc --noEmit",
];

pub(super) fn path_for(rng: &mut Rng) -> String {
    format!(
        "/home/dev/projects/orbit/{}/{}.{}",
        rng.pick(DIRS),
        rng.pick(STEMS),
        rng.pick(EXTS)
    )
}

/// Prose: words, sentences, the odd non-ASCII word, about `len` bytes.
pub(super) fn prose(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 32);
    let mut sentence_start = true;
    while s.len() < len {
        let w = *rng.pick(WORDS);
        if sentence_start {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                s.extend(f.to_uppercase());
                s.push_str(c.as_str());
            }
            sentence_start = false;
        } else {
            s.push_str(w);
        }
        match rng.range(0, 19) {
            0 | 1 => {
                s.push_str(". ");
                sentence_start = true;
            }
            2 => s.push_str(", "),
            3 if s.len() + 2 < len => {
                s.push_str(".\n\n");
                sentence_start = true;
            }
            4 => {
                let ident = *rng.pick::<&str>(IDENTS);
                s.push_str(" `");
                s.push_str(ident);
                s.push_str("` ");
            }
            _ => s.push(' '),
        }
    }
    s.truncate(s.trim_end().len());
    s
}

/// One line of plausible source code (TypeScript or Rust flavoured).
pub(super) fn code_line(rng: &mut Rng, indent: usize, out: &mut String) {
    for _ in 0..indent {
        out.push('\t');
    }
    let a = *rng.pick(IDENTS);
    let b = *rng.pick(IDENTS);
    match rng.range(0, 13) {
        0 => out.push_str(&format!(
            "const {a} = {b}.filter((e) => e.type === \"message\");"
        )),
        1 => out.push_str(&format!(
            "let {a} = {b}.get(\"{}\")?.clone();",
            rng.pick(IDENTS)
        )),
        2 => out.push_str(&format!("if ({a}.length > {}) {{", rng.range(0, 20000))),
        3 => out.push('}'),
        4 => {
            let n = rng.range(20, 90);
            out.push_str(&format!("// {}", prose(rng, n)))
        }
        5 => out.push_str(&format!(
            "throw new Error(`invalid {a}: ${{JSON.stringify({b})}} at \"{}\"`);",
            rng.range(0, 999)
        )),
        6 => out.push_str(&format!("return {{ {a}, {b}: {a}.map(String) }};")),
        7 => out.push_str(&format!(
            "fn {a}_{}(&self, {b}: &str) -> Result<Vec<u8>, Error> {{",
            rng.range(0, 99)
        )),
        8 => out.push_str(&format!(
            "let re = Regex::new(r\"^\\s*(\\w+)\\\\{}$\").unwrap();",
            rng.range(0, 9)
        )),
        9 => out.push_str(&format!(
            "log.info(\"{} {a} → {b} ✓\", {{ {a} }});",
            rng.pick(WORDS)
        )),
        10 => out.push_str(&format!(
            "import {{ {a}, {b} }} from \"./{}.js\";",
            rng.pick(STEMS)
        )),
        11 => {}
        12 => out.push_str(&format!(
            "expect({a}).toEqual([\"{}\", '{}', `{}`]);",
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS)
        )),
        _ => out.push_str(&format!("{a}.push({b}[{}]);", rng.range(0, 64))),
    }
    out.push('\n');
}

/// Source text of about `len` bytes.
pub(super) fn code(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 128);
    let mut indent = 0usize;
    while s.len() < len {
        code_line(rng, indent, &mut s);
        if s.ends_with("{\n") {
            indent = (indent + 1).min(5);
        } else if s.ends_with("}\n") {
            indent = indent.saturating_sub(1);
        }
    }
    s
}

/// `read` output: numbered source lines, sometimes with pi's truncation notice.
pub(super) fn read_output(rng: &mut Rng, len: usize) -> String {
    // Line numbers add about a sixth.
    let body = code(rng, len * 5 / 6);
    let start = rng.range(1, 400);
    let mut s = String::with_capacity(body.len() + body.len() / 8 + 64);
    for (i, line) in body.lines().enumerate() {
        s.push_str(&format!("{:>5}\t{line}\n", start + i));
    }
    if rng.chance(0.15) {
        s.push_str(&format!(
            "\n[Showing lines {start}-{} of {}. Use offset={} to continue]",
            start + body.lines().count(),
            start + body.lines().count() + rng.range(10, 2000),
            start + body.lines().count() + 1
        ));
    }
    s
}

/// Terminal output of a command: build logs, test results, listings.
pub(super) fn bash_output(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 128);
    while s.len() < len {
        match rng.range(0, 9) {
            0 => s.push_str(&format!(
                "   Compiling {} v0.{}.{} (/home/dev/projects/orbit/{})\n",
                rng.pick(STEMS),
                rng.range(0, 9),
                rng.range(0, 30),
                rng.pick(DIRS)
            )),
            1 => s.push_str(&format!(
                "test {}::{}_{} ... {}\n",
                rng.pick(STEMS).replace('-', "_"),
                rng.pick(IDENTS),
                rng.pick(WORDS),
                if rng.chance(0.92) { "ok" } else { "FAILED" }
            )),
            2 => s.push_str(&format!(
                "-rw-r--r--  1 dev  staff  {:>7} Nov {:>2} {:02}:{:02} {}.{}\n",
                rng.range(10, 300000),
                rng.range(1, 30),
                rng.range(0, 23),
                rng.range(0, 59),
                rng.pick(STEMS),
                rng.pick(EXTS)
            )),
            3 => s.push_str(&format!(
                "{}:{}:{}: warning: unused variable `{}` — prefix it with an underscore\n",
                path_for(rng),
                rng.range(1, 900),
                rng.range(1, 80),
                rng.pick(IDENTS)
            )),
            4 => s.push_str(&format!(
                " ✓ {} ({} tests) {}ms\n",
                path_for(rng),
                rng.range(1, 60),
                rng.range(1, 4000)
            )),
            5 => s.push_str(&format!(
                " ✗ {} > {} \"{}\"\n   AssertionError: expected '{}' to be '{}' 😬\n",
                rng.pick(STEMS),
                rng.pick(IDENTS),
                prose(rng, 30),
                rng.pick(WORDS),
                rng.pick(WORDS)
            )),
            6 => s.push_str(&format!(
                "{} | {}\n",
                path_for(rng),
                "+".repeat(rng.range(1, 40))
            )),
            7 => {
                let mut line = String::new();
                code_line(rng, 0, &mut line);
                s.push_str(&format!(
                    "{}:{}:{}",
                    path_for(rng),
                    rng.range(1, 2000),
                    line
                ));
            }
            _ => {
                let n = rng.range(20, 160);
                s.push_str(&prose(rng, n));
                s.push('\n');
            }
        }
    }
    s
}

/// A unified-diff-like preview as pi stores it in an edit result's `details.diff`.
pub(super) fn diff(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 128);
    let mut n = rng.range(1, 500);
    while s.len() < len {
        let mark = *rng.pick(&[" ", " ", " ", "-", "+"]);
        let mut line = String::new();
        let indent = rng.range(0, 3);
        code_line(rng, indent, &mut line);
        s.push_str(&format!("{mark}{n:>4} {line}"));
        n += 1;
    }
    s
}

pub(super) fn base64ish(rng: &mut Rng, len: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len).map(|_| A[rng.range(0, 63)] as char).collect()
}

pub(super) fn toolu_id(rng: &mut Rng) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let tail: String = (0..24)
        .map(|_| A[rng.range(0, A.len() - 1)] as char)
        .collect();
    format!("toolu_01{tail}")
}

// -------------------------------------------------------------------------------------------
// Timestamps
// -------------------------------------------------------------------------------------------

/// `(year, month, day)` of a day count since 1970-01-01 (Howard Hinnant's algorithm).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `new Date(ms).toISOString()`.
pub fn iso(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

// -------------------------------------------------------------------------------------------
// The session writer
