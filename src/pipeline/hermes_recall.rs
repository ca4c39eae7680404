//! `/v1/hermes/recall`: search hermes-agent messages that a compaction took out of the
//! context (`compactd_core::recall`, the ranking `/v1/recall` uses).
//!
//! hermes keeps no compacted messages in its list, so the client sends the ones it kept
//! aside (the compactd hermes plugin archives what each compaction summarized) and every
//! message sent is searched. A match names the message by its index in `messages`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use compactd_core::recall::{search, Document, MAX_LIMIT};
use compactd_core::session::error::strip_position;
use compactd_core::session::{InputError, Violation};

use super::recall::DEFAULT_LIMIT;

/// The body of `/v1/hermes/recall`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct HermesRecallRequest {
    /// OpenAI chat-completions messages, as hermes keeps them.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// The words or identifiers to search for.
    pub q: Option<String>,
    /// Matches to answer (1–50) [5].
    pub limit: Option<u64>,
}

/// The answer of `/v1/hermes/recall`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HermesRecallAnswer {
    pub query: String,
    /// Messages searched (those with text).
    pub searched: usize,
    /// Best first.
    pub matches: Vec<HermesRecallMatch>,
}

/// One matching message.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HermesRecallMatch {
    /// Its index in `messages`.
    pub index: usize,
    /// The message's `role` (`user`, `assistant`, `tool`, `system`; `other` for any
    /// other value).
    pub role: &'static str,
    /// A tool result's tool, from the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The best matching passage, verbatim: at most 320 characters, cut at words (`…`
    /// where cut), secrets redacted.
    pub excerpt: String,
    /// BM25 (higher is better), 4 decimals.
    pub score: f64,
}

/// Reads a body with at most `max_messages` messages (413 past it): a syntax error has
/// its line and column, anything else a pointer.
pub fn parse_recall_request(
    bytes: &[u8],
    max_messages: usize,
) -> Result<HermesRecallRequest, InputError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let req: HermesRecallRequest =
        serde_path_to_error::deserialize(&mut de).map_err(InputError::from_deserialize)?;
    de.end().map_err(|e| InputError::Malformed {
        message: strip_position(&e.to_string()).to_string(),
        line: e.line(),
        column: e.column(),
    })?;
    if req.messages.len() > max_messages {
        return Err(super::hermes::too_many_messages(max_messages));
    }
    Ok(req)
}

fn invalid(pointer: &str, message: &str) -> InputError {
    InputError::invalid(Violation {
        pointer: pointer.into(),
        message: message.into(),
        line: None,
    })
}

