//! The two token estimates of hermes (contract §3), which must never be mixed up:
//!
//! * [`rough`] (R, `estimate_messages_tokens_rough`): the whole-list estimate behind the
//!   "should we compact" decision and `tokensBefore`/`tokensAfter`. It measures the length
//!   of Python's `str()` of each message with image payloads blanked out, and adds a flat
//!   1500 per image.
//! * [`budget`] (E, `_estimate_msg_budget_tokens`): the per-message estimate that the
//!   prune walk and the tail walk add up. It counts content, the whole tool-call envelopes
//!   and the provider replay fields, and charges 6400 characters per image part.
//!
//! Design decisions: lengths are computed from Python's printed forms (`py::str_of`,
//! `py::repr_of`, `py::dumps_json`) because that is what hermes measures; R sums the
//! `repr` pieces of the shadow dictionary instead of building a shadow copy, so a large
//! message is never cloned. Shapes on which hermes raises (a `type` that is a list or an
//! object, a `text` that is a number, a `tool_calls` that is a number) are counted as H1
//! says: the unusable value counts as absent.

use serde_json::Value;

use crate::{message, py};

/// Characters per token in both estimates.
const CHARS_PER_TOKEN: u64 = 4;
/// R: flat token cost of one image (`_IMAGE_TOKEN_COST`).
const ROUGH_IMAGE_TOKENS: u64 = 1500;
/// E: character equivalent of one image part (1600 tokens × 4).
const BUDGET_IMAGE_CHARS: u64 = 6400;
/// E: per-message overhead for role and keys.
const BUDGET_OVERHEAD: u64 = 10;
/// E: provider replay fields counted on top of content (`_REPLAY_BUDGET_KEYS`).
const REPLAY_KEYS: [&str; 5] = [
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
];

/// R(list): `ceil(Σ chars / 4) + 1500 × images`, the ceiling taken once over the sum.
pub fn rough(msgs: &[Value]) -> u64 {
    let mut chars: u64 = 0;
    let mut images: u64 = 0;
    for m in msgs {
        compactd_core::cancel::checkpoint();
        chars += message_chars(m);
        images += image_count(m);
    }
    chars.div_ceil(CHARS_PER_TOKEN) + ROUGH_IMAGE_TOKENS * images
}

/// R's character count of one message (`_estimate_message_chars`): `len(str(shadow))`.
fn message_chars(m: &Value) -> u64 {
    let Value::Object(map) = m else {
        return py::len(&py::str_of(m)) as u64;
    };
    // str(dict) = "{" + "repr(k): repr(v)" joined by ", " + "}".
    let mut total: usize = 2;
    let mut entries = 0usize;
    for (k, v) in map {
        if k == "_anthropic_content_blocks" {
            continue;
        }
        let value_len = if k == "content" {
            shadow_content_len(v)
        } else {
            py::len(&py::repr_of(v))
        };
        total += py::len(&py::repr_str(k)) + 2 + value_len;
        entries += 1;
    }
    total += 2 * entries.saturating_sub(1);
    total as u64
}

/// Length of `repr` of the shadow of `content`: image parts blanked, a `_multimodal`
/// envelope replaced by its `text_summary`.
fn shadow_content_len(v: &Value) -> usize {
    match v {
        Value::Array(parts) => {
            let mut total = 2 + 2 * parts.len().saturating_sub(1);
            for part in parts {
                total += if message::is_image_part(part) {
                    // {'type': <repr(type)>, 'image': '[stripped]'}
                    let ty = part.get("type").unwrap_or(&Value::Null);
                    "{'type': ".len() + py::len(&py::repr_of(ty)) + ", 'image': '[stripped]'}".len()
                } else {
                    py::len(&py::repr_of(part))
                };
            }
            total
        }
        Value::Object(env) if env.get("_multimodal").is_some_and(py::is_truthy) => {
            match env.get("text_summary") {
                Some(summary) => py::len(&py::repr_of(summary)),
                None => 2, // ''
            }
        }
        other => py::len(&py::repr_of(other)),
    }
}

