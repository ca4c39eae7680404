//! `/v1/hermes/compress`, `/v1/hermes/prepare` and `compactd hermes-compress`: a
//! hermes-agent message list compacted as hermes 0.19.0 does it (`compactd_hermes`), with
//! compactd's summarizers.
//!
//! The request body is read with the contract's Python-side facts in mind: a lone
//! surrogate escape becomes U+FFFD (H11), unknown top-level fields are ignored and every
//! message field is carried through. A message the answer returns unchanged is written
//! from the bytes sent (`HermesAnswer::to_bytes`): its lone surrogates and number
//! spellings (`1E5`, which serde_json's `Value` writes `1e+5`) as they came.
//!
//! Summaries come from a model only: hermes has its own deterministic fallback, so the
//! summarizer's extractive fallback (written for pi transcripts) is never used here.
//! Failures are classified as hermes classifies them: no access, no connection or no
//! answer in time abort (the list comes back unchanged, `summary-failed`); anything
//! else takes the static fallback unless `abortOnSummaryFailure` is set.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::summarize::progress::{Operation, PartName};
use crate::summarize::{
    MoaReport, Mode, Prepared, ProgressEvent, ProgressSink, RequestKind, Scoped, Strategy,
    Summarize, SummarizeError, SummaryRequest, Usage,
};
use crate::telemetry::metric;
use compactd_core::session::error::strip_position;
use compactd_core::session::{InputError, Violation};
use compactd_hermes::compress::{self, Input, ModelAnswer, Outcome, Plan};
use compactd_hermes::settings::{HermesSettings, HermesState};
use compactd_hermes::texts::HermesTexts;
use compactd_hermes::Switches;

use super::object_only::object_only;

/// The body of a hermes compaction request (contract §15).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HermesRequest {
    /// The conversation: OpenAI chat-completions messages, as hermes keeps them.
    pub messages: Vec<Value>,
    /// The main model's context window, in tokens (required).
    #[serde(default)]
    pub context_length: Option<u64>,
    #[serde(default, deserialize_with = "object_only")]
    pub settings: Option<HermesSettings>,
    #[serde(default, deserialize_with = "object_only")]
    pub state: Option<HermesState>,
    #[serde(default)]
    pub focus_topic: Option<String>,
    #[serde(default)]
    pub memory_context: Option<String>,
    #[serde(default)]
    pub current_tokens: Option<u64>,
    /// Absent: today's UTC date; `null`: no temporal rule; else `YYYY-MM-DD`.
    #[serde(default = "Today::absent", deserialize_with = "Today::read")]
    pub today: Today,
    #[serde(default)]
    pub dry_run: bool,
    /// A configured model name.
    #[serde(default)]
    pub model: Option<String>,
    /// `single` or `moa` (Mixture-of-Agents) [the `[moa]` default, else `single`].
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// `messages` as sent, one JSON text each (lone surrogates and number spellings
    /// included): what goes back unchanged is written from these.
    #[serde(skip)]
    pub raw_messages: Vec<Box<RawValue>>,
    /// H4 (off by default): `"user"` gives a summary with no head before it the role
    /// `user` (hermes: `assistant`, so the transcript would open with an assistant turn).
    #[serde(default)]
    pub no_head_role: Option<NoHeadRole>,
}

/// The role of a summary with no head before it (H4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoHeadRole {
    /// hermes's choice.
    Assistant,
    User,
}

/// The date for the temporal rule, as the request gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Today {
    Absent,
    Null,
    Date(String),
}

impl Today {
    fn absent() -> Today {
        Today::Absent
    }

    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Today, D::Error> {
        Ok(match Option::<String>::deserialize(d)? {
            None => Today::Null,
            Some(s) => Today::Date(s),
        })
    }
}

/// Reads a request body (JSON), with a line and column for syntax errors and a JSON
/// pointer for everything else.
pub fn parse_request(bytes: &[u8]) -> Result<HermesRequest, InputError> {
    parse_request_with(bytes, None)
}

