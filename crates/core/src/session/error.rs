//! What can be wrong with a session as sent.

use std::fmt;

/// One problem with one place of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer. For a JSON body it starts at the body (`/entries/3/parentId`); for
    /// JSONL it starts at the line's object and `line` names the line.
    pub pointer: String,
    pub message: String,
    /// 1-based line of a JSONL body.
    pub line: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// Not JSON / not JSONL at all.
    Malformed {
        message: String,
        line: usize,
        column: usize,
    },
    /// Well-formed JSON that is not a valid session.
    Invalid(Vec<Violation>),
    /// More entries than the configured limit; `at` names the first one past it.
    TooManyEntries { limit: usize, at: Violation },
}

/// Where an entry came from, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `entries[index]` of a JSON body.
    JsonEntry { index: usize },
    /// A line of a JSONL body (1-based).
    Line(usize),
}

impl Origin {
    pub fn violation(self, pointer_in_entry: &str, message: impl Into<String>) -> Violation {
        match self {
            Origin::JsonEntry { index } => Violation {
                pointer: format!("/entries/{index}{pointer_in_entry}"),
                message: message.into(),
                line: None,
            },
            Origin::Line(line) => Violation {
                pointer: pointer_in_entry.to_string(),
                message: message.into(),
                line: Some(line),
            },
        }
    }
}

impl InputError {
    pub fn invalid(v: Violation) -> Self {
        InputError::Invalid(vec![v])
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Malformed {
                message,
                line,
                column,
            } => write!(
                f,
                "malformed JSON at line {line}, column {column}: {message}"
            ),
            InputError::TooManyEntries { limit, at } => {
                write!(f, "the session has more than {limit} entries")?;
                match at.line {
                    Some(line) => write!(f, " (line {line} is entry {})", limit + 1),
                    None => write!(f, " ({} is entry {})", at.pointer, limit + 1),
                }
            }
            InputError::Invalid(vs) => {
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    if let Some(line) = v.line {
                        write!(f, "line {line}: ")?;
                    }
                    if v.pointer.is_empty() {
                        write!(f, "{}", v.message)?;
                    } else {
                        write!(f, "{}: {}", v.pointer, v.message)?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for InputError {}

/// Escapes one JSON-pointer reference token (RFC 6901).
pub(crate) fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl InputError {
    /// A body that did not deserialize: a syntax error keeps its line and column, anything
    /// else (a missing field, a wrong type) becomes a violation at its JSON pointer.
    pub fn from_deserialize(e: serde_path_to_error::Error<serde_json::Error>) -> InputError {
        if e.inner().is_syntax() || e.inner().is_eof() {
            let inner = e.into_inner();
            return InputError::Malformed {
                message: strip_position(&inner.to_string()).to_string(),
                line: inner.line(),
                column: inner.column(),
            };
        }
        InputError::invalid(Violation {
            pointer: pointer_of(e.path()),
            message: strip_position(&e.inner().to_string()).to_string(),
            line: None,
        })
    }
}

/// Converts a serde_path_to_error path into a JSON pointer.
pub fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => {
                out.push('/');
                out.push_str(&index.to_string());
            }
            Segment::Map { key } => {
                out.push('/');
                out.push_str(&pointer_token(key));
            }
            Segment::Enum { variant } => {
                out.push('/');
                out.push_str(&pointer_token(variant));
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// Strips serde_json's " at line L column C" suffix: the position is reported separately.
pub fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}
