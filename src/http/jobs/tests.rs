use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn prefer_and_keys_are_read_as_the_rfcs_write_them() {
    assert!(prefers_async(&headers(&[("prefer", "respond-async")])));
    assert!(prefers_async(&headers(&[(
        "prefer",
        "wait=10, Respond-Async"
    )])));
    assert!(!prefers_async(&headers(&[("prefer", "return=minimal")])));
    let key = |v: &str| idempotency_key(&headers(&[("idempotency-key", v)]));
    assert_eq!(key("\"8e03978e\"").unwrap().as_deref(), Some("8e03978e"));
    assert_eq!(key("abc-1").unwrap().as_deref(), Some("abc-1"));
    assert!(key("\"\"").is_err());
    assert!(key(&"x".repeat(256)).is_err());
    assert_eq!(idempotency_key(&HeaderMap::new()).unwrap(), None);
}
