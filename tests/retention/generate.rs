//! The generator of pi sessions with planted items, seeded with `fastrand`.
//!
//! A conversation is a sequence of turns: a user request, an assistant answer with tool
//! calls (`read`, `bash`, `edit`, `grep`), their results (source listings, test runs,
//! search hits) and a closing assistant line. The filler is realistic in shape and
//! size but never carries a planted value: filler numbers stay below 1,000 and filler
//! words come from fixed lists, while every planted value is drawn at random (made-up
//! words, four-digit numbers, hex ids), so no summarizer can guess one and no filler
//! line can carry one by chance.
//!
//! Planted items ride in user messages (decisions sometimes in the assistant's), at
//! early, middle and late turns of each segment, alone or before a request, as people
//! write them. A supersession plants an old value and later a new one on the same
//! subject; only the newest is the item, the old value is tracked for the "stale"
//! metric. A credential is planted with its name (the item) and a secret value that
//! must never appear in any summary.

use serde_json::{json, Value};

/// What a planted item is, as the issue lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ItemType {
    Objective,
    Rule,
    Constraint,
    Preference,
    Fact,
    Credential,
    Decision,
    Supersession,
}

impl ItemType {
    pub const ALL: [ItemType; 8] = [
        ItemType::Objective,
        ItemType::Rule,
        ItemType::Constraint,
        ItemType::Preference,
        ItemType::Fact,
        ItemType::Credential,
        ItemType::Decision,
        ItemType::Supersession,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ItemType::Objective => "objective",
            ItemType::Rule => "rule",
            ItemType::Constraint => "constraint",
            ItemType::Preference => "preference",
            ItemType::Fact => "fact",
            ItemType::Credential => "credential",
            ItemType::Decision => "decision",
            ItemType::Supersession => "supersession",
        }
    }
}

/// One planted item: the values a continuing agent must still see.
#[derive(Debug, Clone)]
pub struct Planted {
    pub kind: ItemType,
    /// The sentence as planted (the newest one for a supersession).
    pub text: String,
    /// Every value must appear exactly for the item to survive.
    pub values: Vec<String>,
    /// A supersession's replaced value: not to be presented as current.
    pub old_value: Option<String>,
    /// A credential's value: never to appear in any summary.
    pub secret: Option<String>,
    /// The round (1-based) whose conversation planted it.
    pub round: usize,
}

/// A seeded source of made-up values.
pub struct Gen {
    pub rng: fastrand::Rng,
}

const ONSETS: [&str; 16] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr",
];
const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];
const CODAS: [&str; 8] = ["", "n", "r", "l", "x", "k", "m", "s"];

impl Gen {
    pub fn new(seed: u64) -> Self {
        Gen {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn pick<'a, T: ?Sized>(&mut self, xs: &[&'a T]) -> &'a T {
        xs[self.rng.usize(..xs.len())]
    }

    /// A made-up word of three syllables (about 10^6 of them): unguessable.
    pub fn word(&mut self) -> String {
        (0..3)
            .map(|_| {
                format!(
                    "{}{}{}",
                    self.pick(&ONSETS),
                    self.pick(&VOWELS),
                    self.pick(&CODAS)
                )
            })
            .collect()
    }

    /// A four-digit number (1000..=9999), never a filler number.
    pub fn four(&mut self) -> u32 {
        self.rng.u32(1000..=9999)
    }

    /// `4817` as `4,817`.
    pub fn grouped(n: u32) -> String {
        format!("{},{:03}", n / 1000, n % 1000)
    }

    pub fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from_digit(self.rng.u32(..16), 16).unwrap())
            .collect()
    }

    pub fn alnum(&mut self, len: usize) -> String {
        const A: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        (0..len)
            .map(|_| A[self.rng.usize(..A.len())] as char)
            .collect()
    }

    pub fn version(&mut self) -> String {
        format!(
            "{}.{}.{}",
            self.rng.u32(2..=9),
            self.rng.u32(10..=60),
            self.rng.u32(100..=999)
        )
    }
}

/// The objective, planted once at the first turn of the first round.
pub fn objective(g: &mut Gen) -> Planted {
    let svc = g.word();
    let (text, values) = match g.rng.u32(..3) {
        0 => (
            format!("Goal: build a CSV invoice exporter for the {svc} billing service."),
            vec![svc],
        ),
        1 => (
            format!(
                "I want you to migrate the {svc} service from callbacks to async/await, module by module."
            ),
            vec![svc],
        ),
        _ => (
            format!("We need a rate limiter in front of the {svc} API; that's the task for today."),
            vec![svc],
        ),
    };
    Planted {
        kind: ItemType::Objective,
        text,
        values,
        old_value: None,
        secret: None,
        round: 1,
    }
}

/// How many phrasings (each its own subject) a kind has. A session uses each at most
/// once: a second "Budget cap is ..." would supersede the first, not add an item.
pub fn variants(kind: ItemType) -> u32 {
    match kind {
        ItemType::Objective => 1,
        ItemType::Rule => 4,
        ItemType::Constraint => 5,
        ItemType::Preference => 5,
        ItemType::Fact => 4,
        ItemType::Credential => 2,
        ItemType::Decision => 5,
        ItemType::Supersession => 3,
    }
}

