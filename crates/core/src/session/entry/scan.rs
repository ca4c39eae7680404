//! The fast path of entry parsing: the fields the core reads, read with the strict
//! [`Lexer`], producing exactly what serde_json would for the same text.
//!
//! The lexer accepts a conservative subset of JSON; on top of it this reader gives up
//! (`None`) on what serde's derived types would treat differently: duplicate fields,
//! escaped type names, content that is neither a string, an array nor null, ... The
//! serde_json path (`parse`) then decides, and stays the single source of parse
//! results and error messages for such input.

use std::borrow::Cow;

use super::raw::{ContentField, RawEntry, RawMessage};
use super::{Block, RawJson, ToolCall, Usage};
use crate::json::Lexer;
use crate::session::text::Text;

/// Reads one entry into `r` (an empty one), or `None` when the serde_json path must
/// decide (`r` is then partly filled, and dropped). In place, not returned: the raw
/// entry is about 500 bytes, and each move of it was a `memcpy` call per line.
/// `controls`: whether `raw` holds a byte below 0x20, when the caller knows.
pub(super) fn entry<'a>(
    raw: &'a str,
    controls: Option<bool>,
    r: &mut RawEntry<'a, RawMessage<'a>, ContentField<'a>>,
) -> Option<()> {
    let mut lx = Lexer::strict_hinted(raw, controls);
    lx.ws();
    if lx.peek() != Some(b'{') {
        return None;
    }
    let mut seen = Seen(0);
    lx.object(|lx, key| {
        match key {
            "type" => {
                seen.once(0)?;
                r.entry_type = plain_str(lx)?;
            }
            "id" => raw_once(lx, &mut seen, 1, &mut r.id)?,
            "parentId" => raw_once(lx, &mut seen, 2, &mut r.parent_id)?,
            "timestamp" => raw_once(lx, &mut seen, 3, &mut r.timestamp)?,
            "message" => {
                seen.once(4)?;
                message(lx, &mut r.message)?;
            }
            "content" => {
                seen.once(5)?;
                r.content = content(lx)?;
            }
            "summary" => raw_once(lx, &mut seen, 6, &mut r.summary)?,
            "details" => raw_once(lx, &mut seen, 7, &mut r.details)?,
            "fromHook" => raw_once(lx, &mut seen, 8, &mut r.from_hook)?,
            "firstKeptEntryId" => raw_once(lx, &mut seen, 9, &mut r.first_kept_entry_id)?,
            "firstKeptEntryIndex" => raw_once(lx, &mut seen, 10, &mut r.first_kept_entry_index)?,
            "tokensBefore" => raw_once(lx, &mut seen, 11, &mut r.tokens_before)?,
            "version" => raw_once(lx, &mut seen, 12, &mut r.version)?,
            _ => lx.skip_value()?,
        }
        Some(())
    })?;
    lx.at_end().then_some(())
}

/// The value of field `name` of a JSON object given as valid JSON text (`Some(None)`
/// when absent or null), or `None` when serde_json must decide (not an object, a
/// duplicate `name`, a key with escapes). The text was validated when its entry was
/// parsed, so the lexer runs in trusted mode: no control-byte pass over it, and the
/// surrogate escapes and deep nesting a parser accepted are walked, not given up on.
pub(crate) fn field<'a>(object: &'a str, name: &[u8]) -> Option<Option<RawJson<'a>>> {
    let mut lx = Lexer::trusted(object);
    lx.ws();
    if lx.peek()? != b'{' {
        return None;
    }
    let mut seen = Seen(0);
    let mut value = None;
    lx.object(|lx, key| {
        if key.as_bytes() == name {
            raw_once(lx, &mut seen, 0, &mut value)
        } else {
            lx.skip_value()
        }
    })?;
    lx.at_end().then_some(value)
}

/// Fields already read in an object: a repeated known field is an error for serde.
struct Seen(u32);

