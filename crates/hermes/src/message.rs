//! Reading the loosely shaped OpenAI-format messages (contract §1).
//!
//! Messages arrive in every shape providers and hermes itself produce: content as a
//! string, null, absent, a list of parts or an object; roles missing or null; tool
//! calls that are not objects. These accessors answer the questions the rules ask
//! without assuming a shape, and never change a message.

use super::py;
use serde_json::Value;

/// The role, when it is a string (absent, null (H1) and other values give `None`).
pub fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

/// Whether the message has this role.
pub(crate) fn has_role(m: &Value, r: &str) -> bool {
    role(m) == Some(r)
}

/// The `content` value, as it is (absent gives `None`, null gives `Some(Null)`).
pub fn content(m: &Value) -> Option<&Value> {
    m.get("content")
}

/// The tool calls, when `tool_calls` is a non-empty list (hermes's truthiness test); the
/// tests' view of a message.
#[cfg(test)]
pub fn tool_calls(m: &Value) -> &[Value] {
    match m.get("tool_calls") {
        Some(Value::Array(calls)) => calls,
        _ => &[],
    }
}

/// An image part: an object whose `type` is `image`, `image_url` or `input_image`.
pub(crate) fn is_image_part(part: &Value) -> bool {
    matches!(
        part.get("type").and_then(Value::as_str),
        Some("image" | "image_url" | "input_image")
    )
}

/// The text view used for "does this contain …" questions (`_content_text_for_contains`):
/// a string is itself, null or absent is empty, a list joins its non-empty string items
/// and the non-empty string `text` fields of its object items with `\n`, anything else
/// is `str()` of it.
pub(crate) fn text_view(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .filter(|s| !s.is_empty())
                .collect();
            texts.join("\n")
        }
        Some(other) => py::str_of(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_view_follows_hermes() {
        assert_eq!(text_view(None), "");
        assert_eq!(text_view(Some(&json!(null))), "");
        assert_eq!(text_view(Some(&json!("x"))), "x");
        assert_eq!(
            text_view(Some(
                &json!(["a", "", {"type": "text", "text": "b"}, {"text": 5}, 7, {"type": "image_url"}])
            )),
            "a\nb"
        );
        assert_eq!(
            text_view(Some(&json!({"_multimodal": true}))),
            "{'_multimodal': True}"
        );
        assert_eq!(text_view(Some(&json!(0))), "0");
    }

    #[test]
    fn roles_and_calls_tolerate_any_shape() {
        assert_eq!(role(&json!({"role": null})), None);
        assert_eq!(role(&json!({"role": 5})), None);
        assert!(has_role(&json!({"role": "tool"}), "tool"));
        assert!(tool_calls(&json!({"tool_calls": {}})).is_empty());
        assert_eq!(tool_calls(&json!({"tool_calls": [1]})).len(), 1);
        assert!(is_image_part(&json!({"type": "input_image"})));
        assert!(!is_image_part(&json!("image")));
    }
}
