//! Recall: search the entries of a session a compaction took out of the context, so an
//! agent (or a person) can get back what the summary left out.
//!
//! [`documents`] gives each entry's searchable text (messages with their tool calls, tool
//! results with their tool name, shell runs, earlier summaries); [`search`] ranks them for
//! a query with BM25 (k1 = 1.2, b = 0.75) over the [`terms`] of both, and quotes each hit
//! by its best passage.
//!
//! Decisions:
//! * No index is kept: a query is known before the entries are read, so one pass counts
//!   only the query's terms in each entry (and each entry's length). Linear in the text,
//!   and nothing to build or hold between requests.
//! * Deterministic: equal scores go to the newer entry, then the one later on the path.
//! * Excerpts are verbatim text, bounded, cut at word boundaries, with what looks like a
//!   secret redacted (as in every summary).

pub mod terms;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::compaction::ledger::redact;
use crate::session::{Block, Content, Entry, EntryBody, Role};

use terms::{each_raw_term, each_term};

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// The longest excerpt, in characters (before the ellipses).
pub const EXCERPT_CHARS: usize = 320;
/// What a word weighs that the query holds only inside an identifier.
const PART_WEIGHT: f64 = 0.25;
/// The terms of a query that are read.
const MAX_QUERY_TERMS: usize = 256;
/// The hits of an entry an excerpt may start at.
const EXCERPT_ANCHORS: usize = 2_000;
/// The most matches one query answers.
pub const MAX_LIMIT: usize = 50;

/// One entry's searchable text.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub entry_id: &'a str,
    /// `user`, `assistant`, `toolResult`, `bashExecution`, `custom`, `branchSummary` or
    /// `compactionSummary`.
    pub role: &'static str,
    pub tool_name: Option<String>,
    pub text: Cow<'a, str>,
}

/// A matching entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub entry_id: String,
    pub role: &'static str,
    pub tool_name: Option<String>,
    /// The best matching passage, verbatim (secrets redacted).
    pub excerpt: String,
    /// BM25, rounded to 4 decimals.
    pub score: f64,
}

/// The searchable text of each entry that has one (and an id), in path order.
pub fn documents<'s>(entries: &[&'s Entry<'_>]) -> Vec<Document<'s>> {
    entries.iter().filter_map(|e| document(e)).collect()
}

fn document<'s>(e: &'s Entry<'_>) -> Option<Document<'s>> {
    let entry_id = e.id()?;
    let (role, tool_name, text): (&'static str, Option<String>, Cow<'s, str>) = match &e.body {
        EntryBody::Message(m) => {
            let mut text = String::new();
            if let Some(b) = &m.bash {
                text.push_str("$ ");
                b.command.push_to(&mut text);
                text.push('\n');
                b.output.push_to(&mut text);
            } else if let Some(s) = &m.summary {
                s.push_to(&mut text);
            }
            content_text(&m.content, &mut text);
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::ToolResult => "toolResult",
                Role::BashExecution => "bashExecution",
                Role::Custom | Role::HookMessage => "custom",
                Role::BranchSummary => "branchSummary",
                Role::CompactionSummary => "compactionSummary",
                Role::Other => "other",
            };
            let tool = (m.role == Role::ToolResult).then(|| tool_name(e)).flatten();
            (role, tool, text.into())
        }
        EntryBody::CustomMessage { content } => {
            let mut text = String::new();
            content_text(content, &mut text);
            ("custom", None, text.into())
        }
        EntryBody::BranchSummary { summary, .. } => ("branchSummary", None, summary.decode()),
        EntryBody::Compaction(c) => ("compactionSummary", None, c.summary.decode()),
        EntryBody::Other => return None,
    };
    (!text.trim().is_empty()).then_some(Document {
        entry_id,
        role,
        tool_name,
        text,
    })
}

/// Text blocks, and tool calls as `name(arguments)`; thinking and images are not
/// searched.
fn content_text(content: &Content<'_>, out: &mut String) {
    let sep = |out: &mut String| {
        if !out.is_empty() {
            out.push('\n');
        }
    };
    match content {
        Content::Absent => {}
        Content::Text(t) => {
            sep(out);
            t.push_to(out);
        }
        Content::Blocks(blocks) => {
            for b in blocks {
                match b {
                    Block::Text(t) => {
                        sep(out);
                        t.push_to(out);
                    }
                    Block::ToolCall(c) => {
                        sep(out);
                        c.name.push_to(out);
                        out.push('(');
                        out.push_str(c.arguments.0);
                        out.push(')');
                    }
                    Block::Thinking(_) | Block::Image | Block::Other => {}
                }
            }
        }
    }
}

