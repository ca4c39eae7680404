//! Settings, state and the derived threshold of a hermes compaction (contract section 4).
//!
//! * [`Settings`]: hermes's `compression.*` settings as the client sends them
//!   (`thresholdPercent`, `targetRatio`, `protectFirstN`, `protectLastN`, `maxTokens`,
//!   `abortOnSummaryFailure`), with hermes's defaults for absent or `null` keys.
//! * [`State`]: what a live hermes compressor carries between calls
//!   (`compressionCount`, `previousSummary`) and a stateless server takes and hands back.
//! * [`Threshold`]: the numbers hermes derives in its constructor
//!   (`ContextCompressor.__init__`, `_effective_threshold_percent`,
//!   `_compute_threshold_tokens`), and the bare `tokens ≥ thresholdTokens` trigger.
//!
//! Design decisions:
//! * Unknown keys are **ignored**, as everywhere in compactd's JSON bodies and as hermes
//!   ignores the `compression.*` keys its compressor does not read (`enabled`,
//!   `summary_model`, …), so a client may forward its whole `compression` section.
//! * Out-of-range numbers are **refused** with a message naming the key:
//!   `thresholdPercent` must lie in (0, 1] (hermes's own per-model overrides are
//!   fractions in that range), `protectFirstN` and `protectLastN` must be non-negative
//!   integers, `abortOnSummaryFailure` a boolean. Two keys are not refused, because the
//!   contract gives their rule: `targetRatio` (any number) is clamped to [0.10, 0.80]
//!   where hermes clamps it, and `maxTokens` counts only as a positive integer, anything
//!   else (a float, a string, 0, a negative number) meaning "no reservation". A positive
//!   integer beyond `u64` is also taken as none: it would exceed any window, and hermes
//!   then uses the whole window, which is what none gives.
//! * Python's `int(window * pct)` is an f64 product truncated toward zero; Rust's
//!   `as f64` and `as u64` do the same rounding and truncation, so every derived number
//!   matches hermes bit for bit (`int(595800 * 0.57)` is 339605, not 339606).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// hermes's `MINIMUM_CONTEXT_LENGTH`: the threshold never sits below this many tokens
/// unless that would reach the whole window.
const MINIMUM_THRESHOLD: u64 = 64_000;
/// Windows below this many tokens trigger at no less than [`SMALL_WINDOW_PERCENT`].
const SMALL_WINDOW_LIMIT: u64 = 512_000;
const SMALL_WINDOW_PERCENT: f64 = 0.75;
/// Where a small window triggers when the floor would reach the whole window.
const MIN_WINDOW_TRIGGER_RATIO: f64 = 0.85;
/// The summary output may take this share of the window, up to [`SUMMARY_TOKENS_CEILING`].
const SUMMARY_WINDOW_SHARE: f64 = 0.05;
const SUMMARY_TOKENS_CEILING: u64 = 10_000;
/// The range `targetRatio` is clamped to.
const TARGET_RATIO_MIN: f64 = 0.10;
const TARGET_RATIO_MAX: f64 = 0.80;

/// hermes's `compression.*` settings (section 4), read from JSON in camelCase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawSettings")]
pub struct Settings {
    /// Share of the window at which compaction triggers (`compression.threshold`).
    pub threshold_percent: f64,
    /// Tail budget as a share of the threshold, as given; [`Settings::target_ratio`]
    /// clamps it.
    pub target_ratio: f64,
    /// Non-system head messages kept verbatim on a first compaction.
    pub protect_first_n: usize,
    /// Minimum tail message count (capped at 8 in the tail walk).
    pub protect_last_n: usize,
    /// Output reservation of the main model; `None` reserves nothing.
    pub max_tokens: Option<u64>,
    /// On a summarizer failure, abort instead of writing the static fallback.
    pub abort_on_summary_failure: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold_percent: 0.50,
            target_ratio: 0.20,
            protect_first_n: 3,
            protect_last_n: 20,
            max_tokens: None,
            abort_on_summary_failure: false,
        }
    }
}

impl Settings {
    /// `targetRatio` clamped to [0.10, 0.80], as hermes's constructor stores it.
    pub fn target_ratio(&self) -> f64 {
        // Python's max(0.10, min(r, 0.80)).
        TARGET_RATIO_MIN.max(self.target_ratio.min(TARGET_RATIO_MAX))
    }
}

