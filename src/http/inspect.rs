//! The inspector: the page on `GET /` that draws a session, its cut point and its
//! summaries, its assets, and `POST /v1/inspect/outline`, the per-entry columns it
//! draws from.
//!
//! Design decisions:
//! * The page is plain ES modules and CSS under `assets/inspector/`, compiled in with
//!   `include_str!`: no JavaScript toolchain to build compactd, no external resources.
//!   Every asset is served with a strict Content-Security-Policy (`default-src 'none'`,
//!   scripts, styles and requests from this origin only), so the page works offline and
//!   a session's text can never run as code.
//! * The page and its assets are open (they hold no data, like the probes); every API
//!   call the page makes carries the key the user typed, as any client's would.
//! * `COMPACTD_INSPECTOR=false` (`inspector = false`) removes the page and its assets;
//!   the outline route stays, as it is part of the API.
//! * The self-contained report (`compactd inspect`) uses the same modules, joined into
//!   one inline script by [`bundle`]: the modules keep to a convention that makes that
//!   safe (single-line `import { … } from './x.js';`, `export` only before top-level
//!   declarations, top-level names unique across modules).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};

use crate::pipeline::messages::session_entries;
use crate::pipeline::outline::{outline, Outline};
use crate::pipeline::responses::{convert, summary_wrapper};
use crate::pipeline::PrepareOptions;

use super::examples;
use super::extract::read_body;
use super::extract::SessionBody;
use super::problem::{ApiError, Problem};
use super::schemas::PrepareRequest;
use super::{blocking, AppState};

/// The Content-Security-Policy of the page and its assets.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The page.
pub const INDEX_HTML: &str = include_str!("../../assets/inspector/index.html");
/// The stylesheet.
pub const STYLE_CSS: &str = include_str!("../../assets/inspector/style.css");

/// The modules, in dependency order (each imports only modules before it).
pub const MODULES: &[(&str, &str)] = &[
    (
        "format.js",
        include_str!("../../assets/inspector/format.js"),
    ),
    ("model.js", include_str!("../../assets/inspector/model.js")),
    (
        "timeline.js",
        include_str!("../../assets/inspector/timeline.js"),
    ),
    (
        "panels.js",
        include_str!("../../assets/inspector/panels.js"),
    ),
    (
        "source.js",
        include_str!("../../assets/inspector/source.js"),
    ),
    ("main.js", include_str!("../../assets/inspector/main.js")),
];

/// Paths served without a key: the page and its assets.
pub fn is_page(path: &str) -> bool {
    path == "/" || path.starts_with("/inspector/")
}

fn secured(status: StatusCode, content_type: &'static str, body: &'static str) -> Response {
    let mut res = (status, [(CONTENT_TYPE, content_type)], body).into_response();
    let h = res.headers_mut();
    h.insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(CSP),
    );
    h.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// `GET /`: the inspector page, with the API's description linked (RFC 8631).
pub async fn get_index() -> Response {
    let mut res = secured(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML);
    res.headers_mut().insert(
        axum::http::header::LINK,
        HeaderValue::from_static("</openapi.json>; rel=\"service-desc\""),
    );
    res
}

/// `GET /inspector/{name}`: a module or the stylesheet.
pub async fn get_asset(Path(name): Path<String>) -> Response {
    if name == "style.css" {
        return secured(StatusCode::OK, "text/css; charset=utf-8", STYLE_CSS);
    }
    match MODULES.iter().find(|(n, _)| *n == name) {
        Some((_, js)) => secured(StatusCode::OK, "text/javascript; charset=utf-8", js),
        None => ApiError::NotFound.into_response(),
    }
}

/// The modules as one script for an inline `<script type="module">`: import lines
/// dropped and `export` keywords removed (see the module docs for the convention).
pub fn bundle() -> String {
    let mut out = String::new();
    for (name, source) in MODULES {
        out.push_str("// ---- ");
        out.push_str(name);
        out.push('\n');
        for line in source.lines() {
            if line.starts_with("import ") {
                continue;
            }
            out.push_str(line.strip_prefix("export ").unwrap_or(line));
            out.push('\n');
        }
    }
    out
}