/// Searches every message of the request.
pub fn recall_messages(req: &HermesRecallRequest) -> Result<HermesRecallAnswer, InputError> {
    let query = req
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| {
            invalid(
                "/q",
                "`q` is required: the words or identifiers to search for",
            )
        })?;
    let limit = req.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT as u64 {
        return Err(invalid(
            "/limit",
            &format!("`limit` must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let ids: Vec<String> = (0..req.messages.len()).map(|i| i.to_string()).collect();
    let tools = tool_names(&req.messages);
    let docs: Vec<Document<'_>> = req
        .messages
        .iter()
        .zip(&ids)
        .filter_map(|(m, id)| document(m, id, &tools))
        .collect();
    let matches = search(&docs, query, limit as usize)
        .into_iter()
        .map(|h| HermesRecallMatch {
            // The ids are the indexes written above.
            index: h.entry_id.parse().unwrap_or_default(),
            role: h.role,
            tool_name: h.tool_name,
            excerpt: h.excerpt,
            score: h.score,
        })
        .collect();
    Ok(HermesRecallAnswer {
        query: query.to_string(),
        searched: docs.len(),
        matches,
    })
}

/// The tool each call id names, from the assistants' `tool_calls`.
fn tool_names(messages: &[Value]) -> HashMap<&str, &str> {
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .filter_map(|c| {
            let id = c.get("id")?.as_str()?;
            let name = c.get("function")?.get("name")?.as_str()?;
            Some((id, name))
        })
        .collect()
}

fn document<'a>(m: &'a Value, id: &'a str, tools: &HashMap<&str, &str>) -> Option<Document<'a>> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => "user",
        Some("assistant") => "assistant",
        Some("tool") => "tool",
        Some("system") => "system",
        _ => "other",
    };
    let text = message_text(m);
    if text.trim().is_empty() {
        return None;
    }
    let tool_name = (role == "tool")
        .then(|| m.get("tool_call_id").and_then(Value::as_str))
        .flatten()
        .and_then(|id| tools.get(id))
        .map(|n| n.to_string());
    Some(Document {
        entry_id: id,
        role,
        tool_name,
        text,
    })
}

/// The content's text (a string, or the text parts and strings of a list), then each tool
/// call as `name(arguments)`; images are not searched.
fn message_text(m: &Value) -> Cow<'_, str> {
    let calls = m.get("tool_calls").and_then(Value::as_array);
    if let (Some(Value::String(s)), None) = (m.get("content"), calls) {
        return Cow::Borrowed(s);
    }
    let mut out = String::new();
    let mut push = |piece: &str| {
        if !piece.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(piece);
        }
    };
    match m.get("content") {
        Some(Value::String(s)) => push(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p {
                    Value::String(s) => push(s),
                    Value::Object(o) => {
                        if let Some(Value::String(t)) = o.get("text") {
                            push(t);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    for c in calls.into_iter().flatten() {
        let f = c.get("function");
        let name = f.and_then(|f| f.get("name")).and_then(Value::as_str);
        let args: Cow<'_, str> = match f.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => Cow::Borrowed(s),
            Some(v) => Cow::Owned(v.to_string()),
            None => Cow::Borrowed(""),
        };
        push(&format!("{}({args})", name.unwrap_or("?")));
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(messages: Value, q: &str) -> HermesRecallRequest {
        serde_json::from_value(json!({"messages": messages, "q": q})).unwrap()
    }

    #[test]
    fn finds_tool_results_by_identifier_with_their_tool() {
        let req = request(
            json!([
                {"role": "user", "content": "fix the flaky test"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"cargo test\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "error[E0502]: cannot borrow `cache` as mutable"},
                {"role": "user", "content": [{"type": "text", "text": "now the docs"}, {"type": "image_url", "image_url": {"url": "https://x"}}]}
            ]),
            "E0502",
        );
        let a = recall_messages(&req).unwrap();
        assert_eq!(a.searched, 4);
        assert_eq!(a.matches.len(), 1);
        assert_eq!(a.matches[0].index, 2);
        assert_eq!(a.matches[0].role, "tool");
        assert_eq!(a.matches[0].tool_name.as_deref(), Some("terminal"));
        assert!(a.matches[0].excerpt.contains("E0502"));
        // Tool calls are searched by their arguments.
        let a = recall_messages(&request(req.messages.clone().into(), "cargo")).unwrap();
        assert_eq!(a.matches[0].index, 1);
    }

    #[test]
    fn refuses_a_missing_query_and_a_limit_out_of_range() {
        let mut req = request(json!([{"role": "user", "content": "x"}]), "  ");
        let e = recall_messages(&req).unwrap_err();
        assert!(format!("{e:?}").contains("/q"), "{e:?}");
        req.q = Some("x".into());
        req.limit = Some(51);
        let e = recall_messages(&req).unwrap_err();
        assert!(format!("{e:?}").contains("/limit"), "{e:?}");
    }

    #[test]
    fn a_syntax_error_has_its_line_and_a_wrong_type_its_pointer() {
        match parse_recall_request(b"{\"messages\": [\n  {]}", 10) {
            Err(InputError::Malformed { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
        let e = parse_recall_request(br#"{"messages": 5, "q": "x"}"#, 10).unwrap_err();
        assert!(format!("{e:?}").contains("/messages"), "{e:?}");
    }
}