/// The settings object as sent: every key optional, any JSON value, checked by
/// `TryFrom` so the messages name the key.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSettings {
    threshold_percent: Option<Value>,
    target_ratio: Option<Value>,
    protect_first_n: Option<Value>,
    protect_last_n: Option<Value>,
    max_tokens: Option<Value>,
    abort_on_summary_failure: Option<Value>,
}

impl TryFrom<RawSettings> for Settings {
    type Error = String;

    fn try_from(raw: RawSettings) -> Result<Self, String> {
        let d = Settings::default();
        let threshold_percent = match given(raw.threshold_percent) {
            None => d.threshold_percent,
            Some(v) => match finite(&v) {
                Some(x) if x > 0.0 && x <= 1.0 => x,
                _ => {
                    return Err(refused(
                        "thresholdPercent",
                        "a number above 0 and at most 1",
                        &v,
                    ))
                }
            },
        };
        let target_ratio = match given(raw.target_ratio) {
            None => d.target_ratio,
            Some(v) => finite(&v)
                .ok_or_else(|| refused("targetRatio", "a number (clamped to 0.10…0.80)", &v))?,
        };
        let count = |key: &str, v: Option<Value>, default: usize| match given(v) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| refused(key, "a non-negative integer", &v)),
        };
        let protect_first_n = count("protectFirstN", raw.protect_first_n, d.protect_first_n)?;
        let protect_last_n = count("protectLastN", raw.protect_last_n, d.protect_last_n)?;
        // _coerce_max_tokens: only a positive integer is a reservation (section 4).
        let max_tokens = raw
            .max_tokens
            .as_ref()
            .and_then(Value::as_u64)
            .filter(|&n| n > 0);
        let abort_on_summary_failure = match given(raw.abort_on_summary_failure) {
            None => d.abort_on_summary_failure,
            Some(Value::Bool(b)) => b,
            Some(v) => return Err(refused("abortOnSummaryFailure", "a boolean", &v)),
        };
        Ok(Settings {
            threshold_percent,
            target_ratio,
            protect_first_n,
            protect_last_n,
            max_tokens,
            abort_on_summary_failure,
        })
    }
}

/// A key's value unless it is absent or `null` (both take the default).
fn given(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_null())
}

