//! The generator of sessions to prune, as proptest strategies: the structure of a
//! session (entry kinds, sizes, parents, compactions, tool-result shapes, options) is
//! drawn and shrunk by proptest; the text is rendered from it.

use compactd::pipeline::PruneOptions;
use proptest::prelude::*;
use proptest::sample::Index;

use super::TOOLS;

/// A JSON string literal of about `len` UTF-16 units, with escapes and non-ASCII; the
/// pieces are drawn from `seed` (the length is what shrinking should reduce).
#[derive(Debug, Clone)]
struct TextGen {
    len: usize,
    seed: u64,
}

impl TextGen {
    fn render(&self) -> String {
        const PIECES: [&str; 9] = [
            "lorem ipsum ",
            "fn main() {}",
            "\\n",
            "\\\"q\\\"",
            "é",
            "\\u00e9",
            "😀",
            "\\ud83d\\ude00",
            "\\t",
        ];
        let mut rng = fastrand::Rng::with_seed(self.seed);
        let mut out = String::from("\"");
        let mut units = 0;
        while units < self.len {
            let p = PIECES[rng.usize(..PIECES.len())];
            out.push_str(p);
            units += match p {
                "😀" | "\\ud83d\\ude00" => 2,
                "\\n" | "é" | "\\u00e9" | "\\t" => 1,
                "\\\"q\\\"" => 3,
                p => p.len(),
            };
        }
        out.push('"');
        out
    }
}

fn text(len: impl Strategy<Value = usize>) -> impl Strategy<Value = TextGen> {
    (len, any::<u64>()).prop_map(|(len, seed)| TextGen { len, seed })
}

/// Tool output sizes: mostly small, some over the 50-token floor, a few large.
fn output_text() -> impl Strategy<Value = TextGen> {
    text(prop_oneof![4 => 0..400usize, 5 => 400..1_500usize, 1 => 1_500..6_000usize])
}