impl Seen {
    fn once(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

/// Digits only, at most 15 of them: the value serde_json's `u64` read gives, exactly.
fn small_integer(s: &str) -> Option<f64> {
    if s.is_empty() || s.len() > 15 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().map(|n| n as f64)
}

/// A value kept as raw text: `Some(None)` for `null` (serde's `Option` reads it as
/// absent), `None` to give up.
fn raw<'a>(lx: &mut Lexer<'a>) -> Option<Option<RawJson<'a>>> {
    if lx.peek()? == b'n' {
        lx.literal(b"null")?;
        return Some(None);
    }
    lx.value_text().map(|t| Some(RawJson(t)))
}

/// A field read once as raw text (`bit` marks it seen).
fn raw_once<'a>(
    lx: &mut Lexer<'a>,
    seen: &mut Seen,
    bit: u32,
    slot: &mut Option<RawJson<'a>>,
) -> Option<()> {
    seen.once(bit)?;
    *slot = raw(lx)?;
    Some(())
}

/// A string serde would borrow (no escapes), or null.
fn plain_str<'a>(lx: &mut Lexer<'a>) -> Option<Option<Cow<'a, str>>> {
    match lx.peek()? {
        b'n' => lx.literal(b"null").map(|()| None),
        b'"' => match lx.string()? {
            (s, false) => Some(Some(Cow::Borrowed(s))),
            (_, true) => None,
        },
        _ => None,
    }
}

fn text<'a>(lx: &mut Lexer<'a>) -> Option<Text<'a>> {
    Some(match lx.string()? {
        (s, false) => Text::Plain(Cow::Borrowed(s)),
        // The same characters serde would decode (the lexer took no surrogates).
        (s, true) => Text::Escaped(s),
    })
}

/// `message`: an object or null, read into `slot` (in place, as `entry`).
fn message<'a>(lx: &mut Lexer<'a>, slot: &mut Option<RawMessage<'a>>) -> Option<()> {
    match lx.peek()? {
        b'n' => return lx.literal(b"null"),
        b'{' => {}
        // serde would read a struct from an array, or fail: its call.
        _ => return None,
    }
    let start = lx.pos();
    let m = slot.insert(RawMessage::empty());
    let mut seen = Seen(0);
    lx.object(|lx, key| {
        match key {
            "role" => raw_once(lx, &mut seen, 0, &mut m.role)?,
            "content" => {
                seen.once(1)?;
                m.content = content(lx)?;
            }
            "usage" => {
                seen.once(2)?;
                (m.usage, m.usage_fast) = usage(lx)?;
            }
            "stopReason" => raw_once(lx, &mut seen, 3, &mut m.stop_reason)?,
            "command" => raw_once(lx, &mut seen, 4, &mut m.command)?,
            "output" => raw_once(lx, &mut seen, 5, &mut m.output)?,
            "exitCode" => raw_once(lx, &mut seen, 6, &mut m.exit_code)?,
            "cancelled" => raw_once(lx, &mut seen, 7, &mut m.cancelled)?,
            "truncated" => raw_once(lx, &mut seen, 8, &mut m.truncated)?,
            "fullOutputPath" => raw_once(lx, &mut seen, 9, &mut m.full_output_path)?,
            "excludeFromContext" => raw_once(lx, &mut seen, 10, &mut m.exclude_from_context)?,
            "summary" => raw_once(lx, &mut seen, 11, &mut m.summary)?,
            _ => lx.skip_value()?,
        }
        Some(())
    })?;
    // The text `field(entry, b"message")` would find: kept so the answer need not
    // re-read the entry for it (`Entry::message_text`).
    m.text = Some(RawJson(&lx.text()[start..lx.pos()]));
    Some(())
}

