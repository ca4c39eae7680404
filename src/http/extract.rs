//! The session-input extractor: content type, body limit, query options.

use axum::body::Bytes;
use axum::extract::{FromRequest, Query, Request};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};

use crate::pipeline::arriving::{parse_arriving, LineCutter, Piece};
use crate::pipeline::options::{Options, QueryOptions};
use crate::pipeline::{BodyFormat, SessionInput};
use compactd_core::session::{InputError, Violation};

use super::encoding::{unreadable, BodyEncoding};
use super::guard::Permit;
use super::problem::ApiError;
use super::{blocking, AppState};

/// A session body, not yet parsed (parsing happens off the async runtime), with the
/// endpoint's options `O` from the query string.
pub struct SessionBody<O> {
    pub bytes: Bytes,
    pub format: BodyFormat,
    /// Options from the query string (used with JSONL bodies).
    pub query: O,
    max_entries: usize,
}

impl<O> SessionBody<O> {
    pub fn new(bytes: Bytes, format: BodyFormat, query: O, state: &AppState) -> Self {
        SessionBody {
            bytes,
            format,
            query,
            max_entries: state.config.max_entries,
        }
    }
}

impl<O: Options + Clone> SessionBody<O> {
    /// The session and its options (`COMPACTD_MAX_ENTRIES` applied).
    pub fn parse(&self) -> Result<SessionInput<'_, O>, InputError> {
        SessionInput::parse_limited(
            &self.bytes,
            self.format,
            self.query.clone(),
            self.max_entries,
        )
    }
}

pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    let raw = content_type.unwrap_or("");
    let mime = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/json" => Ok(BodyFormat::Json),
        "application/x-ndjson"
        | "application/jsonl"
        | "application/json-lines"
        | "application/x-jsonlines" => Ok(BodyFormat::Jsonl),
        m if m.starts_with("application/") && m.ends_with("+json") => Ok(BodyFormat::Json),
        "" => Err(ApiError::UnsupportedMediaType("no content-type".into())),
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "`{}`",
            compactd_core::session::truncate_for_message(&mime)
        ))),
    }
}

/// The declared `content-length`, refused with 413 when over `COMPACTD_MAX_BODY_BYTES`.
fn declared_length(req: &Request, limit: usize) -> Result<Option<usize>, ApiError> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > limit as u64 => Err(ApiError::BodyTooLarge { limit }),
        n => Ok(n.map(|n| n as usize)),
    }
}

/// A request's share of the memory budget while its body is read: the declared length at
/// once, then what has arrived (requests outside the concurrency limit reserve nothing).
struct Cover<'a> {
    held: Option<super::budget::Held>,
    budget: &'a super::budget::MemoryBudget,
}

impl<'a> Cover<'a> {
    fn of(req: &Request, state: &'a AppState, declared: Option<usize>) -> Result<Self, ApiError> {
        let cover = Cover {
            held: req.extensions().get::<Permit>().map(|p| p.1.clone()),
            budget: &state.memory,
        };
        cover.arrived(declared.unwrap_or(0))?;
        Ok(cover)
    }

    fn arrived(&self, bytes: usize) -> Result<(), ApiError> {
        match &self.held {
            Some(h) => h.cover(self.budget, bytes),
            None => Ok(()),
        }
    }
}

/// The body within `COMPACTD_MAX_BODY_BYTES` (413 past it), decoded when it was sent
/// with a `Content-Encoding` (`encoding`), so the limit counts decoded bytes.
///
/// Read into one buffer of the declared `content-length` as the chunks arrive, so the
/// body is held once: collecting the chunks first and joining them (what the `Bytes`
/// extractor does) holds it twice at the end of the upload.
pub async fn read_body(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let limit = state.config.max_body_bytes;
    let declared = declared_length(&req, limit)?;
    let encoding = req.extensions().get::<BodyEncoding>().copied();
    let cover = Cover::of(&req, state, declared)?;
    let mut buf = Vec::with_capacity(declared.unwrap_or(0));
    let mut chunks = req.into_body().into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| unreadable(e, encoding))?;
        if buf.len() + chunk.len() > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
        cover.arrived(buf.len())?;
    }
    Ok(Bytes::from(buf))
}

