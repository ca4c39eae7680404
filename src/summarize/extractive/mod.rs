//! The built-in extractive summarizer: deterministic, no network, no model.
//!
//! It reads the summarizer prompt itself (the layout [`Prompts`](super::Prompts) writes:
//! `<conversation>`, an optional `<previous-summary>` and `<additional-context>`, then the
//! instructions) and fills the structured summary format with what the conversation shows,
//! signal first: the objective and the latest real request, the user's rules, constraints,
//! preferences and facts verbatim (the pinned ledger), decisions, progress by file (what
//! was changed, and the commits), the error still open, then a few representative
//! commands and the files read or mentioned. A previous summary (and any earlier summary
//! quoted inside the conversation) is merged section by section. The result fits its
//! budget (see `budget`) and is never longer than the text it condenses.
//!
//! Nothing here depends on our instruction wording: pi-style agents send the same layout
//! through the remoteEndpoint with their own instructions, and
//! [`RequestKind::detect`](super::RequestKind::detect) infers the summary they want from
//! those.
//!
//! # The steps
//!
//! [`summarize`] is one pass from prompt to text; each step is a file:
//!
//! 1. The prompt's blocks are separated by `templates` (the module that writes them).
//! 2. `transcript`: the serialized conversation back into its parts (`[User]`,
//!    `[Assistant]`, `[Assistant thinking]`, `[Assistant tool calls]`, `[Tool result]`),
//!    tool calls into names and JSON arguments, user parts into requests, shell commands
//!    the user ran and earlier summaries shown as user messages.
//! 3. `facts`: one walk over the parts gathers everything a summary may say (requests,
//!    files written, edited and read with what the assistant said it was changing, commits,
//!    commands, the last failure and whether a later success resolved it, the last
//!    assistant text). It asks `paths` which tokens name files (normalized; no import
//!    specifiers, climbing paths or diff prefixes), `diagnostics` which output line is the
//!    error, and `pinned` for the ledger (`compaction::ledger::extract` over the same
//!    parts, unless the request carries it): rules, constraints, preferences, facts and
//!    decisions, verbatim.
//! 4. `earlier`: a previous summary, and any summary quoted in the conversation, read back
//!    into items by section so that merging keeps them.
//! 5. `sections`: facts and earlier items become the items of each section, each with a
//!    tier of importance. Chit-chat, short replies and slash commands are not goals; an
//!    earlier summary's "in progress", "blocked" and "next steps" are dropped once the
//!    work shown was committed.
//! 6. `render`: the least important items are dropped until the text fits, then the items
//!    that must stay are shortened, then the markdown is written.
//! 7. `short`: the one-paragraph form for a UI, and the last resort for budgets too small
//!    for any format.
//!
//! `text` holds the string helpers every step shares, and `layout` the shape of a summary
//! (its sections, headings and items) that `facts`, `earlier`, `sections` and `render`
//! share.
//!
//! The imports between these files point one way: a step uses earlier steps and the
//! shared files, never a later step (`render` uses `sections` and `short`, which use
//! `facts`, which uses `transcript`, `diagnostics`, `paths` and `earlier`), and `layout`
//! and `text` use no sibling.
//!
//! # Design decisions
//!
//! * The prompt is the input, not the session: the same code answers `/v1/compact`,
//!   the model fallback and remoteEndpoint bodies other clients build from their own
//!   templates. It relies on the block layout and the serializer's labels only. One
//!   exception: a compaction's plan has already extracted the pinned ledger of the
//!   history from the session (with each tool result's own `isError`, which the prompt
//!   does not show), and hands it over with the request (`SummaryRequest::ledger`), so a
//!   compaction extracts once and its summary states exactly the ledger the check
//!   verifies and `details.pinned` stores. An earlier summary's labelled lines, which
//!   only the prompt holds, still send the summarizer to its own reading.
//! * Deterministic: the same request gives the same bytes (no clock, no randomness, sets
//!   keep the order of first appearance), so answers can be cached and compared.
//! * The limit (`budget`) is a fifth of the span condensed, raised to 1,000 tokens and
//!   capped at 2,300 (300 for a turn prefix), within the request's output budget (4 UTF-16 units per token) and
//!   the length of the text condensed; every form measures itself and gives way to a
//!   smaller one, down to a cut first request. Lists are bounded too (a few requests,
//!   commands and mentioned files), so a summary is short before the budget has to cut.
//! * The summary states each pinned item in its own words, so the verification after the
//!   summary (`compaction::ledger::check_summary`) finds it present and re-inserts nothing.
//! * Progress is what changed, not what ran: files with the assistant's own sentence on
//!   the change, and commit messages; commands appear only as a few representative ones
//!   (the programs run most often, without greps, listings and file moves).
//! * Nothing is invented: items are text from the prompt, shortened with `…`; the next
//!   steps are derived only from the unresolved error and the last assistant text.
//! * Earlier summaries are merged, not replaced: their items keep their sections, compete
//!   for the budget by tier, and equal items are kept once, so merging twice adds nothing.
//! * Parsing never fails: text before the first label counts as the user's, and a tool
//!   call that does not parse ends that part's calls.

