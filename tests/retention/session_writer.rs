//! The session a retention round writes: entries chained by `parentId`, and the filler
//! turns around the planted items (tool calls on a small TypeScript project, their
//! listings, test runs and search hits), drawn from fixed lists so that no filler line
//! can carry a planted value.

use serde_json::{json, Value};

use crate::generate::Gen;

const FILES: [&str; 10] = [
    "src/export/writer.ts",
    "src/export/rows.ts",
    "src/http/routes.ts",
    "src/http/middleware.ts",
    "src/db/pool.ts",
    "src/db/queries.ts",
    "src/util/retry.ts",
    "src/config/load.ts",
    "test/export.test.ts",
    "test/routes.test.ts",
];

const REQUESTS: [&str; 8] = [
    "Can you look at why the tests in {f} fail?",
    "Please refactor {f} so the error handling is in one place.",
    "Add a unit test for the empty case in {f}.",
    "The linter complains about {f}, fix it please.",
    "Read {f} and tell me what it does with nulls.",
    "Rename the helper in {f} to something clearer.",
    "Can you add logging to {f}?",
    "Check {f} for unused imports and remove them.",
];

const CHIT_CHAT: [&str; 6] = [
    "wow, it works",
    "thanks!",
    "nice, that was quick",
    "ok cool",
    "lol, fair enough",
    "are we all committed?",
];

const ACKS: [&str; 4] = [
    "Noted.",
    "Understood, I'll keep that in mind.",
    "Got it.",
    "Okay, I'll follow that from now on.",
];

/// A source listing of about `lines` lines (numbers below 1,000 only).
fn listing(g: &mut Gen, file: &str, lines: usize) -> String {
    const CODE: [&str; 8] = [
        "export function handle(req: Request): Response {",
        "  const rows = await db.query(sql, params);",
        "  if (!rows.length) return empty();",
        "  for (const row of rows) out.push(format(row));",
        "  logger.debug('processed', { count: rows.length });",
        "  } catch (err) { throw new ExportError(err); }",
        "import { retry } from '../util/retry';",
        "}",
    ];
    let mut s = format!("// {file}\n");
    for i in 1..=lines.min(999) {
        s.push_str(&format!("{i:>3}  {}\n", g.pick(&CODE)));
    }
    s
}

fn test_run(g: &mut Gen, file: &str) -> String {
    let pass = g.rng.u32(3..60);
    let fail = g.rng.u32(0..4);
    let mut s = format!("> vitest run {file}\n\n");
    for i in 0..(pass + fail).min(30) {
        let ok = i >= fail;
        s.push_str(&format!(
            " {} {file} > case {i} {}\n",
            if ok { "✓" } else { "×" },
            if ok { "" } else { "expected 3 rows, got 2" }
        ));
    }
    s.push_str(&format!("\nTests  {fail} failed | {pass} passed\n"));
    s
}