/// The body within `COMPACTD_MAX_BODY_BYTES`, sent on as it arrives in pieces that end
/// at a line break (`pipeline::arriving`), then [`Piece::End`]. On an error nothing more
/// is sent and the sender is dropped, so the parser stops.
pub async fn send_lines(
    req: Request,
    state: &AppState,
    pieces: std::sync::mpsc::Sender<Piece<Bytes>>,
) -> Result<(), ApiError> {
    use futures_util::StreamExt;
    let limit = state.config.max_body_bytes;
    let declared = declared_length(&req, limit)?;
    let encoding = req.extensions().get::<BodyEncoding>().copied();
    let cover = Cover::of(&req, state, declared)?;
    let mut cutter = LineCutter::with_capacity(declared.unwrap_or(0));
    let mut received = 0usize;
    let mut chunks = req.into_body().into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| unreadable(e, encoding))?;
        received += chunk.len();
        if received > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        cover.arrived(received)?;
        if let Some(piece) = cutter.push(&chunk) {
            // A parser that is gone has panicked; its task reports that.
            let _ = pieces.send(Piece::Lines(piece));
        }
    }
    if let Some(piece) = cutter.finish() {
        let _ = pieces.send(Piece::Lines(piece));
    }
    let _ = pieces.send(Piece::End);
    Ok(())
}

/// Runs `work` on the request's session off the async runtime, with the endpoint's
/// options `O`: a JSONL body is parsed while it arrives ([`parse_while_arriving`]), a
/// JSON body is read whole first. Errors read as with the [`SessionBody`] extractor:
/// content type and query first, then the body's size, then the session.
pub async fn with_session<O, R>(
    req: Request,
    state: &AppState,
    work: impl for<'a> FnOnce(&SessionInput<'a, O>) -> Result<R, ApiError> + Send + 'static,
) -> Result<R, ApiError>
where
    O: Options + Clone + Send + 'static,
    R: Send + 'static,
{
    let (format, query) = session_head::<O>(&req)?;
    match format {
        BodyFormat::Jsonl => parse_while_arriving(req, state, query, work).await,
        BodyFormat::Json => {
            let body = SessionBody::new(read_body(req, state).await?, format, query, state);
            blocking(move || work(&body.parse()?)).await
        }
    }
}

/// A JSONL session parsed while it arrives (`pipeline::arriving`), then `work` on it:
/// the parser runs on a blocking thread from the first piece on, so the upload and the
/// parse overlap. The thread is one of the request's (`COMPACTD_MAX_CONCURRENCY` bounds
/// them); it stops as soon as the body fails to arrive.
pub async fn parse_while_arriving<O, R>(
    req: Request,
    state: &AppState,
    query: O,
    work: impl for<'a> FnOnce(&SessionInput<'a, O>) -> Result<R, ApiError> + Send + 'static,
) -> Result<R, ApiError>
where
    O: Options + Send + 'static,
    R: Send + 'static,
{
    let (pieces, arriving) = std::sync::mpsc::channel();
    let max_entries = state.config.max_entries;
    // A size hint only: `send_lines` reports a declared length past the limit.
    let declared = declared_length(&req, state.config.max_body_bytes)
        .ok()
        .flatten()
        .unwrap_or(0);
    // The work stops when this request is dropped (see `cancel`).
    let token = crate::cancel::Token::new();
    let _cancel_when_dropped = token.cancel_on_drop();
    let worker = crate::cancel::spawn_blocking(move || {
        crate::cancel::run(&token, || {
            parse_arriving(arriving, query, max_entries, declared, |input| {
                work(&input?)
            })
        })
    });
    send_lines(req, state, pieces).await?;
    match worker.await {
        Ok(Ok(Some(answer))) => answer,
        Ok(Ok(None)) => Err(ApiError::Internal("the body ended early".into())),
        Ok(Err(cancelled)) => Err(ApiError::Internal(format!("worker stopped: {cancelled}"))),
        Err(e) => Err(ApiError::Internal(format!("worker failed: {e}"))),
    }
}

