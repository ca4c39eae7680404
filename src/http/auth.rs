//! Bearer-token authentication: the accepted keys, kept as digests, and the guard that
//! checks every request but the probes.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use secrecy::ExposeSecret;

use super::problem::ApiError;
use super::AppState;
use crate::config::ClientKeys;

/// Accepted bearer tokens, kept only as SHA-256 digests and compared in constant time.
#[derive(Clone, Default)]
pub struct ApiKeys(Vec<[u8; 32]>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} configured)", self.0.len())
    }
}

impl ApiKeys {
    /// The digests of the configured keys.
    pub fn new(keys: &ClientKeys) -> Self {
        use sha2::Digest;
        ApiKeys(
            keys.iter()
                .map(|k| sha2::Sha256::digest(k.expose_secret().as_bytes()).into())
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `token` is one of the keys. Every key is compared, in constant time, on
    /// digests (so neither the content nor the length of a key leaks through timing).
    pub fn accepts(&self, token: &str) -> bool {
        use sha2::Digest;
        use subtle::ConstantTimeEq;
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, k| found | k.ct_eq(&digest))
            .into()
    }
}

/// Answers 401 unless no keys are configured, the route is a probe or the inspector
/// page, or the request carries `Authorization: Bearer <one of the keys>`.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    // The inspector page holds no data: it asks for the key and sends it with each call.
    let page = state.config.inspector && super::inspect::is_page(path);
    if state.api_keys.is_empty() || super::guard::is_open(path) || page {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        // Anthropic's clients send their key as `x-api-key`.
        .or_else(|| {
            (req.uri().path() == "/v1/messages")
                .then(|| req.headers().get("x-api-key"))
                .flatten()
                .and_then(|v| v.to_str().ok())
        });
    match token {
        Some(t) if state.api_keys.accepts(t) => {
            // Jobs belong to the key that created them: its digest, never the key.
            use sha2::Digest;
            let owner = super::jobs::Owner(sha2::Sha256::digest(t.as_bytes()).into());
            req.extensions_mut().insert(owner);
            next.run(req).await
        }
        _ => {
            let mut res = ApiError::Unauthorized.into_response();
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            res
        }
    }
}

/// The token of a `Bearer` credential. The scheme is case-insensitive (RFC 9110 §11.1,
/// as RFC 7235 had it) and is followed by one or more spaces; the key itself is compared
/// exactly (in constant time, by [`ApiKeys::accepts`]).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_matched_on_digests() {
        let keys = ApiKeys::new(&ClientKeys::new(["key-one", " ", "key-two "]));
        assert!(keys.accepts("key-one") && keys.accepts("key-two"));
        assert!(!keys.accepts("key-three") && !keys.accepts(""));
        assert!(!format!("{keys:?}").contains("key-one"));
        assert!(ApiKeys::new(&ClientKeys::default()).is_empty());
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_is_not() {
        for v in [
            "Bearer k",
            "bearer k",
            "BEARER k",
            "BeArEr k",
            "Bearer   k ",
        ] {
            assert_eq!(bearer_token(v), Some("k"), "{v:?}");
        }
        assert_eq!(bearer_token("Bearer K"), Some("K"));
        for v in ["Basic k", "Bearerk", "Bearer", "Bear k", "XBearer k"] {
            assert_eq!(bearer_token(v), None, "{v:?}");
        }
    }
}
