//! Base URLs of model servers: the check they must pass and the form in which they may
//! be shown. Shared by the configuration (validation, descriptions) and the model engine
//! (logs, errors), so it lives here, below both.

/// A URL fit for logs and answers: no user info, no query, no fragment.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "<invalid URL>".to_string(),
    }
}

/// A base URL must be absolute http(s). The message never quotes credentials.
pub fn check_base_url(url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(()),
        Ok(_) => Err(format!(
            "expected an http(s) URL, got {:?}",
            redact_url(url)
        )),
        Err(e) => Err(format!("not a URL: {e}")),
    }
}

/// A Redis/Valkey URL: `redis://` or `rediss://` (TLS), `valkey://` or `valkeys://`, with
/// a host. The message never quotes the URL (it may carry a password).
pub fn check_redis_url(url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u)
            if matches!(u.scheme(), "redis" | "rediss" | "valkey" | "valkeys") && u.has_host() =>
        {
            Ok(())
        }
        Ok(u) => Err(format!(
            "expected a redis:// or rediss:// URL with a host, got the scheme {:?}",
            u.scheme()
        )),
        Err(e) => Err(format!("not a URL: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_and_query() {
        assert_eq!(
            redact_url("https://user:pw@example.com/v1?key=abc#x"),
            "https://example.com/v1"
        );
        assert_eq!(redact_url("not a url"), "<invalid URL>");
    }

    #[test]
    fn base_urls_must_be_http_and_never_echo_credentials() {
        assert!(check_base_url("http://127.0.0.1:11434/v1").is_ok());
        let err = check_base_url("ftp://user:hunter2@host/").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(check_base_url("nope").is_err());
    }

    #[test]
    fn redis_urls_are_checked_without_echoing_them() {
        assert!(check_redis_url("redis://127.0.0.1:6379/0").is_ok());
        assert!(check_redis_url("rediss://:pw@cache.internal:6380").is_ok());
        let err = check_redis_url("http://user:hunter2@host/").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(check_redis_url("redis-host:6379").is_err());
    }
}