/// R's image count (`_count_image_tokens` without the cost).
fn image_count(m: &Value) -> u64 {
    let Value::Object(map) = m else {
        return 0;
    };
    let mut count = 0u64;
    let content = map.get("content");
    if let Some(Value::Array(parts)) = content {
        count += parts.iter().filter(|p| message::is_image_part(p)).count() as u64;
    }
    if let Some(Value::Array(stashed)) = map.get("_anthropic_content_blocks") {
        count += stashed
            .iter()
            .filter(|p| part_type(p) == Some("image"))
            .count() as u64;
    }
    // A tool result envelope not converted yet: only `image` and `image_url` count here.
    if let Some(Value::Object(env)) = content {
        if env.get("_multimodal").is_some_and(py::is_truthy) {
            if let Some(Value::Array(inner)) = env.get("content") {
                count += inner
                    .iter()
                    .filter(|p| matches!(part_type(p), Some("image" | "image_url")))
                    .count() as u64;
            }
        }
    }
    count
}

/// The `type` of an object part when it is a string.
fn part_type(p: &Value) -> Option<&str> {
    p.as_object()?.get("type")?.as_str()
}

/// E(msg): `floor(L(content)/4) + 10`, plus `floor(len(str(tc))/4)` per object tool call,
/// plus `floor(S/4)` per replay field. A non-object message counts as an empty one.
pub fn budget(m: &Value) -> u64 {
    let Value::Object(map) = m else {
        return BUDGET_OVERHEAD;
    };
    let content = map.get("content").filter(|c| py::is_truthy(c));
    let mut tokens = content_len(content) / CHARS_PER_TOKEN + BUDGET_OVERHEAD;
    // `msg.get("tool_calls") or []`: a string or an object iterates without objects, a
    // number would raise (H1: nothing to count).
    if let Some(Value::Array(calls)) = map.get("tool_calls") {
        for tc in calls.iter().filter(|tc| tc.is_object()) {
            tokens += py::len(&py::str_of(tc)) as u64 / CHARS_PER_TOKEN;
        }
    }
    for key in REPLAY_KEYS {
        tokens += replay_len(map.get(key)) / CHARS_PER_TOKEN;
    }
    tokens
}

/// `_content_length_for_budget` of a truthy content (None stands for a falsy one).
fn content_len(content: Option<&Value>) -> u64 {
    match content {
        None => 0,
        Some(Value::String(s)) => py::len(s) as u64,
        Some(Value::Array(parts)) => parts.iter().map(part_len).sum(),
        Some(other) => py::len(&py::str_of(other)) as u64,
    }
}

/// One part of a list content, as `_content_length_for_budget` counts it.
fn part_len(p: &Value) -> u64 {
    match p {
        Value::String(s) => py::len(s) as u64,
        Value::Object(obj) => {
            if message::is_image_part(p) {
                return BUDGET_IMAGE_CHARS;
            }
            // `len(p.get("text", "") or "")`: a list or an object has a Python length
            // (items, keys); a truthy number or `true` raises in hermes (H1: counts 0).
            match obj.get("text") {
                Some(Value::String(s)) => py::len(s) as u64,
                Some(Value::Array(a)) => a.len() as u64,
                Some(Value::Object(o)) => o.len() as u64,
                _ => 0,
            }
        }
        other => py::len(&py::str_of(other)) as u64,
    }
}

/// `_serialized_length_for_budget`: 0 for null/absent/`""`, a string's length, otherwise
/// the length of `json.dumps(value, ensure_ascii=False, sort_keys=True)`.
fn replay_len(v: Option<&Value>) -> u64 {
    match v {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => py::len(s) as u64,
        Some(other) => py::len(&py::dumps_json(other, true)) as u64,
    }
}