fn grep_hits(g: &mut Gen) -> String {
    (0..g.rng.usize(3..12))
        .map(|_| {
            let f = g.pick(&FILES);
            format!(
                "{f}:{}:  const rows = await db.query(sql, params);",
                g.rng.u32(1..400)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Builds the entries of a session, one JSON line each, chained by parentId.
pub struct SessionWriter {
    pub lines: Vec<String>,
    /// (entry id, JSON) of every entry appended, in order.
    pub entries: Vec<(String, Value)>,
    leaf: Option<String>,
    next: u64,
    call: u64,
}

impl SessionWriter {
    pub fn new(seed: u64) -> Self {
        let header = json!({
            "type": "session", "version": 3, "id": format!("retention-{seed}"),
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/app"
        });
        SessionWriter {
            lines: vec![header.to_string()],
            entries: Vec::new(),
            leaf: None,
            next: 0,
            call: 0,
        }
    }

    /// The session as pi stores it: one JSON entry a line.
    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }

    /// Appends an entry the pipeline wrote (the compaction entry) at the leaf.
    pub fn append_entry(&mut self, entry: Value) {
        let id = entry["id"].as_str().expect("entries have ids").to_string();
        self.lines.push(entry.to_string());
        self.entries.push((id.clone(), entry));
        self.leaf = Some(id);
    }

    fn push_message(&mut self, message: Value) {
        self.next += 1;
        let id = format!("r{:07x}", self.next);
        let entry = json!({
            "type": "message", "id": id, "parentId": self.leaf,
            "timestamp": format!("2026-01-01T{:02}:{:02}:{:02}.000Z",
                (self.next / 3600) % 24, (self.next / 60) % 60, self.next % 60),
            "message": message,
        });
        self.append_entry(entry);
    }

    pub fn user(&mut self, text: &str) {
        self.push_message(json!({"role": "user", "content": [{"type": "text", "text": text}]}));
    }

    pub fn assistant_text(&mut self, text: &str) {
        self.push_message(json!({
            "role": "assistant", "content": [{"type": "text", "text": text}],
            "stopReason": "stop"
        }));
    }

    /// One assistant message with tool calls and their results.
    fn tool_round(&mut self, g: &mut Gen, file: &str) {
        let n = g.rng.usize(1..=3);
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for _ in 0..n {
            self.call += 1;
            let id = format!("call_{:05}", self.call);
            let (name, args, out) = match g.rng.u32(..4) {
                0 => {
                    let lines = g.rng.usize(20..120);
                    ("read", json!({"path": file}), listing(g, file, lines))
                }
                1 => (
                    "bash",
                    json!({"command": format!("npx vitest run {file}")}),
                    test_run(g, file),
                ),
                2 => (
                    "grep",
                    json!({"pattern": "db.query", "path": "src"}),
                    grep_hits(g),
                ),
                _ => (
                    "edit",
                    json!({"path": file, "oldText": "return empty();", "newText": "return empty(req);"}),
                    format!("Successfully replaced text in {file}."),
                ),
            };
            calls.push(json!({"type": "toolCall", "id": id, "name": name, "arguments": args}));
            results.push((id, name, out));
        }
        let mut content = vec![json!({"type": "text", "text": format!("Let me look at {file}.")})];
        content.extend(calls);
        self.push_message(
            json!({"role": "assistant", "content": content, "stopReason": "toolUse"}),
        );
        for (id, name, out) in results {
            self.push_message(json!({
                "role": "toolResult", "toolCallId": id, "toolName": name,
                "content": [{"type": "text", "text": out}], "isError": false
            }));
        }
    }

    /// One turn: a user message (`planted` sentences first, then a request, or chit-chat),
    /// tool work, and a closing assistant line.
    pub fn turn(&mut self, g: &mut Gen, planted: &[String], assistant_planted: &[String]) {
        let file = g.pick(&FILES);
        let chit_chat = planted.is_empty() && assistant_planted.is_empty() && g.rng.u32(..6) == 0;
        let request = if chit_chat {
            g.pick(&CHIT_CHAT).to_string()
        } else {
            g.pick(&REQUESTS).replace("{f}", file)
        };
        let mut user = planted.join(" ");
        if !planted.is_empty() && g.rng.bool() {
            // Planted alone, acknowledged, then the request in its own message.
            self.user(&user);
            self.assistant_text(g.pick(&ACKS));
            user = request;
        } else if !user.is_empty() {
            user.push(' ');
            user.push_str(&request);
        } else {
            user = request;
        }
        self.user(&user);
        if chit_chat {
            self.assistant_text("Glad to hear it.");
            return;
        }
        for _ in 0..g.rng.usize(1..=3) {
            self.tool_round(g, file);
        }
        let mut close = format!("Done with {file}: the tests pass again.");
        for a in assistant_planted {
            close.push(' ');
            close.push_str(a);
        }
        self.assistant_text(&close);
    }
}