/// A JSON number as a finite f64 (`1e999` is not finite).
fn finite(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// A refused value as JSON, cut to 64 characters: error texts never quote more of what
/// was sent.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

fn refused(key: &str, expected: &str, got: &Value) -> String {
    format!("settings.{key} must be {expected}, got {}", shown(got))
}

/// What a live hermes compressor carries between calls (section 4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawState")]
pub struct State {
    /// Completed compactions so far, fallback ones included.
    pub compression_count: u64,
    /// Body (without prefix) of the last LLM summary; `None` when there is none.
    pub previous_summary: Option<String>,
}

impl State {
    /// Whether the previous summary is set and non-empty (Python truthiness).
    pub fn has_previous_summary(&self) -> bool {
        self.previous_summary
            .as_deref()
            .is_some_and(|s| !s.is_empty())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawState {
    compression_count: Option<Value>,
    previous_summary: Option<Value>,
}

impl TryFrom<RawState> for State {
    type Error = String;

    fn try_from(raw: RawState) -> Result<Self, String> {
        let compression_count = match given(raw.compression_count) {
            None => 0,
            Some(v) => v.as_u64().ok_or_else(|| {
                format!(
                    "state.compressionCount must be a non-negative integer, got {}",
                    shown(&v)
                )
            })?,
        };
        let previous_summary = match given(raw.previous_summary) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(v) => {
                return Err(format!(
                    "state.previousSummary must be a string or null, got {}",
                    shown(&v)
                ))
            }
        };
        Ok(State {
            compression_count,
            previous_summary,
        })
    }
}

/// The numbers hermes derives from the window and the settings (section 4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Threshold {
    /// `thresholdPercent` after the small-window floor.
    pub threshold_percent: f64,
    /// Compaction triggers at this many tokens.
    pub threshold_tokens: u64,
    /// Token budget of the protected tail (tail walk and prune walk).
    pub tail_token_budget: u64,
    /// Output cap of the summary.
    pub max_summary_tokens: u64,
}

impl Threshold {
    /// Derives the threshold as hermes's constructor does, for a main model with a
    /// window of `context_length` tokens.
    pub fn derive(context_length: u64, settings: &Settings) -> Threshold {
        let threshold_percent = effective_percent(context_length, settings.threshold_percent);
        let threshold_tokens =
            threshold_tokens(context_length, threshold_percent, settings.max_tokens);
        Threshold {
            threshold_percent,
            threshold_tokens,
            tail_token_budget: times(threshold_tokens, settings.target_ratio()),
            max_summary_tokens: times(context_length, SUMMARY_WINDOW_SHARE)
                .min(SUMMARY_TOKENS_CEILING),
        }
    }

    /// The bare trigger (hermes 1557): `tokens ≥ thresholdTokens`. hermes's cooldown
    /// and anti-thrashing guards are per-session state a stateless server leaves to the
    /// client.
    pub fn should_compress(&self, tokens: u64) -> bool {
        tokens >= self.threshold_tokens
    }
}

/// `_effective_threshold_percent`: windows in (0, 512000) trigger at no less than 75 %.
fn effective_percent(context_length: u64, percent: f64) -> f64 {
    if context_length > 0 && context_length < SMALL_WINDOW_LIMIT {
        // Python's max(percent, 0.75) (raise-only).
        if SMALL_WINDOW_PERCENT > percent {
            SMALL_WINDOW_PERCENT
        } else {
            percent
        }
    } else {
        percent
    }
}

/// `_compute_threshold_tokens`: a share of the input window (the window less the output
/// reservation), floored at 64000 unless the floor reaches the window; then 85 % of it.
fn threshold_tokens(context_length: u64, percent: f64, max_tokens: Option<u64>) -> u64 {
    let window = match context_length.checked_sub(max_tokens.unwrap_or(0)) {
        Some(w) if w > 0 => w,
        _ => context_length,
    };
    let floored = times(window, percent).max(MINIMUM_THRESHOLD);
    if window > 0 && floored >= window {
        return times(window, MIN_WINDOW_TRIGGER_RATIO)
            .min(window - 1)
            .max(1);
    }
    floored
}

/// Python's `int(n * x)` for a non-negative x: the f64 product truncated toward zero.
fn times(n: u64, x: f64) -> u64 {
    // `as` rounds the integer to the nearest f64 and truncates the product, exactly as
    // Python's int * float and int(); the ratios here are never negative.
    (n as f64 * x) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Result<Settings, String> {
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
        let t = Threshold::derive(0, &Settings::default());
        assert_eq!((t.threshold_percent, t.threshold_tokens), (0.5, 64000));
        assert_eq!((t.tail_token_budget, t.max_summary_tokens), (12800, 0));
    }

    #[test]
    fn should_compress_is_at_or_over_the_threshold() {
        let t = Threshold::derive(200000, &Settings::default());
        assert!(!t.should_compress(149999));
        assert!(t.should_compress(150000));
        assert!(t.should_compress(150001));
    }

    #[test]
    fn defaults_for_absent_and_null_keys() {
        assert_eq!(settings(json!({})).unwrap(), Settings::default());
        let all_null = json!({"thresholdPercent": null, "targetRatio": null,
            "protectFirstN": null, "protectLastN": null, "maxTokens": null,
            "abortOnSummaryFailure": null});
        assert_eq!(settings(all_null).unwrap(), Settings::default());
    }

    #[test]
    fn every_key_is_read_in_camel_case() {
        let s = settings(json!({"thresholdPercent": 0.85, "targetRatio": 0.3,
            "protectFirstN": 0, "protectLastN": 6, "maxTokens": 4096,
            "abortOnSummaryFailure": true}))
        .unwrap();
        assert_eq!(
            s,
            Settings {
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
        let s: State = serde_json::from_value(
            json!({"compressionCount": 2, "previousSummary": "## Historical Task Snapshot"}),
        )
        .unwrap();
        assert_eq!(s.compression_count, 2);
        assert!(s.has_previous_summary());
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"compressionCount": 2, "previousSummary": "## Historical Task Snapshot"})
        );
        let empty: State =
            serde_json::from_value(json!({"compressionCount": null, "previousSummary": ""}))
                .unwrap();
        assert_eq!(empty.compression_count, 0);
        assert!(!empty.has_previous_summary());
        assert_eq!(
            serde_json::from_value::<State>(json!({})).unwrap(),
            State::default()
        );
    }

    #[test]
    fn state_refuses_wrong_types() {
        let e = serde_json::from_value::<State>(json!({"compressionCount": -1})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "state.compressionCount must be a non-negative integer, got -1"
        );
        let e = serde_json::from_value::<State>(json!({"previousSummary": 3})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "state.previousSummary must be a string or null, got 3"
        );
    }
}
