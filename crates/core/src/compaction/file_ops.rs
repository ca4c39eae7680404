//! Files the summarized work read and modified, tracked across compactions.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::session::entry::{scan, value_of, RawJson};
use crate::session::{Block, Content, Role};

use super::message::AgentMessage;

/// The key and value that mark the `details` compactd writes: another extension's hook
/// entries keep pi's rule, compactd's own carry their file lists on (D7).
pub const PRODUCER_KEY: &str = "producer";
pub const PRODUCER: &str = "compactd";

/// Whether compactd wrote these `details`: they carry its mark, or (entries written before
/// the mark existed) its pinned ledger, `{"version": <integer>, "items": [...]}`.
fn written_by_compactd(details: &serde_json::Map<String, Value>) -> bool {
    if details.get(PRODUCER_KEY).and_then(Value::as_str) == Some(PRODUCER) {
        return true;
    }
    matches!(
        details.get("pinned"),
        Some(Value::Object(p)) if p.get("version").is_some_and(Value::is_u64)
            && p.get("items").is_some_and(Value::is_array)
    )
}

#[derive(Debug, Default, Clone)]
pub struct FileOps {
    pub read: HashSet<String>,
    pub written: HashSet<String>,
    pub edited: HashSet<String>,
}

/// `details` of a compaction or branch summary: the cumulative file lists. (Its OpenAPI
/// schema belongs to the HTTP layer: `http/schemas.rs`.)
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileLists {
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
}

impl FileOps {
    /// pi's `extractFileOpsFromMessage`: `read`/`write`/`edit` tool calls with a string
    /// `path` argument.
    pub(crate) fn add_message(&mut self, msg: AgentMessage) {
        let Some(m) = msg.stored() else { return };
        if m.role != Role::Assistant {
            return;
        }
        let Content::Blocks(blocks) = &m.content else {
            return;
        };
        for b in blocks {
            let Block::ToolCall(call) = b else { continue };
            let set = match call.name.decode().as_ref() {
                "read" => &mut self.read,
                "write" => &mut self.written,
                "edit" => &mut self.edited,
                _ => continue,
            };
            if let Some(path) = path_argument(call.arguments) {
                set.insert(path);
            }
        }
    }

    /// Adds the lists a previous compaction or branch summary carries in its `details`
    /// (read → read, modified → edited). pi takes them only from entries it wrote itself
    /// (`fromHook` not `true`); compactd also takes them from a hook entry whose details
    /// it wrote (D7), since through pi's extension hook every compactd entry is one.
    pub(crate) fn add_details(&mut self, details: Option<RawJson>, from_hook: bool) {
        let Some(Value::Object(d)) = details.map(value_of) else {
            return;
        };
        if from_hook && !written_by_compactd(&d) {
            return;
        }
        let strings = |v: Option<&Value>| -> Vec<String> {
            match v {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            }
        };
        self.read.extend(strings(d.get("readFiles")));
        self.edited.extend(strings(d.get("modifiedFiles")));
    }

    /// pi's `computeFileLists`: modified = edited ∪ written; read-only = read − modified;
    /// both sorted by UTF-16 code units, like JavaScript's default sort.
    pub fn lists(&self) -> FileLists {
        let modified: HashSet<&String> = self.edited.iter().chain(&self.written).collect();
        let mut read_files: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        let mut modified_files: Vec<String> = modified.into_iter().cloned().collect();
        read_files.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        modified_files.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        FileLists {
            read_files,
            modified_files,
        }
    }
}

fn path_argument(args: RawJson) -> Option<String> {
    // Only objects have a `path`; skip parsing anything else.
    if !args.get().starts_with('{') {
        return None;
    }
    // Fast path: borrow `path` and skip the rest (edit and write arguments carry whole
    // files). Duplicate keys make both fail; the value parse then keeps the last.
    if let Some(path) = scan::field(args.get(), b"path") {
        let path = path.and_then(|r| crate::session::Text::from_raw(r.get()))?;
        let path = path.decode();
        return (!path.is_empty()).then(|| path.into_owned());
    }
    #[derive(serde::Deserialize)]
    struct PathOnly<'a> {
        #[serde(borrow)]
        path: Option<&'a RawValue>,
    }
    let path = match serde_json::from_str::<PathOnly>(args.get()) {
        Ok(p) => match p.path.and_then(|r| crate::session::Text::from_raw(r.get())) {
            Some(t) => t.decode().into_owned(),
            None => return None,
        },
        Err(_) => match value_of(args) {
            Value::Object(mut m) => match m.swap_remove("path") {
                Some(Value::String(p)) => p,
                _ => return None,
            },
            _ => return None,
        },
    };
    (!path.is_empty()).then_some(path)
}

