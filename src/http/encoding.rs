//! `Content-Encoding` of request bodies: `gzip` (or `x-gzip`) and `zstd` are decoded by
//! tower-http's `RequestDecompressionLayer`, which sits inside [`check`]; `identity` (or
//! no header) passes; anything else is a 415 before the body is read. The body limit is
//! applied where the handlers read the body (`extract::read_body`), so it counts decoded
//! bytes: a decompression bomb is a 413, not an allocation.

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::problem::ApiError;

/// The coding the body was sent in (request extension), for the error a body that does
/// not decode gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyEncoding(pub &'static str);

/// The decompression layer, for the codings [`check`] lets through.
pub fn decompression() -> tower_http::decompression::RequestDecompressionLayer {
    tower_http::decompression::RequestDecompressionLayer::new()
        .gzip(true)
        .zstd(true)
        .no_br()
        .no_deflate()
}

/// Refuses codings other than gzip, zstd and identity with a 415 problem, and writes the
/// accepted one as the decompression layer matches it (exact lowercase bytes, so `GZIP`
/// or ` gzip` would otherwise be refused there with an empty 415).
pub async fn check(mut req: Request, next: Next) -> Response {
    // A request without a body (a GET, an empty POST) has nothing to decode: whatever its
    // Content-Encoding names, it says nothing.
    if axum::body::HttpBody::is_end_stream(req.body()) {
        req.headers_mut().remove(header::CONTENT_ENCODING);
        return next.run(req).await;
    }
    match coding(req.headers()) {
        Ok(None) => {
            req.headers_mut().remove(header::CONTENT_ENCODING);
        }
        Ok(Some(name)) => {
            req.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(name));
            req.extensions_mut().insert(BodyEncoding(name));
        }
        Err(got) => {
            let mut res = ApiError::UnsupportedEncoding(got).into_response();
            // RFC 7694 §3: say which codings would have been accepted.
            res.headers_mut().insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip, zstd, identity"),
            );
            return res;
        }
    }
    next.run(req).await
}

/// The one coding of the body (`None`: identity), or what was sent when it is not one we
/// decode. Codings are case-insensitive (RFC 9110 §8.4.1); `identity` entries are no-ops;
/// stacked codings (`gzip, zstd`) are refused.
fn coding(headers: &axum::http::HeaderMap) -> Result<Option<&'static str>, String> {
    let mut found = None;
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value
            .to_str()
            .map_err(|_| "a header that is not ASCII".to_string())?;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let name = match part.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => "gzip",
                "zstd" => "zstd",
                _ => {
                    return Err(format!(
                        "`{}`",
                        compactd_core::session::truncate_for_message(part)
                    ))
                }
            };
            if found.replace(name).is_some() {
                return Err(format!(
                    "`{}` (one coding at most)",
                    compactd_core::session::truncate_for_message(text)
                ));
            }
        }
    }
    Ok(found)
}

/// The error of a body that could not be read: a coding that does not decode (the
/// decoder's `io::Error`, which reaches us unwrapped) or broken HTTP framing (hyper's
/// error, e.g. a bad or overflowing chunk size).
pub fn unreadable(e: axum::Error, encoding: Option<BodyEncoding>) -> ApiError {
    let inner = e.into_inner();
    match (encoding, inner.downcast::<std::io::Error>()) {
        (Some(BodyEncoding(name)), Ok(io)) => ApiError::BadEncoding {
            encoding: name,
            message: io.to_string(),
        },
        (_, Ok(io)) => ApiError::BadBody(io.to_string()),
        (_, Err(other)) => ApiError::BadBody(with_causes(&*other)),
    }
}

/// `e` and its causes (hyper's own text is only "error reading a body from connection";
/// the cause says what was wrong: "invalid chunk size line"), each said once.
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coding_of(values: &[&str]) -> Result<Option<&'static str>, String> {
        let mut headers = axum::http::HeaderMap::new();
        for v in values {
            headers.append(header::CONTENT_ENCODING, v.parse().unwrap());
        }
        coding(&headers)
    }

    #[test]
    fn gzip_zstd_and_identity_are_the_codings_taken() {
        assert_eq!(coding_of(&[]), Ok(None));
        assert_eq!(coding_of(&["identity"]), Ok(None));
        assert_eq!(coding_of(&["GZIP"]), Ok(Some("gzip")));
        assert_eq!(coding_of(&[" x-gzip "]), Ok(Some("gzip")));
        assert_eq!(coding_of(&["identity", "Zstd"]), Ok(Some("zstd")));
        assert_eq!(coding_of(&["br"]), Err("`br`".into()));
        assert_eq!(coding_of(&["deflate"]), Err("`deflate`".into()));
        assert!(coding_of(&["gzip, zstd"]).is_err());
        assert!(coding_of(&["gzip", "gzip"]).is_err());
    }
}