/// [`parse_request`] with at most `max_messages` messages (`COMPACTD_MAX_ENTRIES`, as
/// for session entries): more is a 413 naming the first message over the limit.
pub fn parse_request_limited(
    bytes: &[u8],
    max_messages: usize,
) -> Result<HermesRequest, InputError> {
    let req = parse_request_with(bytes, None)?;
    if req.messages.len() > max_messages {
        return Err(too_many_messages(max_messages));
    }
    Ok(req)
}

/// More messages than `COMPACTD_MAX_ENTRIES` (413), naming the first one over it.
pub(super) fn too_many_messages(max_messages: usize) -> InputError {
    InputError::TooManyEntries {
        limit: max_messages,
        at: Violation {
            pointer: format!("/messages/{max_messages}"),
            message: "one message too many".into(),
            line: None,
        },
    }
}

/// [`parse_request`], with `contextLength` given (or overridden) by the caller.
pub fn parse_request_with(
    bytes: &[u8],
    context_length: Option<u64>,
) -> Result<HermesRequest, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::Malformed {
        message: format!("the body is not UTF-8: {e}"),
        line: 1,
        column: e.valid_up_to() + 1,
    })?;
    let sent = text;
    let replaced;
    let text = if memchr::memmem::find(text.as_bytes(), b"\\u").is_some() {
        replaced = compactd_core::json::string::replace_lone_surrogates(text);
        replaced.as_str()
    } else {
        text
    };
    if text.trim_start().starts_with('[') {
        return Err(invalid(
            "",
            "the body must be a JSON object with `messages` and `contextLength`".into(),
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let mut req: HermesRequest =
        serde_path_to_error::deserialize(&mut de).map_err(
            |e| match InputError::from_deserialize(e) {
                InputError::Invalid(mut v) => {
                    for item in &mut v {
                        item.pointer =
                            precise_pointer(std::mem::take(&mut item.pointer), &item.message);
                    }
                    InputError::Invalid(v)
                }
                other => other,
            },
        )?;
    de.end().map_err(|e| InputError::Malformed {
        message: strip_position(&e.to_string()).to_string(),
        line: e.line(),
        column: e.column(),
    })?;
    if context_length.is_some() {
        req.context_length = context_length;
    }
    validate(&req)?;
    req.raw_messages = raw_messages(sent);
    Ok(req)
}

/// The messages of a body that parsed, each as its JSON text. serde_json's `Value` spells
/// numbers its own way (`1E5` is `1e+5`) and cannot hold a lone surrogate; the raw text
/// keeps both. Empty if the body cannot be read so (then answers are written from values).
fn raw_messages(text: &str) -> Vec<Box<RawValue>> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        messages: Vec<&'a RawValue>,
    }
    serde_json::from_str::<Raw>(text)
        .map(|r| r.messages.into_iter().map(RawValue::to_owned).collect())
        .unwrap_or_default()
}

/// `settings` and `state` check their keys as a whole and name the key in the message
/// (`settings.targetRatio must be …`): the pointer then goes down to that key.
fn precise_pointer(pointer: String, message: &str) -> String {
    for object in ["settings", "state"] {
        if pointer == format!("/{object}") {
            if let Some(rest) = message.strip_prefix(&format!("{object}.")) {
                let key: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !key.is_empty() {
                    return format!("{pointer}/{key}");
                }
            }
        }
    }
    pointer
}

fn invalid(pointer: &str, message: String) -> InputError {
    InputError::invalid(Violation {
        pointer: pointer.into(),
        message,
        line: None,
    })
}

fn validate(req: &HermesRequest) -> Result<(), InputError> {
    match req.context_length {
        None => return Err(invalid("", "missing field `contextLength`".into())),
        Some(0) => {
            return Err(invalid(
                "/contextLength",
                "the context length must be a positive number of tokens".into(),
            ))
        }
        Some(_) => {}
    }
    if let Today::Date(d) = &req.today {
        if !is_iso_date(d) {
            return Err(invalid(
                "/today",
                format!(
                    "expected a date as YYYY-MM-DD, got {:?}",
                    compactd_core::session::truncate_for_message(d)
                ),
            ));
        }
    }
    Ok(())
}