mod budget;
mod diagnostics;
mod earlier;
mod facts;
mod layout;
mod paths;
mod pinned;
mod render;
mod sections;
mod short;
mod text;
mod transcript;

pub use layout::{CHECKPOINT_HEADINGS, TURN_PREFIX_HEADINGS};

use compactd_core::session::text::utf16_len;

use super::templates::{split_prompt, RequestKind};
use super::SummaryRequest;
use super::{
    answer_plainly, Answering, Mode, ProgressSink, Strategy, Summarize, SummarizerKind, Summary,
    Usage,
};

use facts::Facts;
use layout::Layout;
use render::structured;
use short::short;

/// The `model` reported for summaries this summarizer writes.
pub const MODEL: &str = "extractive";

/// Deterministic, no network: a structured summary built from the prompt itself.
pub fn summarize(req: &SummaryRequest) -> Summary {
    let parts = split_prompt(&req.prompt);
    let facts = Facts::gather(&parts, req.ledger.as_ref());
    let condensed = utf16_len(parts.conversation) + parts.previous.map_or(0, utf16_len);
    let limit = match req.kind {
        RequestKind::TurnPrefix => {
            budget::limit_units_within(condensed, req.max_tokens, budget::TURN_PREFIX_MAX_TOKENS)
        }
        _ => budget::limit_units(condensed, req.max_tokens),
    };
    let text = match req.kind {
        // A hermes request never reaches here (hermes has its own fallback); were it sent
        // as a remoteEndpoint body, a checkpoint is the closest shape.
        RequestKind::History | RequestKind::Branch | RequestKind::Hermes => {
            structured(&facts, Layout::Checkpoint, limit)
        }
        RequestKind::TurnPrefix => structured(&facts, Layout::TurnPrefix, limit),
        RequestKind::Short => short(&facts, limit),
    };
    let input = tokens(utf16_len(&req.system_prompt) + utf16_len(&req.prompt));
    let output = tokens(utf16_len(&text));
    Summary {
        text,
        usage: Usage {
            input,
            output,
            total_tokens: input + output,
            ..Usage::default()
        },
        model: MODEL.to_string(),
        summarizer: SummarizerKind::Extractive,
        retries: 0,
        cached: false,
        moa: None,
        warnings: Vec::new(),
    }
}

fn tokens(units: usize) -> u64 {
    units.div_ceil(4) as u64
}

#[cfg(test)]
mod tests;

/// The extractive summarizer on its own behind the [`Summarize`] trait: it answers at
/// once, so a pipeline run with it never waits (offline tools and tests use it; the
/// service wraps [`summarize`] in the model engine as its fallback instead).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

impl Summarize for Extractive {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, std::future::ready(Ok(summarize(req))))
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "summarizer": MODEL })
    }
}