/// Per entry of a session: id, parent, kind, token estimate and where its JSON text
/// sits in the body, as columns; and the path to the leaf. What the inspector draws.
#[utoipa::path(
    post,
    path = "/v1/inspect/outline",
    operation_id = "inspect_outline",
    tag = "inspector",
    request_body(
        description = "A session: JSON with `entries`, or a pi session file (JSONL), with `leafId` in the query string (beside a JSON body too: the body wins).",
        content(
            (PrepareRequest = "application/json", example = examples::session_example),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(PrepareOptions),
    responses(
        (status = 200, description = "The outline", body = Outline),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, or an unknown leafId", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_outline(body: SessionBody<PrepareOptions>) -> Result<Response, ApiError> {
    let json = blocking(move || {
        let input = body.parse()?;
        let answer = outline(&input, &body.bytes, false)?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}

/// What `POST /v1/inspect/session` converts from.
#[derive(Debug, Clone, Copy, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderShape {
    /// A `POST /v1/responses/compact` request (OpenAI's Responses items).
    Responses,
    /// A `POST /v1/messages` compaction request (Anthropic's Messages format).
    Messages,
}

/// The query of `POST /v1/inspect/session`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionFrom {
    /// The shape of the body.
    pub from: ProviderShape,
}

/// The pi session compactd builds from a provider-style request, as a session file: what
/// the inspector draws when it is given such a request, so the cut it shows is the one
/// the provider route makes (for `messages`, everything up to the empty user message the
/// route adds last, where it cuts).
#[utoipa::path(
    post,
    path = "/v1/inspect/session",
    operation_id = "inspect_session",
    tag = "inspector",
    request_body(content((serde_json::Value = "application/json", example = examples::responses_compact_example))),
    params(SessionFrom),
    responses(
        (status = 200, description = "The session as JSONL, one entry per line (header first)", body = String, content_type = "application/x-ndjson"),
        (status = 400, description = "Not JSON, or a bad `from`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A request the provider route refuses (the pointer names the field)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_session(
    State(state): State<AppState>,
    query: Result<Query<SessionFrom>, QueryRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let Query(SessionFrom { from }) = query.map_err(|e| ApiError::InvalidParameter {
        message: e.body_text(),
        parameter: Some("from".into()),
    })?;
    let bytes = read_body(req, &state).await?;
    let wrapper = summary_wrapper(&state.prompts.wrappers);
    let jsonl = blocking(move || {
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::UnsupportedMediaType("a body that is not UTF-8 JSON".into()))?;
        match from {
            ProviderShape::Responses => Ok(convert(text, &wrapper)?.session_jsonl()),
            ProviderShape::Messages => {
                let req = super::messages::parse(text.as_bytes())?;
                Ok(session_entries(&req.messages)
                    .iter()
                    .map(|e| format!("{e}\n"))
                    .collect())
            }
        }
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/x-ndjson")], jsonl).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_keeps_every_module_without_imports_or_exports() {
        let b = bundle();
        for (name, _) in MODULES {
            assert!(b.contains(&format!("// ---- {name}\n")), "{name}");
        }
        assert!(!b.lines().any(|l| l.starts_with("import ")));
        assert!(!b.lines().any(|l| l.starts_with("export ")));
        // Top-level names are unique across modules (they share one scope in the bundle).
        let mut names = std::collections::HashSet::new();
        for line in b.lines() {
            let decl = ["const ", "let ", "function ", "async function ", "class "]
                .iter()
                .find_map(|k| line.strip_prefix(k));
            if let Some(rest) = decl {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                    .collect();
                assert!(names.insert(name.clone()), "{name} declared twice");
            }
        }
        // Modules import only modules listed before them, one import a line.
        for (i, (name, source)) in MODULES.iter().enumerate() {
            for line in source.lines().filter(|l| l.starts_with("import")) {
                assert!(
                    line.starts_with("import { ") && line.ends_with("';"),
                    "{name}: {line}"
                );
                let from = line.split('\'').nth(1).unwrap_or("");
                let dep = from.trim_start_matches("./");
                let at = MODULES.iter().position(|(n, _)| *n == dep);
                assert!(at.is_some_and(|a| a < i), "{name}: {line}");
            }
        }
    }

    #[test]
    fn only_the_page_and_its_assets_are_open() {
        assert!(is_page("/") && is_page("/inspector/main.js"));
        assert!(!is_page("/v1/inspect/outline") && !is_page("/openapi.json"));
    }
}