/// `YYYY-MM-DD`, a real calendar date.
fn is_iso_date(d: &str) -> bool {
    let b = d.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return false;
    }
    let (Ok(year), Ok(month), Ok(day)) = (d[0..4].parse(), d[5..7].parse::<u8>(), d[8..10].parse())
    else {
        return false;
    };
    time::Month::try_from(month)
        .and_then(|m| time::Date::from_calendar_date(year, m, day))
        .is_ok()
}

/// Today's date in UTC, as `YYYY-MM-DD` (a `Date` displays so).
fn utc_today() -> String {
    time::OffsetDateTime::now_utc().date().to_string()
}

/// A request decided: what the core planned, and the call options.
#[derive(Debug)]
pub struct HermesPlan {
    pub plan: Plan,
    /// The request's messages as sent (`HermesRequest::raw_messages`).
    pub raw_messages: Vec<Box<RawValue>>,
    pub model: Option<String>,
    pub strategy: Option<Strategy>,
    pub dry_run: bool,
}

/// Plans a request (CPU only; run it off the async runtime for large lists). `opts` are
/// the server's; the request's `noHeadRole` sets H4.
pub fn plan_hermes(req: HermesRequest, texts: &HermesTexts, opts: &Switches) -> HermesPlan {
    let opts = &Switches {
        no_head_role_user: match req.no_head_role {
            Some(r) => r == NoHeadRole::User,
            None => opts.no_head_role_user,
        },
        ..*opts
    };
    let today = match req.today {
        Today::Absent => Some(utc_today()),
        Today::Null => None,
        Today::Date(d) => Some(d),
    };
    let input = Input {
        messages: req.messages,
        context_length: req.context_length.unwrap_or(1),
        settings: req.settings.unwrap_or_default(),
        state: req.state.unwrap_or_default(),
        focus_topic: req.focus_topic,
        memory_context: req.memory_context.unwrap_or_default(),
        current_tokens: req.current_tokens,
        today,
    };
    HermesPlan {
        plan: compress::plan(input, texts, opts),
        raw_messages: req.raw_messages,
        model: req.model,
        strategy: req.strategy,
        dry_run: req.dry_run,
    }
}

/// The answer, with the summarizer's usage and model when one was called.
#[derive(Debug)]
pub struct HermesAnswer {
    pub outcome: Outcome,
    /// The request's messages as sent: those the answer returns unchanged are written
    /// from these ([`HermesAnswer::to_bytes`]).
    pub raw_messages: Vec<Box<RawValue>>,
    pub usage: Option<Usage>,
    pub model: Option<String>,
    /// The models that took part in a Mixture-of-Agents summary.
    pub moa: Option<MoaReport>,
}

impl HermesAnswer {
    /// Counts the answer in `compactd_hermes_compactions_total{outcome}`: the summarizer
    /// when compacted, else the reason (dry runs are not counted).
    fn record(self) -> Self {
        let outcome = match (self.outcome.summarizer(), self.outcome.reason()) {
            (Some(s), _) => s,
            (None, Some(r)) => r.as_str(),
            (None, None) => "unknown",
        };
        metrics::counter!(metric::HERMES_COMPACTIONS.name, "outcome" => outcome).increment(1);
        self
    }

