//! Historical media stripping (`_strip_historical_media`, hermes 0.19.0 612): images
//! older than the newest user message with an image become a short text part, so a
//! compacted session stops re-sending them.

use serde_json::{Map, Value};

use super::API_CONTENT_KEY;
use crate::message;

/// What an image older than the newest user image becomes.
pub(super) const IMAGE_STRIPPED: &str = "[Attached image — stripped after compression]";

/// `_strip_historical_media`: images in messages before the newest user message with an
/// image become a text placeholder (their `api_content` dropped).
pub(super) fn strip_historical_media(out: &mut [(Value, Option<usize>)]) {
    let has_images = |m: &Value| match m.get("content") {
        Some(Value::Array(parts)) => parts.iter().any(message::is_image_part),
        _ => false,
    };
    let anchor = out
        .iter()
        .rposition(|(m, _)| m.get("role").and_then(Value::as_str) == Some("user") && has_images(m));
    let Some(anchor) = anchor.filter(|&a| a > 0) else {
        return;
    };
    for (msg, _) in &mut out[..anchor] {
        if !has_images(msg) {
            continue;
        }
        let Some(map) = msg.as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(parts)) = map.get("content") {
            let parts = parts
                .iter()
                .map(|p| {
                    if message::is_image_part(p) {
                        text_part(IMAGE_STRIPPED)
                    } else {
                        p.clone()
                    }
                })
                .collect();
            map.insert("content".into(), Value::Array(parts));
        }
        map.shift_remove(API_CONTENT_KEY);
    }
}

/// A `{"type": "text", "text": …}` part.
pub(super) fn text_part(text: &str) -> Value {
    let mut part = Map::new();
    part.insert("type".into(), Value::String("text".into()));
    part.insert("text".into(), Value::String(text.into()));
    Value::Object(part)
}
