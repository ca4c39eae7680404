//! Token estimates: pi's chars/4 heuristic over UTF-16 code units.

use crate::session::entry::value_of_str;
use crate::session::{Block, Content, Role};

use super::message::AgentMessage;
use super::stringify::{stringify_len, stringify_raw, NeedsValue, Utf16Count};

/// Characters an image counts for in tool results and custom messages.
const IMAGE_CHARS: usize = 4800;

/// pi's `estimateTokens`: `ceil(chars / 4)`.
pub fn estimate(msg: AgentMessage) -> u64 {
    chars(msg).div_ceil(4) as u64
}

fn chars(msg: AgentMessage) -> usize {
    match msg {
        AgentMessage::Stored(m) => match m.role {
            Role::User => content_chars(&m.content, false),
            Role::ToolResult | Role::Custom => content_chars(&m.content, true),
            Role::Assistant => match &m.content {
                Content::Blocks(blocks) => blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text(t) | Block::Thinking(t) => t.utf16_len(),
                        Block::ToolCall(c) => c.name.utf16_len() + arguments_len(c.arguments.get()),
                        Block::Image | Block::Other => 0,
                    })
                    .sum(),
                _ => 0,
            },
            Role::BashExecution => m
                .bash
                .as_ref()
                .map_or(0, |b| b.command.utf16_len() + b.output.utf16_len()),
            Role::BranchSummary | Role::CompactionSummary => {
                m.summary.as_ref().map_or(0, |s| s.utf16_len())
            }
            Role::HookMessage | Role::Other => 0,
        },
        AgentMessage::Custom(content) => content_chars(content, true),
        AgentMessage::BranchSummary(s) | AgentMessage::CompactionSummary(s) => s.utf16_len(),
    }
}

/// `JSON.stringify(arguments).length`, from the raw text when JavaScript would keep
/// its key order.
fn arguments_len(raw: &str) -> usize {
    let mut n = Utf16Count::default();
    match stringify_raw(raw, &mut n) {
        Ok(()) => n.0,
        Err(NeedsValue) => stringify_len(&value_of_str(raw)),
    }
}