/// `usage`, kept raw, and read here when it is an object whose token counts are all
/// null, absent or plain integers (exact in an f64). Anything else is left to the
/// serde_json read of the raw text (errors included).
fn usage<'a>(lx: &mut Lexer<'a>) -> Option<(Option<RawJson<'a>>, Option<Usage>)> {
    let start = lx.pos();
    if lx.peek()? != b'{' {
        return Some((raw(lx)?, None));
    }
    let mut u = Usage::default();
    let mut exact = true;
    let mut seen = Seen(0);
    lx.object(|lx, key| {
        let (bit, slot) = match key {
            "input" => (0, &mut u.input),
            "output" => (1, &mut u.output),
            "cacheRead" => (2, &mut u.cache_read),
            "cacheWrite" => (3, &mut u.cache_write),
            "totalTokens" => (4, &mut u.total_tokens),
            _ => return lx.skip_value(),
        };
        exact &= seen.once(bit).is_some();
        match raw(lx)? {
            Some(n) => match small_integer(n.get()) {
                Some(v) => *slot = v,
                None => exact = false,
            },
            None => *slot = 0.0,
        }
        Some(())
    })?;
    let raw = RawJson(&lx.text()[start..lx.pos()]);
    Some((Some(raw), exact.then_some(u)))
}

/// `content`: a string, an array of blocks, or null. Blocks come out checked
/// ([`ContentField::Checked`]): one vector per message, no raw blocks to convert.
fn content<'a>(lx: &mut Lexer<'a>) -> Option<Option<ContentField<'a>>> {
    match lx.peek()? {
        b'n' => lx.literal(b"null").map(|()| None),
        b'"' => text(lx).map(|t| Some(ContentField::Text(t))),
        b'[' => {
            let mut blocks = Vec::with_capacity(2);
            lx.array(|lx| {
                blocks.push(block(lx)?);
                Some(())
            })?;
            Some(Some(ContentField::Checked(blocks)))
        }
        _ => None,
    }
}

/// A block field that must be a string for the block to be read here.
#[derive(Default)]
enum StrField<'a> {
    #[default]
    Absent,
    Str(Text<'a>),
    /// Any other value (null included): the serde path decides what that means.
    Other,
}

impl<'a> StrField<'a> {
    fn read(lx: &mut Lexer<'a>, seen: &mut Seen, bit: u32, slot: &mut Self) -> Option<()> {
        seen.once(bit)?;
        *slot = if lx.peek()? == b'"' {
            StrField::Str(text(lx)?)
        } else {
            lx.skip_value()?;
            StrField::Other
        };
        Some(())
    }

    fn text(self) -> Option<Text<'a>> {
        match self {
            StrField::Str(t) => Some(t),
            _ => None,
        }
    }
}

