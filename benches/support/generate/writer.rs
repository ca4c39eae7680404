//! The session writer: turns, tool calls and results, compactions and a branch summary,
//! written line by line with the bookkeeping (ids, parents, clock, file lists) pi keeps.

use std::collections::HashSet;
use std::io::{self, Write};

use fastrand::Rng;
use serde_json::{json, Map, Value};

use super::text::*;

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