    /// The §15 body as sent: [`HermesAnswer::to_json`], except that every message the
    /// answer returns unchanged is the client's own JSON text, byte for byte.
    pub fn to_bytes(&self) -> Vec<u8> {
        let Value::Object(body) = self.to_json() else {
            unreachable!("the answer is an object")
        };
        let mut out = Vec::with_capacity(
            self.raw_messages
                .iter()
                .map(|m| m.get().len())
                .sum::<usize>()
                + 4096,
        );
        out.push(b'{');
        for (i, (key, value)) in body.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing a string or a `Value` into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, key);
            out.push(b':');
            match value {
                Value::Array(messages) if key == "messages" => {
                    self.write_messages(&mut out, messages)
                }
                _ => {
                    let _ = serde_json::to_writer(&mut out, value);
                }
            }
        }
        out.push(b'}');
        out
    }

    fn write_messages(&self, out: &mut Vec<u8>, messages: &[Value]) {
        let sources = self.outcome.unchanged_sources();
        out.push(b'[');
        for (k, m) in messages.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            let raw = sources
                .get(k)
                .copied()
                .flatten()
                .and_then(|i| self.raw_messages.get(i));
            match raw {
                Some(raw) => out.extend_from_slice(raw.get().as_bytes()),
                None => {
                    let _ = serde_json::to_writer(&mut *out, m);
                }
            }
        }
        out.push(b']');
    }

    /// The §15 body.
    pub fn to_json(&self) -> Value {
        let mut body = self.outcome.to_json();
        if let Some(o) = body.as_object_mut() {
            if let Some(u) = &self.usage {
                o.insert(
                    "usage".into(),
                    serde_json::to_value(u).unwrap_or(Value::Null),
                );
            }
            if let Some(m) = &self.model {
                o.insert("model".into(), Value::String(m.clone()));
            }
            if let Some(m) = &self.moa {
                o.insert("moa".into(), serde_json::to_value(m).unwrap_or(Value::Null));
            }
        }
        body
    }
}

/// Runs a plan: the summarizer call when one is needed (never on a dry run), reporting
/// its progress to `sink` (`prepared` only when a summary is made). Only an unknown model
/// name or a missing `[moa]` table is an error; every other failure is part of the answer.
pub async fn run_hermes(
    planned: HermesPlan,
    summarizer: &dyn Summarize,
    sink: &dyn ProgressSink,
) -> Result<HermesAnswer, SummarizeError> {
    let pending = match planned.plan {
        Plan::Done(outcome) => {
            return Ok(HermesAnswer {
                outcome: *outcome,
                raw_messages: planned.raw_messages,
                usage: None,
                model: None,
                moa: None,
            }
            .record())
        }
        Plan::Summarize(p) if planned.dry_run => {
            return Ok(HermesAnswer {
                outcome: p.dry_run(),
                raw_messages: planned.raw_messages,
                usage: None,
                model: None,
                moa: None,
            })
        }
        Plan::Summarize(p) => p,
    };
    sink.emit(ProgressEvent::Prepared(Prepared {
        operation: Operation::Hermes,
        first_kept_entry_id: None,
        tokens_before: Some(pending.tokens_before() as f64),
        is_split_turn: None,
        messages: Some(pending.turns()),
        parts: vec![PartName::Hermes],
        chunks: 1,
    }));
    let request = SummaryRequest {
        kind: RequestKind::Hermes,
        system_prompt: String::new(),
        prompt: pending.prompt().to_string(),
        // hermes leaves the output length to the model (0: no cap sent).
        max_tokens: 0,
        strategy: planned.strategy,
        model: planned.model,
        ledger: None,
    };
    let scoped = Scoped::new(sink, PartName::Hermes, None);
    let called = summarizer
        .summarize(&request, Mode::ModelOnly, &scoped)
        .await;
    let (answer, usage, model, moa) = match called {
        Ok(s) => (
            ModelAnswer::Text {
                text: s.text,
                model: s.model.clone(),
            },
            Some(s.usage),
            Some(s.model),
            s.moa,
        ),
        Err(e @ (SummarizeError::UnknownModel(_) | SummarizeError::NoMoa)) => return Err(e),
        Err(f) => {
            tracing::warn!(error = %f, "hermes summary failed");
            (
                ModelAnswer::Failed {
                    abort: f.aborts(),
                    error: f.to_string(),
                },
                None,
                None,
                None,
            )
        }
    };
    Ok(HermesAnswer {
        outcome: pending.finish(answer),
        raw_messages: planned.raw_messages,
        usage,
        model,
        moa,
    }
    .record())
}