/// One element of a content array, as an assistant message reads it: objects are
/// blocks, the rest is [`Block::Other`]. A block whose reading could fail (a text block
/// without a string `text`, a tool call without a string `name` or with null or absent
/// `arguments`, ...) is left to the serde path with all its error reporting (`None`):
/// a role that reads it differently (a user message sees only text and images, and
/// a text block without text as empty) would otherwise need the raw fields kept.
fn block<'a>(lx: &mut Lexer<'a>) -> Option<Block<'a>> {
    match lx.peek()? {
        b'{' => {}
        b'"' | b'[' | b't' | b'f' | b'n' => return lx.skip_value().map(|()| Block::Other),
        // serde would decode a number here (and fail on one out of range).
        _ => return None,
    }
    let mut block_type = None;
    let (mut text, mut thinking, mut name) = Default::default();
    let mut arguments = None;
    let mut seen = Seen(0);
    lx.object(|lx, key| {
        match key {
            "type" => raw_once(lx, &mut seen, 0, &mut block_type)?,
            "text" => StrField::read(lx, &mut seen, 1, &mut text)?,
            "thinking" => StrField::read(lx, &mut seen, 2, &mut thinking)?,
            "name" => StrField::read(lx, &mut seen, 3, &mut name)?,
            "arguments" => raw_once(lx, &mut seen, 4, &mut arguments)?,
            _ => lx.skip_value()?,
        }
        Some(())
    })?;
    Some(match block_type.map(RawJson::get) {
        Some("\"text\"") => Block::Text(text.text()?),
        Some("\"thinking\"") => Block::Thinking(thinking.text()?),
        Some("\"toolCall\"") => Block::ToolCall(ToolCall {
            name: name.text()?,
            // `raw` reads null as absent.
            arguments: arguments?,
        }),
        Some("\"image\"") => Block::Image,
        _ => Block::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scanner's reading, returned.
    fn entry(json: &str) -> Option<RawEntry<'_, RawMessage<'_>, ContentField<'_>>> {
        let mut r = RawEntry::empty();
        super::entry(json, None, &mut r).map(|()| r)
    }

    /// The fast path either gives up or agrees with serde_json.
    fn agrees(json: &str) -> bool {
        let fast = entry(json);
        let slow = serde_json::from_str::<RawEntry<RawMessage, ContentField>>(json);
        match (fast, slow) {
            (None, _) => false,
            (Some(_), Err(e)) => panic!("fast path accepted what serde rejects ({e}): {json}"),
            (Some(f), Ok(s)) => {
                assert_eq!(format!("{:?}", Dbg(&f)), format!("{:?}", Dbg(&s)), "{json}");
                true
            }
        }
    }

    struct Dbg<'r, 'a>(&'r RawEntry<'a, RawMessage<'a>, ContentField<'a>>);

    impl std::fmt::Debug for Dbg<'_, '_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let r = self.0;
            let content = |c: &Option<ContentField>| match c {
                None => "-".to_string(),
                Some(ContentField::Null) => "null".to_string(),
                Some(ContentField::Text(t)) => format!("text {:?}", t.decode()),
                // The serde path's blocks, read as the scanner reads them.
                Some(ContentField::Blocks(b)) => {
                    b.0.iter()
                        .map(|b| {
                            let Some(b) = b else {
                                return "Other".to_string();
                            };
                            fn s(r: Option<RawJson<'_>>) -> Option<Text<'_>> {
                                r.and_then(|r| Text::from_raw(r.get()))
                            }
                            let block = match b.block_type.map(RawJson::get) {
                                Some("\"text\"") => s(b.text).map(Block::Text),
                                Some("\"thinking\"") => s(b.thinking).map(Block::Thinking),
                                Some("\"toolCall\"") => s(b.name)
                                    .zip(b.arguments.filter(|a| a.get() != "null"))
                                    .map(|(name, arguments)| {
                                        Block::ToolCall(ToolCall { name, arguments })
                                    }),
                                Some("\"image\"") => Some(Block::Image),
                                _ => Some(Block::Other),
                            };
                            block.map_or("left to serde".to_string(), |b| format!("{b:?}"))
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                }
                Some(ContentField::Checked(b)) => b
                    .iter()
                    .map(|b| format!("{b:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            write!(
                f,
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} content {}",
                r.entry_type,
                r.id,
                r.parent_id,
                r.timestamp,
                r.summary,
                r.details,
                r.from_hook,
                r.first_kept_entry_id,
                r.first_kept_entry_index,
                r.tokens_before,
                r.version,
                r.message.is_some(),
                content(&r.content),
            )?;
            if let Some(m) = &r.message {
                write!(
                    f,
                    " message {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} content {}",
                    m.role,
                    m.usage,
                    m.stop_reason,
                    m.command,
                    m.output,
                    m.exit_code,
                    m.cancelled,
                    m.truncated,
                    m.full_output_path,
                    m.exclude_from_context,
                    m.summary,
                    content(&m.content),
                )?;
            }
            Ok(())
        }
    }

    #[test]
    fn accepts_what_serde_accepts_with_the_same_fields() {
        for json in [
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"text","text":"hi\n\"there\"\\ \u00e9 \/"},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"x","n":[1,-2.5e+3,0,true,false,null,{}]}},"junk",[1,[2]],{"type":"future"},true,null],"usage":{"input":1,"output":2},"stopReason":"stop"}}"#,
            " {\"type\" : \"x\" , \"content\" : \"a\\tb\" , \"odd\" : [ ] }\t\r\n",
            "{\"type\":\"x\",\n  \"summary\": \"two\",\n  \"details\": {\"a\": \"b\"}}",
            r#"{"type":null,"message":null,"content":null,"version":3,"fromHook":false}"#,
            r#"{}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":0,"cancelled":false}}"#,
        ] {
            assert!(agrees(json), "fast path gave up on {json}");
        }
    }

    /// Lines of the conformance corpus, mutated at random: whatever the scanner accepts,
    /// serde_json accepts with the same fields.
    #[test]
    fn mutated_corpus_lines_agree_with_serde() {
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut accepted, mut total) = (0, 0);
        for line in &crate::json::mutations::corpus_lines() {
            assert!(agrees(line) || entry(line).is_none());
            for _ in 0..8 {
                let edits = rng.usize(1..4);
                let Some(m) = crate::json::mutations::mutate(line, edits, &mut rng) else {
                    continue;
                };
                total += 1;
                accepted += usize::from(agrees(&m));
            }
        }
        assert!(accepted > total / 20, "{accepted} of {total}");
    }

    #[test]
    fn gives_up_on_anything_unusual() {
        for json in [
            r#"[1]"#,
            r#"{"type":"a","type":"b"}"#,
            r#"{"id":null,"id":"x"}"#,
            r#"{"type":"a\u0062"}"#,
            r#"{"t\u0079pe":"a"}"#,
            r#"{"content":"\ud83d\ude00"}"#,
            r#"{"x":"\ud800"}"#,
            "{\"content\":\"a\tb\"}",
            "{\"x\":\"a\u{1}b\"}",
            r#"{"x":01}"#,
            r#"{"x":1.}"#,
            r#"{"x":-}"#,
            r#"{"x":1e}"#,
            r#"{"x":"\x"}"#,
            r#"{"x":"\u12"}"#,
            r#"{"x":"unterminated}"#,
            r#"{"x":1,}"#,
            r#"{"x":[1,]}"#,
            r#"{"x":tru}"#,
            r#"{"x":1} x"#,
            r#"{"x":1"#,
            r#"{"content":5}"#,
            r#"{"content":[1]}"#,
            r#"{"message":[]}"#,
            r#"{"message":{"role":"a","role":"b"}}"#,
            r#"{"message":{"content":[{"text":"a","text":"b"}]}}"#,
            // Blocks some role could fail on: the serde path reads them.
            r#"{"message":{"content":[{"type":"text"}]}}"#,
            r#"{"message":{"content":[{"type":"text","text":null}]}}"#,
            r#"{"message":{"content":[{"type":"thinking","thinking":5}]}}"#,
            r#"{"message":{"content":[{"type":"toolCall","name":"r"}]}}"#,
            r#"{"message":{"content":[{"type":"toolCall","name":"r","arguments":null}]}}"#,
            r#"{"message":{"content":[{"type":"toolCall","arguments":{}}]}}"#,
        ] {
            assert!(entry(json).is_none(), "fast path accepted {json}");
        }
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(entry(&deep).is_none());
    }

    #[test]
    fn fields_of_valid_text_are_found_past_surrogates_and_deep_values() {
        let deep = format!(
            r#"{{"x":{}{},"s":"\ud800","path":"p\ud83d\ude00"}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(
            field(&deep, b"path"),
            Some(Some(RawJson(r#""p\ud83d\ude00""#)))
        );
        assert_eq!(field(r#"{"path":1,"path":2}"#, b"path"), None);
        assert_eq!(field(r#"{"a":1,"path":null}"#, b"path"), Some(None));
        assert_eq!(field(r#"{"a":1}"#, b"path"), Some(None));
    }
}
