//! Tool-output pruning (ALGORITHM.md §10): oh-my-pi's `pruneToolOutputs` with the
//! age-based rules only (no supersede, useless or cache-warm logic).
//!
//! Walking the path newest → oldest, every tool result counts into an accumulated
//! tool-output total. A result becomes a candidate once that total has reached
//! `protectTokens`, unless it is already pruned, lies before the latest compaction's
//! kept boundary, belongs to a protected tool or is smaller than [`MIN_PRUNE_TOKENS`].
//! The candidates are pruned only when together they save at least `minimumSavings`.
//!
//! Pure: the timestamp written into pruned messages is a parameter.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny};
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::session::entry::value_of_str;
use crate::session::{Entry, EntryBody, Role, Text};

use super::message::AgentMessage;
use super::tokens::estimate;

/// Below this a result is never pruned: the notice itself costs about 8 tokens.
pub(crate) const MIN_PRUNE_TOKENS: u64 = 50;
pub(crate) const DEFAULT_PROTECT_TOKENS: u64 = 40_000;
pub(crate) const DEFAULT_MINIMUM_SAVINGS: u64 = 20_000;
pub(crate) const DEFAULT_PROTECTED_TOOLS: [&str; 2] = ["skill", "read"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneSettings {
    /// The newest tool-output tokens that are never pruned.
    pub protect_tokens: u64,
    /// Prune only when the candidates together save at least this many tokens.
    pub minimum_savings: u64,
    /// Results of these tools (the toolResult's `toolName`) are never pruned.
    pub protected_tools: Vec<String>,
}

impl Default for PruneSettings {
    fn default() -> Self {
        PruneSettings {
            protect_tokens: DEFAULT_PROTECT_TOKENS,
            minimum_savings: DEFAULT_MINIMUM_SAVINGS,
            protected_tools: DEFAULT_PROTECTED_TOOLS.map(String::from).to_vec(),
        }
    }
}

/// The text a pruned result's content becomes.
pub fn notice(tokens: u64) -> String {
    format!("[Output truncated - {tokens} tokens]")
}

/// Tokens saved by replacing a result of `tokens` tokens with `notice` (ASCII, so its
/// byte length is its UTF-16 length).
pub fn savings(tokens: u64, notice: &str) -> u64 {
    tokens.saturating_sub(notice.len().div_ceil(4) as u64)
}

/// A tool result to prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Index on the path.
    pub path_index: usize,
    /// Its estimated tokens before pruning (the number in the notice).
    pub tokens: u64,
}

/// What pruning a path would change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// The results to prune, in path order; empty when pruning would not pay off.
    pub candidates: Vec<Candidate>,
    /// Tokens the candidates save (0 when there are none).
    pub tokens_saved: u64,
}

/// Path index of the latest compaction's first kept entry (oh-my-pi's
/// `resolveBoundaryIndex`): 0 without a compaction, or when that entry is not on the
/// path. Results before it are summarized away and never pruned.
pub(crate) fn boundary_index(path: &[&Entry]) -> usize {
    path.iter()
        .rev()
        .find_map(|e| e.compaction())
        .and_then(|c| c.first_kept_entry_id.as_deref())
        .and_then(|id| path.iter().position(|e| e.id() == Some(id)))
        .unwrap_or(0)
}