/// One item of `kind` in phrasing `variant` (not the objective, not a supersession).
pub fn item(g: &mut Gen, kind: ItemType, variant: u32, round: usize) -> Planted {
    let mut secret = None;
    let (text, values) = match kind {
        ItemType::Rule => match variant {
            0 => {
                let v = format!("${}", Gen::grouped(g.four()));
                (
                    format!("Budget cap is {v} total. Never exceed it."),
                    vec![v],
                )
            }
            1 => {
                let host = format!("{}-{}", g.word(), g.rng.u32(10..99));
                (format!("Never deploy to {host} on a Friday."), vec![host])
            }
            2 => {
                let dir = format!("gen/{}", g.word());
                (
                    format!("Do not edit anything under {dir}, it is generated."),
                    vec![dir],
                )
            }
            _ => {
                let cmd = format!("make check-{}", g.word());
                (
                    format!("Always run `{cmd}` before you commit anything."),
                    vec![cmd],
                )
            }
        },
        ItemType::Constraint => {
            let n = g.four();
            match variant {
                0 => (
                    format!("Hard limit: the export must finish in under {n} ms per page."),
                    vec![n.to_string()],
                ),
                1 => (
                    format!("The batch size must never exceed {n} rows."),
                    vec![n.to_string()],
                ),
                2 => (
                    format!("Memory on the worker has to stay below {n} MiB, no exceptions."),
                    vec![n.to_string()],
                ),
                3 => {
                    let v = Gen::grouped(n);
                    (format!("You must keep the bundle under {v} KB."), vec![v])
                }
                _ => (
                    format!("No single request may take more than {n} tokens, that's a hard cap."),
                    vec![n.to_string()],
                ),
            }
        }
        ItemType::Preference => {
            let w = g.word();
            match variant {
                0 => (
                    format!("I prefer commit messages that start with [{w}]."),
                    vec![format!("[{w}]")],
                ),
                1 => (
                    format!("Please name new branches feature/{w}-something, I like it that way."),
                    vec![format!("feature/{w}")],
                ),
                2 => (
                    format!(
                        "I'd rather have log lines prefixed with {w}: than with the module name."
                    ),
                    vec![format!("{w}:")],
                ),
                3 => (
                    format!("I like test files named after the feature, like {w}.spec.ts."),
                    vec![format!("{w}.spec.ts")],
                ),
                _ => {
                    let code = format!("{}-E{}", w.to_uppercase(), g.rng.u32(100..999));
                    (
                        format!("My preference: error codes in the form {code}."),
                        vec![code],
                    )
                }
            }
        }
        ItemType::Fact => match variant {
            0 => {
                let url = format!(
                    "https://{}.{}.dev/api/v{}",
                    g.word(),
                    g.word(),
                    g.rng.u32(2..9)
                );
                (format!("The staging endpoint is {url}."), vec![url])
            }
            1 => {
                let id = format!("{}-{}", g.word(), g.hex(6));
                (format!("Our project id is {id}."), vec![id])
            }
            2 => {
                let v = g.version();
                let lib = g.word();
                (
                    format!("We are pinned to {lib} {v}, do not upgrade it."),
                    vec![lib, v],
                )
            }
            _ => {
                let port = g.four().to_string();
                let host = format!("db-{}.internal", g.word());
                (
                    format!("The database runs on {host} port {port}."),
                    vec![host, port],
                )
            }
        },
        ItemType::Credential => {
            let name = format!("{}_API_TOKEN", g.word().to_uppercase());
            let value = format!("sk_live_{}", g.alnum(28));
            secret = Some(value.clone());
            let text = if variant == 0 {
                format!("The token is in the {name} environment variable; for now its value is {value}.")
            } else {
                format!(
                    "For the payment sandbox, export {name}={value} before running the e2e suite."
                )
            };
            (text, vec![name])
        }
        ItemType::Decision => {
            let w = g.word();
            match variant {
                0 => (format!("Let's go with {w} as the queue name."), vec![w]),
                1 => {
                    let p = format!("/var/cache/{w}.db");
                    (
                        format!("Decision: we store the cache in {p} instead of Redis."),
                        vec![p],
                    )
                }
                2 => (
                    format!("We decided to call the new crate {w}-core."),
                    vec![format!("{w}-core")],
                ),
                3 => {
                    let v = g.version();
                    (
                        format!("We'll target Node {v} for the build, decided."),
                        vec![v],
                    )
                }
                _ => (
                    format!(
                        "Final answer on the schema: the table is {w}_events, partitioned by day."
                    ),
                    vec![format!("{w}_events")],
                ),
            }
        }
        ItemType::Objective | ItemType::Supersession => unreachable!("planted elsewhere"),
    };
    Planted {
        kind,
        text,
        values,
        old_value: None,
        secret,
        round,
    }
}

/// A supersession on subject `variant`: the old statement and the newer one (the item).
pub fn supersession(g: &mut Gen, variant: u32, round: usize) -> (String, Planted) {
    let (a, b) = (g.four(), g.four());
    let b = if a == b { a % 9000 + 1000 } else { b };
    let (old, new) = match variant {
        0 => (
            format!("Use port {a} for the dev server."),
            format!("Change of plan: use port {b} for the dev server instead."),
        ),
        1 => (
            format!("Set the retry limit to {a} attempts."),
            format!("Actually make the retry limit {b} attempts, not {a}."),
        ),
        _ => (
            format!("The cache TTL should be {a} seconds."),
            format!("Update: the cache TTL should be {b} seconds from now on."),
        ),
    };
    (
        old,
        Planted {
            kind: ItemType::Supersession,
            text: new,
            values: vec![b.to_string()],
            old_value: Some(a.to_string()),
            secret: None,
            round,
        },
    )
}

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