#[cfg(test)]
mod tests {
    //! Expected numbers come from hermes-agent 0.19.0 run on the same JSON
    //! (`estimate_messages_tokens_rough`, `_estimate_msg_budget_tokens` on `json.loads`).

    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).expect("test JSON")
    }

    fn r(s: &str) -> u64 {
        match v(s) {
            Value::Array(msgs) => rough(&msgs),
            _ => panic!("test input is a list"),
        }
    }

    fn e(s: &str) -> u64 {
        budget(&v(s))
    }

    #[test]
    fn rough_counts_code_points_of_python_str() {
        // Astral, combining and zero-width characters count one each.
        assert_eq!(
            r(r#"[{"role":"user","content":"héllo 😀 e\u0301 a\u200bb"}]"#),
            13
        );
        // repr escapes: both quotes present, backslash, controls, U+00A0, U+200B.
        let s = r#"[{"role":"user","content":"it's \"q\" \\ \n\t\u0007\u007f\u00a0\u200b\ud83d\ude00"}]"#;
        assert_eq!(r(s), 17);
        assert_eq!(r("[]"), 0);
    }

    #[test]
    fn rough_takes_the_ceiling_once_over_the_sum() {
        // 33 + 33 characters: 17, not 9 + 9.
        let s = r#"[{"role":"user","content":"abc"},{"role":"user","content":"def"}]"#;
        assert_eq!(r(s), 17);
    }

    #[test]
    fn rough_blanks_images_and_charges_1500_each() {
        let s = r#"[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"input_image","image_url":"x"},{"type":"image","source":{"data":"QUJD"}},"raw",7]}]"#;
        assert_eq!(r(s), 4553);
        // Stashed Anthropic blocks: dropped from the text, only `image` counts.
        let s = r#"[{"role":"assistant","content":"x","_anthropic_content_blocks":[{"type":"image","source":{}},{"type":"image_url"},{"type":"text","text":"t"}]}]"#;
        assert_eq!(r(s), 1510);
    }

    #[test]
    fn rough_multimodal_envelope_counts_its_summary_and_two_image_types() {
        let s = r#"[{"role":"tool","tool_call_id":"c1","content":{"_multimodal":true,"content":[{"type":"image","x":1},{"type":"image_url"},{"type":"input_image"},{"type":"text","text":"hi"}],"text_summary":"shot of \u00e9"}}]"#;
        assert_eq!(r(s), 3016);
        // Truthy 1 without a summary: ''.
        assert_eq!(
            r(r#"[{"role":"tool","content":{"_multimodal":1,"content":[]}}]"#),
            8
        );
        // Falsy flag: the whole envelope is text and its image is not counted.
        let s = r#"[{"role":"tool","content":{"_multimodal":0,"content":[{"type":"image"}],"text_summary":"s"}}]"#;
        assert_eq!(r(s), 25);
    }

    #[test]
    fn rough_non_object_messages_and_python_numbers() {
        assert_eq!(r(r#"["abc", 5, null, [1, "x"], 1E2]"#), 6);
        // 1E2 -> 100.0, 1e400 -> inf, -0 -> 0, big ints whole, 1.5e+300, 0.0001, 1e-05, 1e+16.
        let s = r#"[{"role":"user","content":1E2,"n":1e400,"m":-0,"b":123456789012345678901234567890,"f":1.5e300,"g":0.0001,"h":1e-5,"k":1e16,"t":true,"z":null}]"#;
        assert_eq!(r(s), 41);
    }

    #[test]
    fn rough_unhashable_type_is_no_image_h1() {
        // hermes raises TypeError (a list in a set test); H1: not an image, so the part
        // stays as text: len(str(msg)) = 82.
        let s = r#"[{"role":"user","content":[{"type":["image"]},{"type":"text","text":"hi"}]}]"#;
        assert_eq!(r(s), 21);
        // In an envelope: '' for the content, and only the `image` part counts.
        let s = r#"[{"role":"tool","content":{"_multimodal":true,"content":[{"type":{"a":1}},{"type":"image"}]}}]"#;
        assert_eq!(r(s), 8 + 1500);
    }

    #[test]
    fn budget_string_content() {
        assert_eq!(
            e(r#"{"role":"user","content":"héllo 😀 e\u0301 a\u200bb"}"#),
            13
        );
        let s = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(41));
        assert_eq!(e(&s), 20);
    }

    #[test]
    fn budget_falsy_content_counts_nothing() {
        for c in [
            "",
            r#","content":0"#,
            r#","content":false"#,
            r#","content":[]"#,
            r#","content":{}"#,
        ] {
            assert_eq!(e(&format!(r#"{{"role":"user"{c}}}"#)), 10, "{c}");
        }
    }

    #[test]
    fn budget_other_content_counts_its_python_str() {
        assert_eq!(e(r#"{"role":"user","content":1E2}"#), 11); // "100.0"
        assert_eq!(e(r#"{"role":"user","content":true}"#), 11); // "True"
        assert_eq!(
            e(r#"{"role":"user","content":123456789012345678901234567890}"#),
            17
        );
        assert_eq!(e(r#"{"role":"user","content":1e400}"#), 10); // "inf"
                                                                 // A multimodal envelope counts its whole str(), base64 included.
        let s = r#"{"role":"tool","content":{"_multimodal":true,"content":[{"type":"image","source":{"data":"QUJDRA=="}}],"text_summary":"s"}}"#;
        assert_eq!(e(s), 36);
    }

    #[test]
    fn budget_list_parts() {
        let s = r#"{"role":"user","content":["abcd",5,null,true,[1,"x"],1.5,{"type":"text","text":"héllo"},{"type":"image_url"},{"type":"input_image"},{"type":"image"},{"type":"other"},{"text":null},{"text":""},{"text":[1,2,3]},{"text":{"a":1,"b":2}}]}"#;
        assert_eq!(e(s), 4818);
    }

    #[test]
    fn budget_non_string_text_is_empty_h1() {
        // hermes raises TypeError on len(12345); H1 counts "" (else this would be 12).
        assert_eq!(
            e(r#"{"role":"user","content":[{"type":"text","text":12345},"abcd"]}"#),
            11
        );
        assert_eq!(
            e(r#"{"role":"user","content":[{"type":"text","text":true},"abcd"]}"#),
            11
        );
        // An unhashable type is not an image: its text counts.
        assert_eq!(
            e(r#"{"role":"user","content":[{"type":{"k":1},"text":"abcdefgh"}]}"#),
            12
        );
    }

    #[test]
    fn budget_counts_object_tool_calls_whole() {
        let s = r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"ls\"}"}},"junk",5,{"id":"c2","function":null,"index":0,"extra_content":{"g":1.0}}]}"#;
        assert_eq!(e(s), 53);
        // A string or an object iterates without objects; a number raises in hermes (H1).
        assert_eq!(
            e(r#"{"role":"assistant","content":null,"tool_calls":"abc"}"#),
            10
        );
        assert_eq!(
            e(r#"{"role":"assistant","content":null,"tool_calls":{"a":1}}"#),
            10
        );
        assert_eq!(
            e(r#"{"role":"assistant","content":null,"tool_calls":7}"#),
            10
        );
    }

    #[test]
    fn budget_replay_fields() {
        let s = r#"{"role":"assistant","content":"x","reasoning":"think ü","reasoning_content":0,"reasoning_details":false,"codex_reasoning_items":[{"z":1,"a":"é","m":[1.5,1E2,null]}],"codex_message_items":""}"#;
        assert_eq!(e(s), 23);
        // sort_keys at every level, control characters escaped, 1e400 is Infinity.
        let s = r#"{"role":"assistant","reasoning":null,"reasoning_content":{"b":{"y":1,"x":2},"a":"\u0001\n"},"reasoning_details":1e400}"#;
        assert_eq!(e(s), 22);
        assert_eq!(
            e(r#"{"role":"assistant","reasoning":true, "codex_message_items": 12345}"#),
            12
        );
    }

    #[test]
    fn budget_of_a_non_object_message_is_the_overhead() {
        // hermes would raise (no `.get` on a list or string); counted as an empty message.
        assert_eq!(budget(&v(r#"["x"]"#)), 10);
        assert_eq!(budget(&v(r#""a long string message""#)), 10);
    }
}