/// Decides which tool results of the path to prune.
pub fn plan_pruning(path: &[&Entry], settings: &PruneSettings) -> PrunePlan {
    let boundary = boundary_index(path);
    let mut accumulated: u64 = 0;
    let mut candidates = Vec::new();
    for (i, entry) in path.iter().enumerate().rev() {
        crate::cancel::checkpoint();
        let EntryBody::Message(m) = &entry.body else {
            continue;
        };
        if m.role != Role::ToolResult {
            continue;
        }
        let tokens = estimate(AgentMessage::Stored(m));
        let before = accumulated;
        // Every result counts, whatever is decided for it.
        accumulated = accumulated.saturating_add(tokens);
        if i < boundary || before < settings.protect_tokens || tokens < MIN_PRUNE_TOKENS {
            continue;
        }
        // Only a result that could still be a candidate is read for its tool and mark.
        let meta = ToolResultMeta::of(entry);
        if meta.pruned || meta.is_protected(&settings.protected_tools) {
            continue;
        }
        candidates.push(Candidate {
            path_index: i,
            tokens,
        });
    }
    candidates.reverse();
    let tokens_saved = candidates
        .iter()
        .map(|c| savings(c.tokens, &notice(c.tokens)))
        .sum();
    if candidates.is_empty() || tokens_saved < settings.minimum_savings {
        return PrunePlan::default();
    }
    PrunePlan {
        candidates,
        tokens_saved,
    }
}

/// The parts of a toolResult message the core does not parse: `toolName` and whether
/// `prunedAt` is present (any value, `null` included, as oh-my-pi's `!== undefined`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ToolResultMeta {
    pub tool_name: Option<String>,
    pub pruned: bool,
}

impl ToolResultMeta {
    pub fn of(entry: &Entry) -> Self {
        #[derive(DeriveDeserialize)]
        struct Outer<'a> {
            #[serde(borrow)]
            message: Option<Inner<'a>>,
        }
        #[derive(DeriveDeserialize)]
        #[serde(rename_all = "camelCase")]
        struct Inner<'a> {
            #[serde(borrow, default, deserialize_with = "present_raw")]
            tool_name: Option<&'a RawValue>,
            #[serde(default)]
            pruned_at: Present,
        }
        match serde_json::from_str::<Outer>(entry.raw) {
            Ok(Outer { message: Some(m) }) => ToolResultMeta {
                tool_name: m
                    .tool_name
                    .and_then(|r| Text::from_raw(r.get()))
                    .map(|t| t.decode().into_owned()),
                pruned: m.pruned_at.0,
            },
            Ok(Outer { message: None }) => ToolResultMeta::default(),
            // Duplicate keys: read it as JSON.parse would (the last one wins).
            Err(_) => {
                let v = value_of_str(entry.raw);
                let m = &v["message"];
                ToolResultMeta {
                    tool_name: m["toolName"].as_str().map(str::to_string),
                    pruned: m.get("prunedAt").is_some(),
                }
            }
        }
    }

    /// oh-my-pi matches string matchers with `toolResult.toolName === matcher`.
    pub(crate) fn is_protected(&self, protected_tools: &[String]) -> bool {
        self.tool_name
            .as_deref()
            .is_some_and(|n| protected_tools.iter().any(|p| p == n))
    }
}

/// The JSON text of `entry` after pruning its message: `content` becomes one text
/// block with the notice for `tokens`, and `prunedAt` is set. Every other field keeps
/// its text and place. With `include_ids`, an entry whose `id`/`parentId` came from
/// the v1 migration gets them (appended, as pi's migration assigns them).
pub fn pruned_entry(entry: &Entry, tokens: u64, pruned_at: u64, include_ids: bool) -> String {
    let ids = (include_ids && entry.migrated_ids)
        .then(|| (entry.id().unwrap_or_default(), entry.parent_id.as_deref()));
    let notice = notice(tokens);
    splice(entry.raw, &notice, pruned_at, ids)
        .filter(|s| serde_json::from_str::<IgnoredAny>(s).is_ok())
        .unwrap_or_else(|| via_value(entry.raw, &notice, pruned_at, ids))
}

type Ids<'e> = Option<(&'e str, Option<&'e str>)>;

fn content_json(notice: &str) -> String {
    serde_json::json!([{ "type": "text", "text": notice }]).to_string()
}

fn json_string(s: &str) -> String {
    Value::from(s).to_string()
}