/// A tool result's `toolName`.
fn tool_name(e: &Entry<'_>) -> Option<String> {
    let message = e.message_text()?;
    let raw = crate::session::entry::scan::field(message.0, b"toolName")??;
    serde_json::from_str::<String>(raw.0).ok()
}

/// The `limit` best matches of `query` among `docs` (at most [`MAX_LIMIT`]), best
/// first. A query without terms matches nothing.
pub fn search(docs: &[Document<'_>], query: &str, limit: usize) -> Vec<Hit> {
    let (wanted, kinds) = query_terms(query);
    let weight: Vec<f64> = kinds.iter().map(|k| k.weight()).collect();
    let limit = limit.min(MAX_LIMIT);
    if wanted.is_empty() || docs.is_empty() || limit == 0 {
        return Vec::new();
    }
    let index: HashMap<&str, usize> = wanted
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    let filter = Filter::of(&wanted);
    let mut buf = String::new();
    // One pass: the query's term counts per entry, and each entry's length in terms.
    let mut counts: Vec<(usize, Vec<u32>)> = Vec::with_capacity(docs.len());
    let mut df = vec![0u32; wanted.len()];
    for d in docs {
        crate::cancel::checkpoint();
        let mut tf = vec![0u32; wanted.len()];
        let mut len = 0usize;
        each_raw_term(&d.text, |raw, _, _| {
            len += 1;
            if !filter.may_hold(raw) {
                return;
            }
            buf.clear();
            buf.extend(raw.chars().flat_map(char::to_lowercase));
            if let Some(&i) = index.get(buf.as_str()) {
                tf[i] += 1;
            }
        });
        for (i, n) in tf.iter().enumerate() {
            df[i] += u32::from(*n > 0);
        }
        counts.push((len, tf));
    }
    let n = docs.len() as f64;
    let avg = counts.iter().map(|(l, _)| *l as f64).sum::<f64>() / n;
    let idf: Vec<f64> = df
        .iter()
        .zip(&weight)
        .map(|(&d, w)| w * (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
        .collect();
    // (identifiers of the query held, BM25, position)
    let mut scored: Vec<(usize, f64, usize)> = counts
        .iter()
        .enumerate()
        .filter_map(|(p, (len, tf))| {
            let norm = K1 * (1.0 - B + B * *len as f64 / avg.max(1.0));
            let s: f64 = tf
                .iter()
                .zip(&idf)
                .filter(|(t, _)| **t > 0)
                .map(|(&t, w)| w * t as f64 * (K1 + 1.0) / (t as f64 + norm))
                .sum();
            let held = tf
                .iter()
                .zip(&kinds)
                .filter(|(t, k)| **t > 0 && **k == TermKind::Identifier)
                .count();
            (s > 0.0).then_some((held, s, p))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(b.2.cmp(&a.2)));
    scored.truncate(limit);
    scored
        .into_iter()
        .map(|(_, score, p)| {
            let d = &docs[p];
            Hit {
                entry_id: d.entry_id.to_string(),
                role: d.role,
                tool_name: d.tool_name.clone(),
                excerpt: redact(&excerpt(&d.text, &index, &idf)).into_owned(),
                score: (score * 10_000.0).round() / 10_000.0,
            }
        })
        .collect()
}

/// Which raw terms can be one of the query's, by their first letter and length: most
/// terms of an entry are told apart without lower-casing or hashing them.
struct Filter {
    /// Per ASCII first character (lower case), a bit per byte length (63: longer).
    ascii: [u64; 128],
}

impl Filter {
    fn of(terms: &[String]) -> Filter {
        let mut ascii = [0u64; 128];
        for t in terms {
            if let Some(c) = t.chars().next().filter(char::is_ascii) {
                ascii[c as usize] |= 1 << t.len().min(63);
            } else {
                // A term whose first character is not ASCII: nothing is ruled out.
                ascii = [u64::MAX; 128];
            }
        }
        Filter { ascii }
    }

    fn may_hold(&self, raw: &str) -> bool {
        if !raw.is_ascii() {
            return true;
        }
        let first = raw.as_bytes()[0].to_ascii_lowercase() as usize;
        self.ascii[first] & (1 << raw.len().min(63)) != 0
    }
}

/// What a term of the query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TermKind {
    /// A word of its own.
    Word,
    /// A whole identifier (`src/lex.ts`, `modelSelector`, `E0425`): the entries that
    /// hold it rank before those that do not.
    Identifier,
    /// A word the query holds only inside an identifier (`model` in `modelSelector`).
    Part,
}

impl TermKind {
    fn weight(self) -> f64 {
        match self {
            TermKind::Word | TermKind::Identifier => 1.0,
            TermKind::Part => PART_WEIGHT,
        }
    }
}

/// The query's distinct terms and what each is: the entries holding an identifier itself
/// come first, and a word only inside it weighs [`PART_WEIGHT`], so those sharing a part
/// of it come after.
fn query_terms(query: &str) -> (Vec<String>, Vec<TermKind>) {
    let mut found: Vec<(String, usize, usize)> = Vec::new();
    each_term(query, |t, s, e| found.push((t.to_string(), s, e)));
    // A query is a few words: the rest of a very long one is not read.
    found.truncate(MAX_QUERY_TERMS);
    let mut terms: Vec<String> = Vec::new();
    let mut kinds: Vec<TermKind> = Vec::new();
    for (t, s, e) in &found {
        let other = |(_, s2, e2): &&(String, usize, usize)| (*s2, *e2) != (*s, *e);
        let inside = found
            .iter()
            .filter(other)
            .any(|(_, s2, e2)| s2 <= s && e <= e2);
        let holds = found
            .iter()
            .filter(other)
            .any(|(_, s2, e2)| s <= s2 && e2 <= e);
        let kind = match (inside, holds) {
            (true, _) => TermKind::Part,
            (false, true) => TermKind::Identifier,
            (false, false) => TermKind::Word,
        };
        match terms.iter().position(|o| o == t) {
            // Said on its own somewhere, a word is a word.
            Some(i) if kinds[i] == TermKind::Part => kinds[i] = kind,
            Some(_) => {}
            None => {
                terms.push(t.clone());
                kinds.push(kind);
            }
        }
    }
    (terms, kinds)
}

/// The passage of at most [`EXCERPT_CHARS`] characters that holds the most weight of
/// the query's terms, cut at word boundaries, with `…` where it was cut.
fn excerpt(text: &str, index: &HashMap<&str, usize>, idf: &[f64]) -> String {
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    each_term(text, |t, s, e| {
        if let Some(&i) = index.get(t) {
            hits.push((s, e, i));
        }
    });
    // The window starting at a hit that covers the most distinct weight, among the first
    // hits (bounded work however often an entry repeats a term). The window is counted in
    // bytes: as many characters for ASCII text, fewer for other scripts.
    hits.truncate(EXCERPT_ANCHORS);
    let mut best = (f64::MIN, 0usize);
    let mut seen = vec![false; idf.len()];
    for (k, &(start, _, _)) in hits.iter().enumerate() {
        seen.iter_mut().for_each(|s| *s = false);
        let mut weight = 0.0;
        for &(_, e, i) in &hits[k..] {
            if e - start > EXCERPT_CHARS {
                break;
            }
            if !seen[i] {
                seen[i] = true;
                weight += idf[i];
            }
        }
        if weight > best.0 {
            best = (weight, start);
        }
    }
    let anchor = best.1;
    // Some context before the first hit: a fifth of the room.
    let lead = EXCERPT_CHARS / 5;
    let mut from = anchor;
    for (n, (i, _)) in text[..anchor].char_indices().rev().enumerate() {
        from = i;
        if n + 1 >= lead {
            break;
        }
    }
    let mut to = text.len();
    for (n, (i, _)) in text[from..].char_indices().enumerate() {
        if n == EXCERPT_CHARS {
            to = from + i;
            break;
        }
    }
    // Whole words: move the ends inward to whitespace when they cut one.
    if from > 0 {
        if let Some(ws) = text[from..anchor].find(char::is_whitespace) {
            from += ws;
        }
    }
    if to < text.len() {
        if let Some(ws) = text[anchor.max(from)..to].rfind(char::is_whitespace) {
            to = anchor.max(from) + ws;
        }
    }
    let body = text[from..to]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::with_capacity(body.len() + 8);
    if from > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if to < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