/// pi's `formatFileOperations`: the tags appended to a summary.
pub fn format_file_lists(lists: &FileLists) -> String {
    let mut sections = Vec::new();
    if !lists.read_files.is_empty() {
        sections.push(format!(
            "<read-files>\n{}\n</read-files>",
            lists.read_files.join("\n")
        ));
    }
    if !lists.modified_files.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            lists.modified_files.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{messages, parse, SessionText};
    use serde_json::{json, Value};

    /// The file lists of assistant messages each calling `(tool, arguments)`.
    fn lists(calls: &[(&str, Value)]) -> FileLists {
        let s = calls.iter().fold(SessionText::new(), |s, (name, args)| {
            s.tool_call(name, args.clone())
        });
        let text = s.jsonl();
        let session = parse(&text);
        let mut ops = FileOps::default();
        for m in messages(&session) {
            ops.add_message(m);
        }
        ops.lists()
    }

    fn file_lists(read: &[&str], modified: &[&str]) -> FileLists {
        FileLists {
            read_files: read.iter().map(|s| s.to_string()).collect(),
            modified_files: modified.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn read_write_and_edit_calls_are_the_file_operations() {
        let got = lists(&[
            ("read", json!({ "path": "r" })),
            ("write", json!({ "path": "w" })),
            ("edit", json!({ "path": "e" })),
            ("bash", json!({ "path": "b" })),
            ("grep", json!({ "path": "g" })),
            ("Read", json!({ "path": "R" })),
        ]);
        assert_eq!(got, file_lists(&["r"], &["e", "w"]));
    }

    #[test]
    fn only_a_non_empty_string_path_argument_counts() {
        let got = lists(&[
            ("read", json!({ "path": 7 })),
            ("read", json!({ "file": "f" })),
            ("read", json!({ "path": "" })),
            ("read", json!(["path"])),
            ("edit", json!({ "path": null })),
        ]);
        assert_eq!(got, FileLists::default());
    }

    #[test]
    fn a_file_read_and_modified_is_listed_as_modified_only() {
        let got = lists(&[
            ("read", json!({ "path": "a" })),
            ("edit", json!({ "path": "a" })),
            ("read", json!({ "path": "b" })),
        ]);
        assert_eq!(got, file_lists(&["b"], &["a"]));
    }

    #[test]
    fn file_lists_are_sorted_by_utf16_code_units_like_javascript() {
        // U+FF61 sorts after U+1F600 by scalar value, before it by UTF-16 units.
        let got = lists(&[
            ("read", json!({ "path": "\u{ff61}" })),
            ("read", json!({ "path": "😀" })),
            ("read", json!({ "path": "B" })),
            ("read", json!({ "path": "a" })),
        ]);
        assert_eq!(got, file_lists(&["B", "a", "😀", "\u{ff61}"], &[]));
    }

    #[test]
    fn only_assistant_tool_calls_count() {
        let call = json!([{ "type": "toolCall", "name": "read", "arguments": { "path": "x" } }]);
        let text = SessionText::new()
            .message(json!({ "role": "user", "content": call }))
            .message(json!({ "role": "toolResult", "toolName": "read", "content": call }))
            .jsonl();
        let session = parse(&text);
        let mut ops = FileOps::default();
        for m in messages(&session) {
            ops.add_message(m);
        }
        assert_eq!(ops.lists(), FileLists::default());
    }

    #[test]
    fn earlier_details_add_read_files_to_read_and_modified_files_to_edited() {
        let text = SessionText::new()
            .entry(
                "compaction",
                json!({
                    "summary": "s", "firstKeptEntryId": "e0", "tokensBefore": 1,
                    "details": { "readFiles": ["r", "both"], "modifiedFiles": ["m", "both", 3] }
                }),
            )
            .jsonl();
        let session = parse(&text);
        let mut ops = FileOps::default();
        ops.add_details(session.entries[0].compaction().unwrap().details, false);
        assert_eq!(ops.edited.len(), 2);
        assert_eq!(ops.lists(), file_lists(&["r"], &["both", "m"]));
    }

    #[test]
    fn file_tags_are_appended_only_when_non_empty() {
        assert_eq!(format_file_lists(&FileLists::default()), "");
        assert_eq!(
            format_file_lists(&file_lists(&["a", "b"], &[])),
            "\n\n<read-files>\na\nb\n</read-files>"
        );
        assert_eq!(
            format_file_lists(&file_lists(&["a"], &["m"])),
            "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nm\n</modified-files>"
        );
    }
}