fn ids_members((id, parent): (&str, Option<&str>)) -> String {
    format!(
        "\"id\":{},\"parentId\":{}",
        json_string(id),
        parent.map_or_else(|| "null".to_string(), json_string)
    )
}

/// Rewrites the entry's text in place: the bytes of everything not changed stay as
/// they were. None when the text is unusual (duplicate keys, a key that would be
/// added twice); the caller then goes through a JSON value.
fn splice(raw: &str, notice: &str, pruned_at: u64, ids: Ids) -> Option<String> {
    #[derive(DeriveDeserialize)]
    #[serde(rename_all = "camelCase")]
    struct EntryParts<'a> {
        #[serde(borrow, default, deserialize_with = "present_raw")]
        message: Option<&'a RawValue>,
        #[serde(default)]
        id: Present,
        #[serde(default)]
        parent_id: Present,
    }
    #[derive(DeriveDeserialize)]
    #[serde(rename_all = "camelCase")]
    struct MessageParts<'a> {
        #[serde(borrow, default, deserialize_with = "present_raw")]
        content: Option<&'a RawValue>,
        #[serde(default)]
        pruned_at: Present,
    }
    let parts: EntryParts = serde_json::from_str(raw).ok()?;
    if ids.is_some() && (parts.id.0 || parts.parent_id.0) {
        return None;
    }
    let msg = parts.message?.get();
    if !msg.starts_with('{') {
        return None;
    }
    let m_start = offset_in(raw, msg)?;
    let mp: MessageParts = serde_json::from_str(msg).ok()?;
    if mp.pruned_at.0 {
        return None;
    }
    let content = content_json(notice);
    let mut new_msg = match mp.content {
        Some(c) => {
            let c_start = offset_in(msg, c.get())?;
            let c_end = c_start + c.get().len();
            [&msg[..c_start], &content, &msg[c_end..]].concat()
        }
        None => add_members(msg, &format!("\"content\":{content}"))?,
    };
    new_msg = add_members(&new_msg, &format!("\"prunedAt\":{pruned_at}"))?;
    let m_end = m_start + msg.len();
    let out = [&raw[..m_start], &new_msg, &raw[m_end..]].concat();
    match ids {
        Some(ids) => add_members(&out, &ids_members(ids)),
        None => Some(out),
    }
}

/// Appends members (`"k":v,…`) to the JSON object text `obj` before its closing brace.
fn add_members(obj: &str, members: &str) -> Option<String> {
    let open = obj.find('{')?;
    let close = obj.rfind('}')?;
    if close < open {
        return None;
    }
    // Right after the last member, so a pretty-printed object keeps its closing line.
    let at = obj[..close].trim_end().len();
    let sep = if at == open + 1 { "" } else { "," };
    Some([&obj[..at], sep, members, &obj[at..]].concat())
}

/// Byte offset of `inner` inside `outer`, when `inner` is a slice of it.
fn offset_in(outer: &str, inner: &str) -> Option<usize> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start + inner.len() <= outer.len()).then_some(start)
}

/// The same change through a JSON value (key order kept, replaced keys keep their
/// place, new keys are appended).
fn via_value(raw: &str, notice: &str, pruned_at: u64, ids: Ids) -> String {
    let mut v = value_of_str(raw);
    if let Value::Object(entry) = &mut v {
        if let Some(Value::Object(m)) = entry.get_mut("message") {
            m.insert(
                "content".into(),
                serde_json::json!([{ "type": "text", "text": notice }]),
            );
            m.insert("prunedAt".into(), Value::from(pruned_at));
        }
        if let Some((id, parent)) = ids {
            entry.insert("id".into(), Value::from(id));
            entry.insert("parentId".into(), parent.map_or(Value::Null, Value::from));
        }
    }
    v.to_string()
}

