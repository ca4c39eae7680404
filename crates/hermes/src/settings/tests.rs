use super::*;
use serde_json::json;

fn settings(v: Value) -> Result<HermesSettings, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// (contextLength, settings, thresholdPercent, thresholdTokens, tailTokenBudget,
/// maxSummaryTokens), each row printed by hermes 0.19.0's constructor.
const CASES: &[(u64, &str, f64, u64, u64, u64)] = &[
    (200000, "{}", 0.75, 150000, 30000, 10000),
    (128000, "{}", 0.75, 96000, 19200, 6400),
    // The floor reaches the window: 85 %.
    (64000, "{}", 0.75, 54400, 10880, 3200),
    (32000, "{}", 0.75, 27200, 5440, 1600),
    (1000000, "{}", 0.5, 500000, 100000, 10000),
    // 512000 is not small; 511999 is, and its products truncate.
    (512000, "{}", 0.5, 256000, 51200, 10000),
    (511999, "{}", 0.75, 383999, 76799, 10000),
    (199999, "{}", 0.75, 149999, 29999, 9999),
    (
        1000000,
        r#"{"thresholdPercent":0.3}"#,
        0.3,
        300000,
        60000,
        10000,
    ),
    (
        300000,
        r#"{"thresholdPercent":0.9}"#,
        0.9,
        270000,
        54000,
        10000,
    ),
    // The output reservation shrinks the window…
    (200000, r#"{"maxTokens":65536}"#, 0.75, 100848, 20169, 10000),
    // …unless it is the whole window or more.
    (
        200000,
        r#"{"maxTokens":250000}"#,
        0.75,
        150000,
        30000,
        10000,
    ),
    // 0.75 × 70000 is below the 64000 floor, which is below the window.
    (100000, r#"{"maxTokens":30000}"#, 0.75, 64000, 12800, 5000),
    (70000, r#"{"maxTokens":5000}"#, 0.75, 64000, 12800, 3500),
    // Window 1: max(1, min(0, 0)).
    (64000, r#"{"maxTokens":63999}"#, 0.75, 1, 0, 3200),
    (1, "{}", 0.75, 1, 0, 0),
    (2, "{}", 0.75, 1, 0, 0),
    (
        1000000,
        r#"{"thresholdPercent":0.123456789,"targetRatio":0.33}"#,
        0.123456789,
        123456,
        40740,
        10000,
    ),
    // targetRatio clamped both ways.
    (
        200000,
        r#"{"targetRatio":0.05}"#,
        0.75,
        150000,
        15000,
        10000,
    ),
    (
        200000,
        r#"{"targetRatio":0.95}"#,
        0.75,
        150000,
        120000,
        10000,
    ),
    // f64 products: 595800 × 0.57 is 339605.99999999994.
    (
        595800,
        r#"{"thresholdPercent":0.57}"#,
        0.57,
        339605,
        67921,
        10000,
    ),
    (
        600000,
        r#"{"thresholdPercent":0.57,"maxTokens":4200}"#,
        0.57,
        339605,
        67921,
        10000,
    ),
    (
        200000,
        r#"{"targetRatio":0.29}"#,
        0.75,
        150000,
        43500,
        10000,
    ),
    (
        700000,
        r#"{"thresholdPercent":0.58,"targetRatio":0.14}"#,
        0.58,
        406000,
        56840,
        10000,
    ),
    (
        1000003,
        r#"{"thresholdPercent":0.7,"targetRatio":0.3}"#,
        0.7,
        700002,
        210000,
        10000,
    ),
    // A large window at 100 %: the threshold would be the window, so 85 %.
    (
        595800,
        r#"{"thresholdPercent":1.0}"#,
        1.0,
        506430,
        101286,
        10000,
    ),
    (
        1000000,
        r#"{"thresholdPercent":1}"#,
        1.0,
        850000,
        170000,
        10000,
    ),
    (
        1152921504606846976,
        r#"{"thresholdPercent":0.6}"#,
        0.6,
        691752902764108160,
        138350580552821632,
        10000,
    ),
];

#[test]
fn derive_matches_hermes() {
    for &(ctx, raw, pct, tokens, tail, summary) in CASES {
        let s = settings(serde_json::from_str(raw).unwrap()).unwrap();
        let t = Threshold::derive(ctx, &s);
        assert_eq!(
            t,
            Threshold {
                threshold_percent: pct,
                threshold_tokens: tokens,
                tail_token_budget: tail,
                max_summary_tokens: summary,
            },
            "{ctx} {raw}"
        );
    }
}

#[test]
fn zero_window_keeps_the_floor() {
    // hermes: 0 is not a small window, and the 85 % rule needs a positive window.
    let t = Threshold::derive(0, &HermesSettings::default());
    assert_eq!((t.threshold_percent, t.threshold_tokens), (0.5, 64000));
    assert_eq!((t.tail_token_budget, t.max_summary_tokens), (12800, 0));
}

#[test]
fn should_compress_is_at_or_over_the_threshold() {
    let t = Threshold::derive(200000, &HermesSettings::default());
    assert!(!t.should_compress(149999));
    assert!(t.should_compress(150000));
    assert!(t.should_compress(150001));
}

#[test]
fn defaults_for_absent_and_null_keys() {
    assert_eq!(settings(json!({})).unwrap(), HermesSettings::default());
    let all_null = json!({"thresholdPercent": null, "targetRatio": null,
        "protectFirstN": null, "protectLastN": null, "maxTokens": null,
        "abortOnSummaryFailure": null});
    assert_eq!(settings(all_null).unwrap(), HermesSettings::default());
}

#[test]
fn every_key_is_read_in_camel_case() {
    let s = settings(json!({"thresholdPercent": 0.85, "targetRatio": 0.3,
        "protectFirstN": 0, "protectLastN": 6, "maxTokens": 4096,
        "abortOnSummaryFailure": true}))
    .unwrap();
    assert_eq!(
        s,
        HermesSettings {
            threshold_percent: 0.85,
            target_ratio: 0.3,
            protect_first_n: 0,
            protect_last_n: 6,
            max_tokens: Some(4096),
            abort_on_summary_failure: true,
        }
    );
    // And written back the same way.
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!({"thresholdPercent": 0.85, "targetRatio": 0.3, "protectFirstN": 0,
            "protectLastN": 6, "maxTokens": 4096, "abortOnSummaryFailure": true})
    );
}

#[test]
fn unknown_keys_are_ignored() {
    let s = settings(json!({"enabled": true, "summary_model": "m", "protectFirstN": 1}));
    assert_eq!(s.unwrap().protect_first_n, 1);
}

#[test]
fn max_tokens_counts_only_as_a_positive_integer() {
    for v in [
        json!(0),
        json!(-5),
        json!(4096.0),
        json!("4096"),
        json!(true),
        json!([1]),
    ] {
        let s = settings(json!({ "maxTokens": v })).unwrap();
        assert_eq!(s.max_tokens, None, "{v}");
    }
    assert_eq!(
        settings(json!({"maxTokens": 1})).unwrap().max_tokens,
        Some(1)
    );
}

#[test]
fn out_of_range_numbers_are_refused_by_name() {
    let cases = [
        (
            json!({"thresholdPercent": 0}),
            "settings.thresholdPercent must be a number above 0 and at most 1, got 0",
        ),
        (
            json!({"thresholdPercent": 1.5}),
            "settings.thresholdPercent must be a number above 0 and at most 1, got 1.5",
        ),
        (
            json!({"thresholdPercent": "0.5"}),
            "settings.thresholdPercent must be a number above 0 and at most 1, got \"0.5\"",
        ),
        (
            json!({"targetRatio": false}),
            "settings.targetRatio must be a number (clamped to 0.10…0.80), got false",
        ),
        (
            json!({"protectFirstN": -1}),
            "settings.protectFirstN must be a non-negative integer, got -1",
        ),
        (
            json!({"protectLastN": 2.0}),
            "settings.protectLastN must be a non-negative integer, got 2.0",
        ),
        (
            json!({"abortOnSummaryFailure": "yes"}),
            "settings.abortOnSummaryFailure must be a boolean, got \"yes\"",
        ),
    ];
    for (v, message) in cases {
        assert_eq!(settings(v).unwrap_err(), message);
    }
    let huge: Value = serde_json::from_str(r#"{"thresholdPercent": 1e999}"#).unwrap();
    assert!(settings(huge).unwrap_err().contains("thresholdPercent"));
}

#[test]
fn state_reads_and_writes_camel_case() {
    let s: HermesState = serde_json::from_value(
        json!({"compressionCount": 2, "previousSummary": "## Historical Task Snapshot"}),
    )
    .unwrap();
    assert_eq!(s.compression_count, 2);
    assert!(s.has_previous_summary());
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!({"compressionCount": 2, "previousSummary": "## Historical Task Snapshot"})
    );
    let empty: HermesState =
        serde_json::from_value(json!({"compressionCount": null, "previousSummary": ""})).unwrap();
    assert_eq!(empty.compression_count, 0);
    assert!(!empty.has_previous_summary());
    assert_eq!(
        serde_json::from_value::<HermesState>(json!({})).unwrap(),
        HermesState::default()
    );
}

#[test]
fn state_refuses_wrong_types() {
    let e = serde_json::from_value::<HermesState>(json!({"compressionCount": -1})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "state.compressionCount must be a non-negative integer, got -1"
    );
    let e = serde_json::from_value::<HermesState>(json!({"previousSummary": 3})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "state.previousSummary must be a string or null, got 3"
    );
}
