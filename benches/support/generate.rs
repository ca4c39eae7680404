//! Deterministic generator of a large, realistic pi v3 session file for the benchmarks.
//!
//! The session looks like what pi writes after a long day of agent work: a v3 header,
//! then many turns of user message → assistant steps (thinking + text + `read`/`write`/
//! `edit`/`bash` tool calls, usage, stopReason) → tool results (text of 100 B–20 KB with
//! newlines, quotes, backslashes, tabs, non-ASCII and astral emoji), interleaved with
//! `thinking_level_change` / `model_change` entries and the odd user `bashExecution`.
//! It contains two `compaction` entries (firstKeptEntryId on the path, details with
//! readFiles/modifiedFiles) so a prepare has a previous summary, and one abandoned branch
//! followed by a `branch_summary`, so the path from the last entry is not the whole file.
//!
//! Seeded `fastrand`, no other dependencies beyond serde_json: the same generator version
//! (and fastrand version, pinned by the lockfile) always produces the same bytes.

#![allow(dead_code)]

use std::collections::HashSet;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use fastrand::Rng;
use serde_json::{json, Map, Value};

/// Bump when the output changes, so stale cached files are regenerated.
pub const GENERATOR_VERSION: u32 = 3;
pub const SEED: u64 = 0x00c0_ffee_5e55_10f5;
/// "About 50 MB": 51.2 MB (48.8 MiB) is within 5 % of both 50 MB and 50 MiB.
pub const TARGET_BYTES: usize = 51_200_000;

/// Where the generated session is cached: `$CARGO_TARGET_DIR/bench-data`, or the crate's
/// `target/bench-data`.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d.join("bench-data")
            } else {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(d)
                    .join("bench-data")
            }
        }
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"),
    }
}

/// Returns the path of `generated-50mb.jsonl`, generating it first when it is missing or
/// was written by another generator version / seed / size.
pub fn ensure_generated_50mb() -> io::Result<PathBuf> {
    ensure(&data_dir().join("generated-50mb.jsonl"), SEED, TARGET_BYTES)
}

pub fn ensure(path: &Path, seed: u64, target_bytes: usize) -> io::Result<PathBuf> {
    let stamp = format!("generator={GENERATOR_VERSION} seed={seed:#x} target={target_bytes}\n");
    let stamp_path = path.with_extension("jsonl.stamp");
    let fresh = path.exists()
        && fs::read_to_string(&stamp_path)
            .map(|s| s == stamp)
            .unwrap_or(false);
    if fresh {
        return Ok(path.to_path_buf());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    // Write to a temporary file and rename, so an interrupted run leaves no partial file.
    let tmp = path.with_extension(format!("jsonl.tmp{}", std::process::id()));
    {
        let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp)?);
        generate(&mut w, seed, target_bytes)?;
        w.flush()?;
    }
    fs::rename(&tmp, path)?;
    fs::write(&stamp_path, stamp)?;
    Ok(path.to_path_buf())
}

// -------------------------------------------------------------------------------------------
// Random draws
// -------------------------------------------------------------------------------------------