/// A field that is present, whatever its value (`null` included).
#[derive(Debug, Default, Clone, Copy)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// A raw value that is `Some` whenever the field is present (`null` included).
fn present_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue as Deserialize<'de>>::deserialize(d)
        .map(Some)
        .map_err(de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    fn result_line(id: &str, parent: &str, tool: &str, chars: usize, extra: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"t","message":{{"role":"toolResult","toolCallId":"c-{id}","toolName":"{tool}","content":[{{"type":"text","text":"{}"}}],"isError":false{extra}}}}}"#,
            "x".repeat(chars)
        )
    }

    fn session_text(results: &[(&str, usize, &str)]) -> String {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s"}"#.to_string(),
            r#"{"type":"message","id":"u","parentId":null,"message":{"role":"user","content":"go"}}"#
                .to_string(),
        ];
        let mut parent = "u".to_string();
        for (n, (tool, chars, extra)) in results.iter().enumerate() {
            let id = format!("r{n}");
            lines.push(result_line(&id, &parent, tool, *chars, extra));
            parent = id;
        }
        lines.join("\n")
    }

    fn run(text: &str, settings: &PruneSettings) -> PrunePlan {
        let s = Session::from_jsonl(text).unwrap();
        let positions = s.path(crate::session::tree::Leaf::Last, "leafId").unwrap();
        let path: Vec<&Entry> = positions.iter().map(|&i| &s.entries[i]).collect();
        plan_pruning(&path, settings)
    }

    fn settings(protect: u64, minimum: u64) -> PruneSettings {
        PruneSettings {
            protect_tokens: protect,
            minimum_savings: minimum,
            ..PruneSettings::default()
        }
    }

    #[test]
    fn notice_and_savings_follow_oh_my_pi() {
        assert_eq!(notice(1234), "[Output truncated - 1234 tokens]");
        // 32 characters → 8 tokens.
        assert_eq!(savings(1234, &notice(1234)), 1226);
        assert_eq!(savings(3, &notice(3)), 0);
    }

    #[test]
    fn prunes_older_results_beyond_the_protected_window() {
        // Four results of 1000 tokens; the newest two fill protectTokens = 2000.
        let text = session_text(&[("bash", 4000, ""); 4]);
        let p = run(&text, &settings(2000, 100));
        // r0 and r1 are path indexes 1 and 2; r2 sees 1000 < 2000 accumulated.
        assert_eq!(
            p.candidates,
            vec![
                Candidate {
                    path_index: 1,
                    tokens: 1000
                },
                Candidate {
                    path_index: 2,
                    tokens: 1000
                }
            ]
        );
        assert_eq!(p.tokens_saved, 2 * (1000 - 8));
        // Not enough savings: nothing.
        assert_eq!(run(&text, &settings(2000, 1985)), PrunePlan::default());
        assert_eq!(run(&text, &settings(2000, 1984)).candidates.len(), 2);
    }

    #[test]
    fn protected_small_and_pruned_results_are_skipped_but_counted() {
        let text = session_text(&[
            ("read", 4000, ""),
            ("bash", 196, ""),
            ("bash", 4000, r#","prunedAt":null"#),
            ("skill", 4000, ""),
            ("bash", 4000, ""),
        ]);
        assert_eq!(run(&text, &settings(1, 0)), PrunePlan::default());
        let p = run(
            &text,
            &PruneSettings {
                protected_tools: vec![],
                ..settings(1, 0)
            },
        );
        let idx: Vec<usize> = p.candidates.iter().map(|c| c.path_index).collect();
        // r0 (read) and r3 (skill) now prunable; r1 is 49 tokens, r2 already pruned,
        // r4 the newest (accumulated 0 < 1).
        assert_eq!(idx, vec![1, 4]);
    }

    #[test]
    fn the_boundary_is_the_latest_compactions_kept_entry() {
        let mut text = session_text(&[("bash", 4000, ""); 3]);
        text.push_str(
            "\n{\"type\":\"compaction\",\"id\":\"c\",\"parentId\":\"r2\",\"summary\":\"s\",\"firstKeptEntryId\":\"r1\",\"tokensBefore\":1}",
        );
        text.push('\n');
        text.push_str(&result_line("r3", "c", "bash", 4000, ""));
        let p = run(&text, &settings(1000, 0));
        let idx: Vec<usize> = p.candidates.iter().map(|c| c.path_index).collect();
        assert_eq!(idx, vec![2, 3], "r0 (index 1) is before the kept entry r1");
        // A kept id not on the path: boundary 0, like resolveBoundaryIndex.
        let text = text.replace("\"firstKeptEntryId\":\"r1\"", "\"firstKeptEntryId\":\"zz\"");
        assert_eq!(run(&text, &settings(1000, 0)).candidates.len(), 3);
    }

    #[test]
    fn rewriting_keeps_every_other_byte() {
        let line = r#"{"type":"message", "id":"a","parentId":"p","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"caf\u00e9"}],"details":{"n":1.50},"isError":false },"x":[1, 2]}"#;
        let s = Session::from_jsonl(line).unwrap();
        let out = pruned_entry(&s.entries[0], 77, 1700000000000, true);
        assert_eq!(
            out,
            r#"{"type":"message", "id":"a","parentId":"p","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"[Output truncated - 77 tokens]"}],"details":{"n":1.50},"isError":false,"prunedAt":1700000000000 },"x":[1, 2]}"#
        );
    }

    #[test]
    fn rewriting_adds_content_and_migrated_ids() {
        let text = "{\"type\":\"session\",\"id\":\"h\"}\n{\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolName\":\"bash\",\"content\":null}}\n{\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolName\":\"bash\"}}";
        let s = Session::from_jsonl(text).unwrap();
        let (a, b) = (&s.entries[0], &s.entries[1]);
        let out = pruned_entry(a, 60, 5, false);
        assert_eq!(
            out,
            r#"{"type":"message","message":{"role":"toolResult","toolName":"bash","content":[{"type":"text","text":"[Output truncated - 60 tokens]"}],"prunedAt":5}}"#
        );
        let out: Value = serde_json::from_str(&pruned_entry(b, 60, 5, true)).unwrap();
        let keys: Vec<&str> = out
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, ["type", "message", "id", "parentId"]);
        assert_eq!(out["id"], b.id().unwrap());
        assert_eq!(out["parentId"], a.id().unwrap());
        let mkeys: Vec<&str> = out["message"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(mkeys, ["role", "toolName", "content", "prunedAt"]);
    }

    #[test]
    fn rewriting_keeps_text_a_value_could_not_hold() {
        // A lone surrogate and a number beyond f64 survive: only the content is new.
        let line = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","toolName":"bash","content":"x","details":{"s":"\ud800","n":123456789012345678901234567890}}}"#;
        let s = Session::from_jsonl(line).unwrap();
        let out = pruned_entry(&s.entries[0], 60, 5, true);
        assert_eq!(
            out,
            line.replace(
                r#""content":"x""#,
                r#""content":[{"type":"text","text":"[Output truncated - 60 tokens]"}]"#
            )
            .replace("890}}}", "890},\"prunedAt\":5}}")
        );
    }

    #[test]
    fn duplicate_keys_go_through_a_value() {
        let line = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","toolName":"x","toolName":"bash","content":"old"}}"#;
        let s = Session::from_jsonl(line).unwrap();
        let meta = ToolResultMeta::of(&s.entries[0]);
        assert_eq!(meta.tool_name.as_deref(), Some("bash"));
        let out: Value = serde_json::from_str(&pruned_entry(&s.entries[0], 60, 5, true)).unwrap();
        assert_eq!(
            out["message"]["content"][0]["text"],
            "[Output truncated - 60 tokens]"
        );
        assert_eq!(out["message"]["prunedAt"], 5);
        assert_eq!(out["id"], "a");
    }
}