fn content_chars(content: &Content, count_images: bool) -> usize {
    match content {
        Content::Absent => 0,
        Content::Text(t) => t.utf16_len(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.utf16_len(),
                Block::Image if count_images => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{messages, parse, SessionText};
    use serde_json::json;

    /// The estimate of the one message `s` holds.
    fn tokens_of(s: SessionText) -> u64 {
        let text = s.jsonl();
        let session = parse(&text);
        let messages = messages(&session);
        assert_eq!(messages.len(), 1);
        estimate(messages[0])
    }

    fn image() -> serde_json::Value {
        json!({ "type": "image", "data": "AAAA", "mimeType": "image/png" })
    }

    #[test]
    fn tokens_are_utf16_units_divided_by_four_rounded_up() {
        // Six UTF-16 units (three astral characters): 2 tokens, not 1 (chars) or 3 (bytes).
        assert_eq!(tokens_of(SessionText::new().user("😀😀😀")), 2);
        assert_eq!(tokens_of(SessionText::new().user("abcde")), 2);
        assert_eq!(tokens_of(SessionText::new().user("")), 0);
    }

    #[test]
    fn images_in_user_messages_count_nothing() {
        let content = json!([{ "type": "text", "text": "abcd" }, image()]);
        let s = SessionText::new().message(json!({ "role": "user", "content": content }));
        assert_eq!(tokens_of(s), 1);
    }

    #[test]
    fn an_image_in_a_tool_result_or_custom_message_counts_4800_chars() {
        let result = json!({ "role": "toolResult", "toolName": "read", "content": [image()] });
        assert_eq!(tokens_of(SessionText::new().message(result)), 1200);
        let custom = SessionText::new().entry(
            "custom_message",
            json!({ "customType": "n", "content": [image(), image()], "display": true }),
        );
        assert_eq!(tokens_of(custom), 2400);
    }

    #[test]
    fn an_assistant_counts_text_thinking_and_tool_call_name_and_arguments() {
        let content = json!([
            { "type": "text", "text": "abcd" },
            { "type": "thinking", "thinking": "abcd" },
            { "type": "toolCall", "id": "c", "name": "read", "arguments": { "path": "a" } }
        ]);
        // 4 + 4 + 4 ("read") + 12 (`{"path":"a"}`) = 24 chars.
        assert_eq!(tokens_of(SessionText::new().assistant_blocks(content)), 6);
    }

    #[test]
    fn tool_call_arguments_count_as_their_json_stringify_length() {
        // No whitespace, numbers and escapes as JavaScript writes them.
        assert_eq!(
            arguments_len(r#"{ "a" : [ 1 , 2 ] }"#),
            r#"{"a":[1,2]}"#.len()
        );
        assert_eq!(arguments_len(r#"{"n":1.0}"#), r#"{"n":1}"#.len());
        assert_eq!(arguments_len(r#"{"n":1E2}"#), r#"{"n":100}"#.len());
        assert_eq!(arguments_len(r#"{"n":1e21}"#), r#"{"n":1e+21}"#.len());
        assert_eq!(arguments_len(r#"{"n":-0}"#), r#"{"n":0}"#.len());
        assert_eq!(
            arguments_len(r#"{"s":"\u00e9\/"}"#),
            r#"{"s":"é/"}"#.chars().count()
        );
        assert_eq!(
            arguments_len(r#"{"s":"😀"}"#),
            10,
            "an astral character is 2 units"
        );
        assert_eq!(
            arguments_len(r#"{"s":"\u0001"}"#),
            r#"{"s":"\u0001"}"#.len()
        );
        // A repeated key keeps one member, with the last value (JSON.parse).
        assert_eq!(arguments_len(r#"{"a":1,"a":22}"#), r#"{"a":22}"#.len());
    }

    #[test]
    fn a_bash_execution_counts_its_command_and_output() {
        assert_eq!(tokens_of(SessionText::new().bash("ls", "abcdef")), 2);
    }

    #[test]
    fn summaries_count_their_summary_text() {
        assert_eq!(tokens_of(SessionText::new().branch_summary("abcde")), 2);
        let text = SessionText::new().compaction("abcdefghi", "e0").jsonl();
        let session = parse(&text);
        let c = session.entries[0].compaction().unwrap();
        assert_eq!(estimate(AgentMessage::CompactionSummary(&c.summary)), 3);
    }

    #[test]
    fn unknown_roles_count_nothing() {
        let s = SessionText::new().message(json!({ "role": "future", "content": "abcdefgh" }));
        assert_eq!(tokens_of(s), 0);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::compaction::stringify::stringify;
    use crate::compaction::test_session::proptest_config;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// Any JSON value: every number shape JavaScript prints its own way, strings of any
    /// characters (controls and astral ones included), array-index keys.
    fn any_json() -> impl Strategy<Value = Value> {
        let number = prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| {
                serde_json::Number::from_f64(f).map(Value::Number)
            }),
            prop::sample::select(vec![0.1, 1.0, -0.0, 1e21, 1e-7, 5e-324, 1.5e300])
                .prop_map(|f| json!(f)),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            number,
            any::<String>().prop_map(Value::from),
        ];
        let key = prop_oneof![any::<String>(), (0u32..20).prop_map(|n| n.to_string())];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(proptest_config(256))]

        /// The counted `JSON.stringify` length, from the raw text or from a value, is
        /// the UTF-16 length of the `JSON.stringify` text.
        #[test]
        fn stringify_length_is_the_length_of_the_stringify_text(
            value in any_json(),
            pretty in any::<bool>(),
        ) {
            let raw = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                value.to_string()
            };
            let text = stringify(&value);
            let units = text.encode_utf16().count();
            prop_assert_eq!(arguments_len(&raw), units);
            prop_assert_eq!(stringify_len(&value), units);
            let mut from_raw = String::new();
            if stringify_raw(&raw, &mut from_raw).is_ok() {
                prop_assert_eq!(from_raw, text);
            }
        }
    }
}