/// The draws the generator makes, over a seeded `fastrand::Rng` (fastrand's output is
/// fixed for a given seed and version, which the cache stamp relies on).
trait Draw {
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
const WORDS: &[&str] = &[
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
const DIRS: &[&str] = &[
    "src", "src/session", "src/compaction", "src/http", "src/pipeline", "packages/agent/src",
    "packages/tui/src/components", "packages/ai/src/providers", "tests", "tests/api", "docs",
    "scripts",
];
#[rustfmt::skip]
const STEMS: &[&str] = &[
    "main", "lib", "entry", "tree", "migrate", "serialize", "cut_point", "tokens", "handler",
    "router", "config", "session-manager", "agent-session", "compaction", "messages", "utils",
    "theme", "editor", "footer", "rpc-mode", "print-mode", "interactive-mode", "model-registry",
];
#[rustfmt::skip]
const EXTS: &[&str] = &["rs", "ts", "ts", "tsx", "md", "json", "toml", "mjs"];

#[rustfmt::skip]
const IDENTS: &[&str] = &[
    "entries", "pathEntries", "firstKeptEntryId", "tokensBefore", "keepRecentTokens",
    "reserveTokens", "cutPoint", "summary", "fileOps", "readFiles", "modifiedFiles", "byId",
    "leafId", "parentId", "messages", "content", "usage", "totalTokens", "settings", "result",
    "buffer", "line", "idx", "count", "state", "handler", "request", "options", "builder",
];

#[rustfmt::skip]
const COMMANDS: &[&str] = &[
    "cargo test --all-features 2>&1 | tail -50", "cargo build --release", "npm run check",
    "npm test -- --run packages/coding-agent", "git status --short", "git diff --stat HEAD~1",
    "git log --oneline -20", "rg -n \"firstKeptEntryId\" src/ packages/",
    "ls -la src/compaction", "grep -rn 'TODO\\|FIXME' src | head -40", "wc -l src/**/*.rs",
    "cat package.json | jq '.dependencies'", "find . -name '*.jsonl' -size +1M",
    "python3 -c \"import json; print(json.dumps({'a': 1}))\"",
    "cd packages/tui && npx tsc --noEmit",
];

fn path_for(rng: &mut Rng) -> String {
    format!(
        "/home/dev/projects/orbit/{}/{}.{}",
        rng.pick(DIRS),
        rng.pick(STEMS),
        rng.pick(EXTS)
    )
}

/// Prose: words, sentences, the odd non-ASCII word, about `len` bytes.
fn prose(rng: &mut Rng, len: usize) -> String {
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
fn code_line(rng: &mut Rng, indent: usize, out: &mut String) {
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
fn code(rng: &mut Rng, len: usize) -> String {
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
fn read_output(rng: &mut Rng, len: usize) -> String {
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
fn bash_output(rng: &mut Rng, len: usize) -> String {
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
fn diff(rng: &mut Rng, len: usize) -> String {
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

fn base64ish(rng: &mut Rng, len: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len).map(|_| A[rng.range(0, 63)] as char).collect()
}

fn toolu_id(rng: &mut Rng) -> String {
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
fn civil_from_days(z: i64) -> (i64, u32, u32) {
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
// -------------------------------------------------------------------------------------------

const MODELS: &[(&str, &str, &str)] = &[
    ("anthropic", "claude-opus-4-5", "anthropic-messages"),
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
];
const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high"];

struct Writer<'w, W: Write> {
    out: &'w mut W,
    rng: Rng,
    bytes: usize,
    lines: usize,
    ids: HashSet<String>,
    parent: Option<String>,
    now_ms: i64,
    model: usize,
    /// Context size the "model" reports, grows with the conversation, drops on compaction.
    context_tokens: u64,
    read_files: Vec<String>,
    modified_files: Vec<String>,
    /// Ids of recent user messages on the current path (compaction keep points).
    recent_users: Vec<String>,
}

impl<W: Write> Writer<'_, W> {
    fn new_id(&mut self) -> String {
        loop {
            let id = format!("{:08x}", self.rng.u32(..));
            if self.ids.insert(id.clone()) {
                return id;
            }
        }
    }

    fn tick(&mut self, lo_ms: i64, hi_ms: i64) {
        self.now_ms += self.rng.i64(lo_ms..=hi_ms);
    }

    fn write_line(&mut self, v: &Value) -> io::Result<()> {
        let mut buf = serde_json::to_vec(v).expect("serializable");
        buf.push(b'\n');
        self.out.write_all(&buf)?;
        self.bytes += buf.len();
        self.lines += 1;
        Ok(())
    }

    /// Appends an entry under the current parent; `fields` follow the common ones.
    fn entry(&mut self, ty: &str, fields: Value) -> io::Result<String> {
        let id = self.new_id();
        let mut obj = Map::new();
        obj.insert("type".into(), ty.into());
        obj.insert("id".into(), id.clone().into());
        obj.insert(
            "parentId".into(),
            self.parent.clone().map_or(Value::Null, Value::String),
        );
        obj.insert("timestamp".into(), iso(self.now_ms).into());
        if let Value::Object(f) = fields {
            obj.extend(f);
        }
        self.write_line(&Value::Object(obj))?;
        self.parent = Some(id.clone());
        Ok(id)
    }

    fn message(&mut self, message: Value) -> io::Result<String> {
        self.entry("message", json!({ "message": message }))
    }

    fn header(&mut self) -> io::Result<()> {
        let v = json!({
            "type": "session",
            "version": 3,
            "id": "5f0c9a1e-7d3b-4c2a-9e61-b0a4d2c8f317",
            "timestamp": iso(self.now_ms),
            "cwd": "/home/dev/projects/orbit",
        });
        self.write_line(&v)
    }

    fn user_turn_text(&mut self) -> Value {
        let len = self.rng.log_range(20, 3000);
        let mut text = prose(&mut self.rng, len);
        if self.rng.chance(0.3) {
            text.push_str(&format!("\n\nSee @{}", path_for(&mut self.rng)));
        }
        if self.rng.chance(0.5) {
            Value::String(text)
        } else {
            json!([{ "type": "text", "text": text }])
        }
    }

    fn tool_call(&mut self) -> (Value, &'static str) {
        let rng = &mut self.rng;
        let (name, arguments): (&'static str, Value) = match rng.range(0, 9) {
            0..=2 => {
                let path = path_for(rng);
                self.read_files.push(path.clone());
                let mut a = Map::new();
                a.insert("path".into(), path.into());
                if rng.chance(0.6) {
                    a.insert("offset".into(), rng.range(1, 1500).into());
                    a.insert("limit".into(), rng.range(50, 400).into());
                }
                ("read", Value::Object(a))
            }
            3 => {
                let path = path_for(rng);
                self.modified_files.push(path.clone());
                let len = rng.log_range(200, 8000);
                ("write", json!({ "path": path, "content": code(rng, len) }))
            }
            4..=5 => {
                let path = path_for(rng);
                self.modified_files.push(path.clone());
                let (lo, ln) = (rng.log_range(20, 1500), rng.log_range(20, 1500));
                (
                    "edit",
                    json!({ "path": path, "oldText": code(rng, lo), "newText": code(rng, ln) }),
                )
            }
            _ => {
                let cmd = *rng.pick(COMMANDS);
                if rng.chance(0.2) {
                    (
                        "bash",
                        json!({ "command": cmd, "timeout": rng.range(10, 600) }),
                    )
                } else {
                    ("bash", json!({ "command": cmd }))
                }
            }
        };
        let id = toolu_id(&mut self.rng);
        (
            json!({ "type": "toolCall", "id": id, "name": name, "arguments": arguments }),
            name,
        )
    }

    fn tool_result(&mut self, call: &Value, name: &str) -> Value {
        let rng = &mut self.rng;
        let path = call["arguments"]["path"].as_str().unwrap_or("").to_string();
        let is_error = rng.chance(0.04);
        let mut details = None;
        let text = if is_error {
            format!(
                "Error: {} \"{}\"\n{}",
                rng.pick(&[
                    "ENOENT: no such file or directory, open",
                    "Command exited with code 1:",
                    "Could not find the exact text in"
                ]),
                path,
                {
                    let n = rng.log_range(50, 600);
                    prose(rng, n)
                }
            )
        } else {
            match name {
                "read" => {
                    let len = rng.log_range(100, 20_000);
                    read_output(rng, len)
                }
                "write" => {
                    let n = call["arguments"]["content"].as_str().map_or(0, str::len);
                    format!("Successfully wrote {n} bytes to {path}")
                }
                "edit" => {
                    let len = rng.log_range(150, 3000);
                    details = Some(json!({ "diff": diff(rng, len) }));
                    format!(
                        "Successfully replaced text in {path}. Changed {} characters to {} characters.",
                        rng.range(10, 5000),
                        rng.range(10, 5000)
                    )
                }
                _ => {
                    let len = rng.log_range(100, 20_000);
                    bash_output(rng, len)
                }
            }
        };
        let mut m = Map::new();
        m.insert("role".into(), "toolResult".into());
        m.insert("toolCallId".into(), call["id"].clone());
        m.insert("toolName".into(), name.into());
        m.insert("content".into(), json!([{ "type": "text", "text": text }]));
        if let Some(d) = details {
            m.insert("details".into(), d);
        }
        m.insert("isError".into(), is_error.into());
        m.insert("timestamp".into(), self.now_ms.into());
        Value::Object(m)
    }

    fn assistant(&mut self, content: Vec<Value>, stop: &str) -> Value {
        let (provider, model, api) = MODELS[self.model];
        let output = self.rng.range(20, 2500) as u64;
        // What the model saw: the growing conversation, as pi would have kept it under a
        // 200k window by compacting (this file keeps everything, so cap the report).
        let context = self
            .context_tokens
            .min(196_000 + self.rng.range(0, 2000) as u64);
        let cache_read = context.saturating_sub(self.rng.range(0, 3000) as u64);
        let input = context - cache_read + self.rng.range(1, 50) as u64;
        let cache_write = self.rng.range(0, 4000) as u64;
        let total = input + output + cache_read + cache_write;
        self.context_tokens += output + self.rng.range(50, 3000) as u64;
        let cost = |t: u64, per_m: f64| (t as f64) * per_m / 1e6;
        let usage = json!({
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": total,
            "cost": {
                "input": cost(input, 5.0),
                "output": cost(output, 25.0),
                "cacheRead": cost(cache_read, 0.5),
                "cacheWrite": cost(cache_write, 6.25),
                "total": cost(input, 5.0) + cost(output, 25.0) + cost(cache_read, 0.5) + cost(cache_write, 6.25),
            },
        });
        json!({
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": usage,
            "stopReason": stop,
            "timestamp": self.now_ms,
        })
    }

    /// One user turn: user message, agent steps with tool calls and results, final answer.
    fn turn(&mut self) -> io::Result<()> {
        self.tick(20_000, 900_000);
        if self.rng.chance(0.03) {
            let level = *self.rng.pick(THINKING_LEVELS);
            self.entry("thinking_level_change", json!({ "thinkingLevel": level }))?;
        }
        if self.rng.chance(0.01) {
            self.model = (self.model + 1) % MODELS.len();
            let (provider, model, _) = MODELS[self.model];
            self.entry(
                "model_change",
                json!({ "provider": provider, "modelId": model }),
            )?;
        }
        if self.rng.chance(0.015) {
            // The user ran a command with `!`: a bashExecution message.
            let cmd = *self.rng.pick(COMMANDS);
            let len = self.rng.log_range(30, 4000);
            let output = bash_output(&mut self.rng, len);
            let ts = self.now_ms;
            let exit_code = self.rng.range(0, 1);
            self.message(json!({
                "role": "bashExecution", "command": cmd, "output": output,
                "exitCode": exit_code, "cancelled": false, "truncated": false,
                "timestamp": ts,
            }))?;
            self.tick(1000, 60_000);
        }
        let content = self.user_turn_text();
        let ts = self.now_ms;
        let user_id =
            self.message(json!({ "role": "user", "content": content, "timestamp": ts }))?;
        self.recent_users.push(user_id);
        if self.recent_users.len() > 8 {
            self.recent_users.remove(0);
        }
        self.context_tokens += self.rng.range(10, 800) as u64;

        let steps = self.rng.range(1, 8);
        for _ in 0..steps {
            self.tick(2_000, 40_000);
            let mut content = Vec::new();
            if self.rng.chance(0.6) {
                let len = self.rng.log_range(80, 2500);
                let thinking = prose(&mut self.rng, len);
                let sig_len = self.rng.range(200, 900);
                let sig = base64ish(&mut self.rng, sig_len);
                content.push(
                    json!({ "type": "thinking", "thinking": thinking, "thinkingSignature": sig }),
                );
            }
            if self.rng.chance(0.45) {
                let len = self.rng.log_range(30, 900);
                content.push(json!({ "type": "text", "text": prose(&mut self.rng, len) }));
            }
            let calls: Vec<(Value, &str)> = (0..self.rng.range(1, 3))
                .map(|_| self.tool_call())
                .collect();
            content.extend(calls.iter().map(|(c, _)| c.clone()));
            let msg = self.assistant(content, "toolUse");
            self.message(msg)?;
            for (call, name) in &calls {
                self.tick(50, 30_000);
                let result = self.tool_result(call, name);
                self.context_tokens += (result.to_string().len() / 4) as u64;
                self.message(result)?;
            }
        }
        self.tick(2_000, 40_000);
        let len = self.rng.log_range(40, 4000);
        let mut content = Vec::new();
        if self.rng.chance(0.3) {
            let len = self.rng.log_range(80, 1500);
            content.push(json!({ "type": "thinking", "thinking": prose(&mut self.rng, len), "thinkingSignature": base64ish(&mut self.rng, 400) }));
        }
        content.push(json!({ "type": "text", "text": prose(&mut self.rng, len) }));
        let stop = if self.rng.chance(0.02) {
            "aborted"
        } else {
            "stop"
        };
        let msg = self.assistant(content, stop);
        self.message(msg)?;
        Ok(())
    }

    fn file_lists(&mut self) -> (Vec<String>, Vec<String>) {
        let mut modified: Vec<String> = self.modified_files.clone();
        modified.sort();
        modified.dedup();
        let mut read: Vec<String> = self
            .read_files
            .iter()
            .filter(|p| modified.binary_search(p).is_err())
            .cloned()
            .collect();
        read.sort();
        read.dedup();
        (read, modified)
    }

    fn summary_text(&mut self, title: &str) -> String {
        let (read, modified) = self.file_lists();
        let mut s = format!(
            "## Goal\n{title}: {}\n\n## Progress\n",
            prose(&mut self.rng, 300)
        );
        for i in 0..self.rng.range(5, 15) {
            s.push_str(&format!(
                "- [{}] {}\n",
                if i % 3 == 0 { " " } else { "x" },
                prose(&mut self.rng, 120)
            ));
        }
        s.push_str(&format!(
            "\n## Key Decisions\n{}\n\n## Next Steps\n1. {}\n2. {}",
            prose(&mut self.rng, 800),
            prose(&mut self.rng, 100),
            prose(&mut self.rng, 100)
        ));
        s.push_str(&format!(
            "\n\n<read-files>\n{}\n</read-files>\n\n<modified-files>\n{}\n</modified-files>",
            read.join("\n"),
            modified.join("\n")
        ));
        s
    }

    /// A compaction appended at the leaf, keeping the last `keep_turns` user turns.
    fn compaction(&mut self, keep_turns: usize) -> io::Result<()> {
        let keep = self.recent_users[self.recent_users.len().saturating_sub(keep_turns)].clone();
        let summary = self.summary_text("Compacted session");
        let (read, modified) = self.file_lists();
        self.tick(5_000, 60_000);
        let tokens_before = self.context_tokens.min(199_000);
        self.entry(
            "compaction",
            json!({
                "summary": summary,
                "firstKeptEntryId": keep,
                "tokensBefore": tokens_before,
                "details": { "readFiles": read, "modifiedFiles": modified },
            }),
        )?;
        self.context_tokens = 25_000 + self.rng.range(0, 15_000) as u64;
        self.read_files.clear();
        self.modified_files.clear();
        Ok(())
    }
}

/// Writes a session of at least `target_bytes` (it stops after the turn that crosses it).
pub fn generate<W: Write>(out: &mut W, seed: u64, target_bytes: usize) -> io::Result<()> {
    let mut w = Writer {
        out,
        rng: Rng::with_seed(seed),
        bytes: 0,
        lines: 0,
        ids: HashSet::new(),
        parent: None,
        // 2025-11-03T08:14:05.123Z
        now_ms: 1_762_157_645_123,
        model: 0,
        context_tokens: 3_000,
        read_files: Vec::new(),
        modified_files: Vec::new(),
        recent_users: Vec::new(),
    };
    w.header()?;
    let (c1, branch, c2) = (
        target_bytes * 35 / 100,
        target_bytes * 50 / 100,
        target_bytes * 70 / 100,
    );
    let (mut did_c1, mut did_branch, mut did_c2) = (false, false, false);
    while w.bytes < target_bytes {
        w.turn()?;
        if !did_c1 && w.bytes >= c1 {
            did_c1 = true;
            w.compaction(3)?;
        } else if !did_branch && w.bytes >= branch {
            did_branch = true;
            // Four turns the user later abandons (/tree back to here), then a branch summary.
            let branch_point = w.parent.clone();
            let users = w.recent_users.clone();
            let (reads, mods) = (w.read_files.clone(), w.modified_files.clone());
            for _ in 0..4 {
                w.turn()?;
            }
            let abandoned_leaf = w.parent.clone();
            let (br, bm) = w.file_lists();
            let summary = w.summary_text("Abandoned approach");
            w.parent = branch_point;
            w.recent_users = users;
            w.read_files = reads;
            w.modified_files = mods;
            w.tick(10_000, 60_000);
            w.entry(
                "branch_summary",
                json!({
                    "fromId": abandoned_leaf,
                    "summary": summary,
                    "details": { "readFiles": br, "modifiedFiles": bm },
                }),
            )?;
        } else if !did_c2 && w.bytes >= c2 {
            did_c2 = true;
            w.compaction(4)?;
        }
    }
    Ok(())
}
