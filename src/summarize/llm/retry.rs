//! When to retry an upstream attempt, and how long to wait first.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// Exponential backoff with full jitter: the wait before retry `n` (0-based) is uniform in
/// `[0, min(cap, base × 2^n)]`, so concurrent clients that failed together spread out.
#[derive(Debug, Clone, Copy)]
pub(super) struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Backoff {
    /// The ceiling of the wait before retry `n`.
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// A wait before retry `n`, drawn uniformly up to [`Backoff::ceiling`].
    pub fn delay(&self, n: u32) -> Duration {
        let ceiling = u64::try_from(self.ceiling(n).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=ceiling))
    }
}

/// Statuses worth another try with the same request: timeouts, conflicts, rate limits and
/// server errors. Everything else (400, 401, 403, 404, 422, …) will fail again.
pub(super) fn transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// How long the server asked us to wait: `retry-after-ms` (OpenAI), else `Retry-After` as
/// delay-seconds or an HTTP date (a date in the past means now).
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms.min(1e12) / 1000.0));
        }
    }
    let value = header(RETRY_AFTER.as_str())?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(1e9)));
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn backoff_grows_to_the_cap_and_jitters_below_the_ceiling() {
        let b = Backoff {
            base: Duration::from_millis(250),
            cap: Duration::from_secs(8),
        };
        assert_eq!(b.ceiling(0), Duration::from_millis(250));
        assert_eq!(b.ceiling(1), Duration::from_millis(500));
        assert_eq!(b.ceiling(4), Duration::from_secs(4));
        assert_eq!(b.ceiling(5), Duration::from_secs(8));
        assert_eq!(b.ceiling(40), Duration::from_secs(8));
        let draws: Vec<_> = (0..200).map(|_| b.delay(2)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_secs(1)));
        assert!(draws.iter().any(|d| *d != draws[0]), "jittered");
    }

    #[test]
    fn statuses() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(transient_status(s), "{s}");
        }
        for s in [200, 301, 400, 401, 403, 404, 413, 422] {
            assert!(!transient_status(s), "{s}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let at = |pairs| retry_after(&headers(pairs), now);
        assert_eq!(at(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            at(&[("retry-after", " 1.5 ")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            at(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            at(&[("retry-after", "Sun, 06 Nov 1994 08:49:27 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(
            at(&[("retry-after-ms", "120"), ("retry-after", "9")]),
            Some(Duration::from_millis(120))
        );
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[("retry-after", "-1")]), None);
        assert_eq!(at(&[]), None);
    }
}
