//! HermesSettings, state and the derived threshold of a hermes compaction (contract section 4).
//!
//! * [`HermesSettings`]: hermes's `compression.*` settings as the client sends them
//!   (`thresholdPercent`, `targetRatio`, `protectFirstN`, `protectLastN`, `maxTokens`,
//!   `abortOnSummaryFailure`), with hermes's defaults for absent or `null` keys.
//! * [`HermesState`]: what a live hermes compressor carries between calls
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
pub struct HermesSettings {
    /// Share of the window at which compaction triggers (`compression.threshold`).
    pub threshold_percent: f64,
    /// Tail budget as a share of the threshold, as given; [`HermesSettings::target_ratio`]
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

impl Default for HermesSettings {
    fn default() -> Self {
        HermesSettings {
            threshold_percent: 0.50,
            target_ratio: 0.20,
            protect_first_n: 3,
            protect_last_n: 20,
            max_tokens: None,
            abort_on_summary_failure: false,
        }
    }
}

impl HermesSettings {
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

impl TryFrom<RawSettings> for HermesSettings {
    type Error = String;

    fn try_from(raw: RawSettings) -> Result<Self, String> {
        let d = HermesSettings::default();
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
        Ok(HermesSettings {
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
#[serde(rename_all = "camelCase", try_from = "RawHermesState")]
pub struct HermesState {
    /// Completed compactions so far, fallback ones included.
    pub compression_count: u64,
    /// Body (without prefix) of the last LLM summary; `None` when there is none.
    pub previous_summary: Option<String>,
}

impl HermesState {
    /// Whether the previous summary is set and non-empty (Python truthiness).
    pub(crate) fn has_previous_summary(&self) -> bool {
        self.previous_summary
            .as_deref()
            .is_some_and(|s| !s.is_empty())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawHermesState {
    compression_count: Option<Value>,
    previous_summary: Option<Value>,
}

impl TryFrom<RawHermesState> for HermesState {
    type Error = String;

    fn try_from(raw: RawHermesState) -> Result<Self, String> {
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
        Ok(HermesState {
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
    pub fn derive(context_length: u64, settings: &HermesSettings) -> Threshold {
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
    pub(crate) fn should_compress(&self, tokens: u64) -> bool {
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
mod tests;
