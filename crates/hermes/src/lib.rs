//! hermes-agent compaction: OpenAI-format message lists compacted exactly as
//! `hermes-agent==0.19.0`'s `ContextCompressor` does, with the divergences H1–H12 of
//! `docs/hermes.md` (the contract this module implements; section numbers below refer
//! to it).
//!
//! A pure core beside `session`/`compaction`: no I/O, no clock, no model calls. The
//! pipeline asks [`compress::plan`] what to do, calls the summarizer with the request it
//! gets back, and hands the answer (or the failure) to [`compress::Pending::finish`].
//!
//! * [`py`]: the text model: Python's lengths, whitespace, `repr`, `str`, `json.dumps`,
//!   `json.loads` and `re` classes, because every number hermes produces comes from them.
//! * `message`: reading the loosely shaped message objects (roles, content, parts).
//! * [`settings`]: settings, state and the derived threshold (section 4).
//! * `tokens`: the two token estimates, R and E (section 3).
//! * `prune` and `tool_summary`: the pruning pre-pass (section 6).
//! * `boundaries`: head, tail cut and alignments (section 7).
//! * [`summaries`]: earlier handoff summaries, detection and body extraction (section 8).
//! * `serialize` and `think`: the text the summarizer reads (section 9).
//! * [`texts`] and `prompt`: the summarizer request (section 10), in our own words (H12).
//! * `answer`: the summarizer's answer made into the summary (section 11).
//! * `redact`: the secret redactor (section 12, H10).
//! * `fallback`: the static fallback summary (section 12).
//! * `assemble`: the compacted list (section 13).
//! * [`compress`]: the whole procedure (sections 5 and 14).
//!
//! Design decisions: messages stay `serde_json::Value`s (objects keep their key order and
//! numbers their JSON token), and every rule works on copies, so a field compactd does not
//! interpret leaves exactly as it came. Lengths are Python code points, never bytes.

mod answer;
mod assemble;
mod boundaries;
pub mod compress;
mod fallback;
mod message;
mod prompt;
mod prune;
pub mod py;
mod redact;
mod serialize;
pub mod settings;
pub mod summaries;
pub mod texts;
mod think;
mod tokens;
mod tool_summary;

/// Switches of a compaction that are not hermes settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    /// Mask secrets where hermes does (on by default; conformance turns it off, H10).
    pub redact: bool,
    /// H4: with no head, the summary takes role `user` (off by default).
    pub no_head_role_user: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            redact: true,
            no_head_role_user: false,
        }
    }
}