#[derive(Debug, Clone)]
enum ToolNameGen {
    Missing,
    NotAString,
    Name(&'static str),
}

#[derive(Debug, Clone)]
enum BlockGen {
    Image,
    Unknown,
    Text(TextGen),
}

#[derive(Debug, Clone)]
enum ContentGen {
    Missing,
    Null,
    String(TextGen),
    Blocks(Vec<BlockGen>),
}

#[derive(Debug, Clone)]
enum PrunedAtGen {
    Absent,
    At,
    Null,
}

#[derive(Debug, Clone)]
struct ToolResultGen {
    name: ToolNameGen,
    content: ContentGen,
    details: bool,
    pruned_at: PrunedAtGen,
    /// Seeds the order of the message's members.
    order: u64,
}

fn tool_result() -> impl Strategy<Value = ToolResultGen> {
    let name = prop_oneof![
        1 => Just(ToolNameGen::Missing),
        1 => Just(ToolNameGen::NotAString),
        18 => prop::sample::select(TOOLS.to_vec()).prop_map(ToolNameGen::Name),
    ];
    let block = prop_oneof![
        1 => Just(BlockGen::Image),
        1 => Just(BlockGen::Unknown),
        8 => output_text().prop_map(BlockGen::Text),
    ];
    let content = prop_oneof![
        1 => Just(ContentGen::Missing),
        1 => Just(ContentGen::Null),
        3 => output_text().prop_map(ContentGen::String),
        15 => prop::collection::vec(block, 1..3).prop_map(ContentGen::Blocks),
    ];
    let pruned_at = prop_oneof![
        1 => Just(PrunedAtGen::At),
        1 => Just(PrunedAtGen::Null),
        10 => Just(PrunedAtGen::Absent),
    ];
    (
        name,
        content,
        prop::bool::weighted(0.25),
        pruned_at,
        any::<u64>(),
    )
        .prop_map(|(name, content, details, pruned_at, order)| ToolResultGen {
            name,
            content,
            details,
            pruned_at,
            order,
        })
}

impl ToolResultGen {
    fn render(&self, n: usize) -> String {
        let mut members: Vec<String> = vec![
            r#""role":"toolResult""#.into(),
            format!(r#""toolCallId":"call{n}""#),
            r#""isError":false"#.into(),
            format!(r#""timestamp":{}"#, 1_767_225_600_000u64 + n as u64),
        ];
        match self.name {
            ToolNameGen::Missing => {}
            ToolNameGen::NotAString => members.push(r#""toolName":7"#.into()),
            ToolNameGen::Name(tool) => members.push(format!(r#""toolName":"{tool}""#)),
        }
        let content = match &self.content {
            ContentGen::Missing => None,
            ContentGen::Null => Some("null".to_string()),
            ContentGen::String(t) => Some(t.render()),
            ContentGen::Blocks(blocks) => {
                let blocks: Vec<String> = blocks
                    .iter()
                    .map(|b| match b {
                        BlockGen::Image => {
                            r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#.to_string()
                        }
                        BlockGen::Unknown => r#"{"type":"future","x":1}"#.to_string(),
                        BlockGen::Text(t) => format!(r#"{{"type":"text","text":{}}}"#, t.render()),
                    })
                    .collect();
                Some(format!("[{}]", blocks.join(",")))
            }
        };
        if let Some(c) = content {
            members.push(format!(r#""content":{c}"#));
        }
        if self.details {
            members.push(
                r#""details":{"exitCode":0,"ratio":1.50,"big":1e3,"nested":{"b":2,"a":[true,null]}}"#
                    .into(),
            );
        }
        match self.pruned_at {
            PrunedAtGen::At => {
                members.push(format!(r#""prunedAt":{}"#, 1_600_000_000_000u64 + n as u64))
            }
            PrunedAtGen::Null => members.push(r#""prunedAt":null"#.into()),
            PrunedAtGen::Absent => {}
        }
        fastrand::Rng::with_seed(self.order).shuffle(&mut members);
        format!("{{{}}}", members.join(","))
    }
}

/// One line of a generated session.
#[derive(Debug, Clone)]
enum LineGen {
    User(TextGen),
    /// A tool call, with the usage's input tokens when it has a usage.
    Assistant(Option<u32>),
    ToolResult(ToolResultGen),
    /// A compaction keeping an earlier entry, or an id on no entry.
    Compaction(Option<Index>),
    CustomMessage,
    Label,
}

#[derive(Debug, Clone)]
struct EntryGen {
    line: LineGen,
    /// Some: the parent is an earlier entry other than the previous one.
    parent: Option<Index>,
    blank_after: bool,
}

/// A generated session file and the options it is pruned with.
#[derive(Debug, Clone)]
pub struct SessionGen {
    v1: bool,
    entries: Vec<EntryGen>,
    leaf: Option<Index>,
    protect_tokens: Option<u64>,
    minimum_savings: Option<u64>,
    protected_tools: Option<Vec<String>>,
}

fn entry() -> impl Strategy<Value = EntryGen> {
    let line = prop_oneof![
        3 => text(0..200usize).prop_map(LineGen::User),
        4 => prop::option::of(0..50_000u32).prop_map(LineGen::Assistant),
        9 => tool_result().prop_map(LineGen::ToolResult),
        1 => prop::option::weighted(0.8, any::<Index>()).prop_map(LineGen::Compaction),
        1 => Just(LineGen::CustomMessage),
        2 => Just(LineGen::Label),
    ];
    (
        line,
        prop::option::weighted(1.0 / 7.0, any::<Index>()),
        prop::bool::weighted(1.0 / 30.0),
    )
        .prop_map(|(line, parent, blank_after)| EntryGen {
            line,
            parent,
            blank_after,
        })
}

pub fn session() -> impl Strategy<Value = SessionGen> {
    let protect = prop_oneof![
        1 => Just(None),
        2 => (0..3u64).prop_map(Some),
        7 => (0..3_000u64).prop_map(Some),
    ];
    let minimum = prop_oneof![
        1 => Just(None),
        2 => Just(Some(0)),
        7 => (0..2_000u64).prop_map(Some),
    ];
    let tools = prop_oneof![
        1 => Just(None),
        1 => Just(Some(Vec::new())),
        2 => prop::sample::subsequence(TOOLS.to_vec(), 0..=TOOLS.len())
            .prop_map(|t| Some(t.into_iter().map(String::from).collect())),
    ];
    (
        prop::bool::weighted(0.2),
        prop::collection::vec(entry(), 1..60),
        prop::option::weighted(0.25, any::<Index>()),
        protect,
        minimum,
        tools,
    )
        .prop_map(
            |(v1, entries, leaf, protect_tokens, minimum_savings, protected_tools)| SessionGen {
                v1,
                entries,
                leaf,
                protect_tokens,
                minimum_savings,
                protected_tools,
            },
        )
}

impl SessionGen {
    /// The session file and its options. A v1 file has no ids, so no compactions (a v1
    /// compaction addresses its kept entry by line) and no leaf.
    pub fn render(&self) -> (String, PruneOptions) {
        let version = if self.v1 { "" } else { r#""version":3,"# };
        let mut lines = vec![format!(
            r#"{{"type":"session",{version}"id":"gen","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}}"#
        )];
        let mut ids: Vec<String> = Vec::new();
        for (k, e) in self.entries.iter().enumerate() {
            let (kind, body) = match &e.line {
                LineGen::User(t) => (
                    "message",
                    format!(r#""message":{{"role":"user","content":{}}}"#, t.render()),
                ),
                LineGen::Assistant(input) => {
                    let usage = input.map_or(String::new(), |i| {
                        format!(
                            r#","usage":{{"input":{i},"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":0}}"#
                        )
                    });
                    (
                        "message",
                        format!(
                            r#""message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call{k}","name":"bash","arguments":{{"cmd":"ls"}}}}],"stopReason":"toolUse"{usage}}}"#
                        ),
                    )
                }
                LineGen::ToolResult(r) => ("message", format!(r#""message":{}"#, r.render(k))),
                LineGen::Compaction(kept) if !self.v1 && !ids.is_empty() => {
                    let kept = kept.map_or("nowhere", |i| i.get(&ids).as_str());
                    (
                        "compaction",
                        format!(
                            r#""summary":"s{k}","firstKeptEntryId":"{kept}","tokensBefore":1000"#
                        ),
                    )
                }
                LineGen::CustomMessage => (
                    "custom_message",
                    r#""customType":"note","content":"hello","display":true"#.to_string(),
                ),
                LineGen::Compaction(_) | LineGen::Label => ("label", r#""label":"x""#.to_string()),
            };
            let id_part = if self.v1 {
                String::new()
            } else {
                let id = format!("g{k}");
                let parent = match (ids.last(), e.parent) {
                    (None, _) => "null".to_string(),
                    (Some(_), Some(p)) => format!("\"{}\"", p.get(&ids)),
                    (Some(last), None) => format!("\"{last}\""),
                };
                ids.push(id.clone());
                format!(r#""id":"{id}","parentId":{parent},"#)
            };
            lines.push(format!(
                r#"{{"type":"{kind}",{id_part}"timestamp":"2026-01-01T00:00:00.000Z",{body}}}"#
            ));
            if e.blank_after {
                lines.push(String::new());
            }
        }
        let options = PruneOptions {
            leaf_id: self.leaf.filter(|_| !self.v1).map(|i| i.get(&ids).clone()),
            protect_tokens: self.protect_tokens,
            minimum_savings: self.minimum_savings,
            protected_tools: self.protected_tools.clone(),
        };
        (lines.join("\n") + "\n", options)
    }
}