/// The content type and the query options of a session request: what is checked before
/// the body is read.
pub fn session_head<O: Options>(req: &Request) -> Result<(BodyFormat, O), ApiError> {
    let format = body_format(
        req.headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )?;
    let query = match Query::<QueryOptions<O>>::try_from_uri(req.uri()) {
        Ok(Query(QueryOptions(options))) => options,
        Err(e) => {
            return Err(ApiError::InvalidParameter {
                message: e.body_text(),
                parameter: parameter_at_fault::<O>(req.uri().query().unwrap_or("")),
            })
        }
    };
    Ok((format, query))
}

/// The query parameter that fails on its own (its name as sent), for the problem's
/// pointer; `None` when none does alone (a repeated parameter). Only runs on errors.
fn parameter_at_fault<O: Options>(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let uri: axum::http::Uri = format!("/?{pair}").parse().ok()?;
        let fails = Query::<QueryOptions<O>>::try_from_uri(&uri).is_err();
        fails.then(|| pair.split('=').next().unwrap_or(pair).to_string())
    })
}

impl<O: Options + Send> FromRequest<AppState> for SessionBody<O> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let (format, query) = session_head::<O>(&req)?;
        let bytes = read_body(req, state).await?;
        Ok(SessionBody::new(bytes, format, query, state))
    }
}

/// The body of a route that takes one JSON object (the provider-style routes and the
/// remoteEndpoint body): read whole within the body limit, refused with a 415 naming
/// `what` when its Content-Type is JSONL. The query string is not read: clients of these
/// routes add their own parameters (`api-version`, `beta=true`).
pub async fn read_json_body(req: Request, state: &AppState, what: &str) -> Result<Bytes, ApiError> {
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if body_format(content_type)? != BodyFormat::Json {
        return Err(ApiError::UnsupportedMediaType(format!(
            "a JSONL body (send {what} as application/json)"
        )));
    }
    read_body(req, state).await
}

/// A JSON object body as `T`, with a pointer on errors. serde takes a struct from an array
/// too (`["", "prompt"]`), and these contracts are objects: an array is refused, naming the
/// expected `shape` (`{"model", "messages"}`).
pub fn json_object<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    shape: &str,
) -> Result<T, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
        return Err(ApiError::Input(InputError::invalid(Violation {
            pointer: String::new(),
            message: format!("the body must be a JSON object: {shape}"),
            line: None,
        })));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ApiError::Input(InputError::from_deserialize(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::options::CompactReason;
    use crate::pipeline::{CompactOptions, PrepareOptions, PruneOptions};

    fn query<O: Options>(q: &str) -> Result<O, String> {
        let uri: axum::http::Uri = format!("/v1/x?{q}").parse().unwrap();
        Query::<QueryOptions<O>>::try_from_uri(&uri)
            .map(|Query(QueryOptions(o))| o)
            .map_err(|e| e.body_text())
    }

    #[test]
    fn query_strings_parse_numbers_aliases_and_lists() {
        let o: CompactOptions =
            query("keepRecentTokens=5&messages=false&includeMessages=true&model=m&reason=manual")
                .unwrap();
        assert_eq!(o.prepare.keep_recent_tokens, Some(5));
        assert_eq!(o.prepare.include_messages, Some(false), "`messages` wins");
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(o.reason, Some(CompactReason::Manual));
        let o: PrepareOptions = query("includeMessages=false&messages=true").unwrap();
        assert_eq!(o.include_messages, Some(true), "`messages` wins");
        let o: PruneOptions = query("protectedTools=bash,%20skill,").unwrap();
        assert_eq!(o.protected_tools, Some(vec!["bash".into(), "skill".into()]));
        let o: PruneOptions = query("protectedTools=").unwrap();
        assert_eq!(o.protected_tools, Some(vec![]));
    }

    #[test]
    fn query_strings_refuse_unknown_repeated_and_json_only_keys() {
        let e = query::<PruneOptions>("keepRecentTokens=5").unwrap_err();
        assert!(
            e.contains("unknown field `keepRecentTokens`, expected one of `leafId`"),
            "{e}"
        );
        let e = query::<PrepareOptions>("additionalContext=x").unwrap_err();
        assert!(e.contains("unknown field `additionalContext`"), "{e}");
        let e = query::<PrepareOptions>("leafId=a&leafId=b").unwrap_err();
        assert!(e.ends_with("duplicate field `leafId`"), "{e}");
        assert!(query::<PrepareOptions>("keepRecentTokens=lots").is_err());
    }
}
