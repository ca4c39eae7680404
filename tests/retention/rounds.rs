//! Five rounds of compaction, fed back as pi stores them, and what survives each.
//!
//! Round 1 compacts the generated session. Every later round appends, as pi does, the
//! previous round's compaction entry at the leaf and then more generated conversation
//! (with new planted items), and compacts that. After each round the context a
//! continuing agent would see is built exactly as pi builds it
//! (`compaction::context::context_messages` on the session with the new entry
//! appended): the latest summary plus the kept messages.
//!
//! ## Budget
//!
//! A budget `f` (10 %, 20 %, 30 %) is a share of `T`, the tokens of the context the agent
//! holds when it compacts (`tokensBefore` of that round). With `B = floor(f × T)`:
//! `keepRecentTokens = B / 2` (the kept messages) and `reserveTokens = ceil(B / 2 × 5 / 4)`,
//! so that the history summary's output budget (`floor(0.8 × reserveTokens)`) is `B / 2`.
//! The context after compaction is then about `B`; the table reports the measured
//! `tokensAfter / tokensBefore` as `size` (pi cuts at turn boundaries and a split turn
//! adds a turn-prefix summary, so it is not exactly `f`).

use compactd::compaction::context::context_messages;
use compactd::compaction::ledger::PINNED_HEADING;
use compactd::compaction::{serialize_conversation, AgentMessage, Settings};
use compactd::config::Checking;
use compactd::pipeline::compact::{plan_compaction, run_compaction, PlanError};
use compactd::pipeline::{BodyFormat, CompactOptions, SessionInput};
use compactd::summarize::{Prompts, Summarize};

use crate::generate::{self, Gen, ItemType, Planted};
use crate::session_writer::SessionWriter;

pub const ROUNDS: usize = 5;

/// Turns of conversation in the first round and in each later one.
const FIRST_TURNS: usize = 24;
const LATER_TURNS: usize = 10;

/// One item as tracked across rounds.
#[derive(Debug, Clone)]
pub struct Tracked {
    pub item: Planted,
    /// Every value this item's subject held before (supersessions).
    pub old_values: Vec<String>,
    /// The round whose conversation superseded it (then it is no longer measured).
    pub superseded_in: Option<usize>,
}

/// What one round measured.
#[derive(Debug, Clone, Default)]
pub struct RoundResult {
    /// Per type: (items present in the context, items measured).
    pub by_type: Vec<(ItemType, usize, usize)>,
    /// Supersessions whose old value is in the context while the new one is not.
    pub stale: usize,
    /// Supersessions measured.
    pub supersessions: usize,
    /// 1 when this round's summary text carries a secret value.
    pub secret_in_summary: usize,
    /// 1 when this round's `details` or restored pinned section carries a secret value.
    pub secret_in_pinned: usize,
    /// Items planted in the first round: (present, measured).
    pub first_round: (usize, usize),
    pub tokens_before: f64,
    pub tokens_after: u64,
}

impl RoundResult {
    pub fn totals(&self) -> (usize, usize) {
        self.by_type
            .iter()
            .fold((0, 0), |(a, b), (_, p, n)| (a + p, b + n))
    }
}

/// A value is present when it occurs with no letter or digit glued to either side.
pub fn contains_value(hay: &str, value: &str) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let mut from = 0;
    while let Some(i) = hay[from..].find(value) {
        let at = from + i;
        let before = hay[..at].chars().next_back();
        let after = hay[at + value.len()..].chars().next();
        // A value that itself starts/ends with punctuation cannot be glued there.
        let v_first = value.chars().next().unwrap();
        let v_last = value.chars().next_back().unwrap();
        let ok_before = !v_first.is_ascii_alphanumeric() || !glued(before);
        let ok_after = !v_last.is_ascii_alphanumeric() || !glued(after);
        if ok_before && ok_after {
            return true;
        }
        from = at + value.len();
    }
    false
}

/// The phrasings not used yet in a session, shuffled: a session uses each once.
pub struct Deck(Vec<(ItemType, u32)>);

impl Deck {
    pub fn new(g: &mut Gen) -> Self {
        let mut all: Vec<(ItemType, u32)> = ItemType::ALL
            .iter()
            .filter(|&&k| k != ItemType::Objective)
            .flat_map(|&k| (0..generate::variants(k)).map(move |v| (k, v)))
            .collect();
        g.rng.shuffle(&mut all);
        Deck(all)
    }

    fn take(&mut self, kind: ItemType) -> Option<u32> {
        let i = self.0.iter().position(|&(k, _)| k == kind)?;
        Some(self.0.remove(i).1)
    }
}

/// Appends one round's conversation with its planted items at early, middle and late
/// turns. Returns the new tracked items (and marks the ones a new statement replaced).
pub fn segment(
    g: &mut Gen,
    w: &mut SessionWriter,
    round: usize,
    tracked: &mut [Tracked],
    deck: &mut Deck,
) -> Vec<Tracked> {
    let (turns, mut kinds) = if round == 1 {
        (
            FIRST_TURNS,
            vec![
                ItemType::Rule,
                ItemType::Constraint,
                ItemType::Preference,
                ItemType::Fact,
                ItemType::Credential,
                ItemType::Decision,
                ItemType::Supersession,
                ItemType::Rule,
                ItemType::Fact,
            ],
        )
    } else {
        const LATER: [ItemType; 6] = [
            ItemType::Rule,
            ItemType::Constraint,
            ItemType::Preference,
            ItemType::Fact,
            ItemType::Decision,
            ItemType::Supersession,
        ];
        let mut k: Vec<ItemType> = (0..3).map(|_| LATER[g.rng.usize(..LATER.len())]).collect();
        if round == 3 {
            k.push(ItemType::Credential);
        }
        (LATER_TURNS, k)
    };
    g.rng.shuffle(&mut kinds);

    // Per turn: user sentences and assistant sentences to plant.
    let mut user_at: Vec<Vec<String>> = vec![Vec::new(); turns];
    let mut assistant_at: Vec<Vec<String>> = vec![Vec::new(); turns];
    let mut new = Vec::new();
    if round == 1 {
        let o = generate::objective(g);
        user_at[0].push(o.text.clone());
        new.push(Tracked {
            item: o,
            old_values: Vec::new(),
            superseded_in: None,
        });
    }
    let third = turns / 3;
    for (n, kind) in kinds.into_iter().enumerate() {
        // Early, middle, late in turn: every position gets items.
        let zone = n % 3;
        let at = zone * third + g.rng.usize(..third) + usize::from(zone == 0 && round == 1);
        let at = at.min(turns - 1);
        let variant = deck.take(kind);
        if kind == ItemType::Supersession {
            let Some(variant) = variant else {
                // Every subject is in use: a new value for the oldest current one.
                let prev = tracked
                    .iter_mut()
                    .find(|t| t.item.kind == ItemType::Supersession && t.superseded_in.is_none())
                    .expect("a subject in use");
                let v = loop {
                    let v = g.four().to_string();
                    if v != prev.item.values[0] && !prev.old_values.contains(&v) {
                        break v;
                    }
                };
                let text = prev.item.text.replace(&prev.item.values[0], &v);
                prev.superseded_in = Some(round);
                let mut old_values = prev.old_values.clone();
                old_values.push(prev.item.values[0].clone());
                user_at[at].push(text.clone());
                new.push(Tracked {
                    item: Planted {
                        text,
                        values: vec![v],
                        old_value: old_values.last().cloned(),
                        round,
                        ..prev.item.clone()
                    },
                    old_values,
                    superseded_in: None,
                });
                continue;
            };
            let (old, item) = generate::supersession(g, variant, round);
            let first = g.rng.usize(..(at.max(1)));
            user_at[first.min(at)].push(old);
            user_at[at].push(item.text.clone());
            new.push(Tracked {
                old_values: item.old_value.iter().cloned().collect(),
                item,
                superseded_in: None,
            });
            continue;
        }
        let (kind, variant) = match variant {
            Some(v) => (kind, v),
            // This kind's phrasings are used up: any unused one.
            None => match deck
                .0
                .iter()
                .position(|&(k, _)| k != ItemType::Supersession && k != ItemType::Credential)
            {
                Some(i) => deck.0.remove(i),
                None => continue,
            },
        };
        let item = generate::item(g, kind, variant, round);
        if kind == ItemType::Decision && g.rng.u32(..3) == 0 {
            assistant_at[at].push(item.text.clone());
        } else {
            user_at[at].push(item.text.clone());
        }
        new.push(Tracked {
            item,
            old_values: Vec::new(),
            superseded_in: None,
        });
    }
    for t in 0..turns {
        w.turn(g, &user_at[t], &assistant_at[t]);
    }
    new
}

/// The service's default checking (pinned ledger on); `RETENTION_PIN=false` turns the
/// ledger off, which measures the pipeline as it was before the ledger existed.
pub fn checking() -> Checking {
    Checking {
        pin: std::env::var("RETENTION_PIN").map_or(true, |v| v != "false"),
        ..Checking::default()
    }
}

/// Compaction settings for budget `f` of `tokens_before` (see the module docs).
pub fn budget_settings(f: f64, tokens_before: f64) -> Settings {
    let b = (f * tokens_before).floor() as u64;
    let half = b / 2;
    Settings {
        keep_recent_tokens: half.max(1),
        reserve_tokens: (half * 5).div_ceil(4).max(2),
    }
}

fn options(s: Settings) -> CompactOptions {
    let mut o = CompactOptions::default();
    o.prepare.keep_recent_tokens = Some(s.keep_recent_tokens);
    o.prepare.reserve_tokens = Some(s.reserve_tokens);
    o
}

/// The context pi would build from `session` (its last entry the leaf), as text: the
/// latest summary, then the kept messages serialized as the summarizer sees them.
fn context_text(session: &str, summary: &str, prompts: &Prompts) -> String {
    let input = SessionInput::parse(
        session.as_bytes(),
        BodyFormat::Jsonl,
        CompactOptions::default(),
    )
    .expect("the fed-back session parses");
    let positions = input.path(None).expect("the session has a path");
    let path: Vec<_> = positions
        .iter()
        .map(|&i| &input.session.entries[i])
        .collect();
    let kept: Vec<AgentMessage> = context_messages(&path)
        .into_iter()
        .filter(|m| !matches!(m, AgentMessage::CompactionSummary(_)))
        .collect();
    format!(
        "{summary}\n\n{}",
        serialize_conversation(kept, &prompts.wrappers)
    )
}

/// Runs five rounds for one seed, budget and summarizer.
pub fn run(seed: u64, f: f64, summarizer: &dyn Summarize) -> Vec<RoundResult> {
    let prompts = Prompts::builtin();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let mut g = Gen::new(seed);
    let mut w = SessionWriter::new(seed);
    let mut tracked: Vec<Tracked> = Vec::new();
    let mut deck = Deck::new(&mut g);
    let mut results = Vec::new();
    for round in 1..=ROUNDS {
        let new = segment(&mut g, &mut w, round, &mut tracked, &mut deck);
        tracked.extend(new);
        let session = w.text();
        let input = SessionInput::parse(
            session.as_bytes(),
            BodyFormat::Jsonl,
            CompactOptions::default(),
        )
        .expect("the generated session parses");
        // T: tokensBefore, from a plan with default settings.
        let tokens_before = match plan_compaction(&input, &prompts, Settings::default(), checking())
        {
            Ok(p) => p.tokens_before,
            Err(PlanError::NothingToCompact(n)) => n.tokens_before,
            Err(e) => panic!("seed {seed} round {round}: {e}"),
        };
        let settings = budget_settings(f, tokens_before);
        let input = SessionInput::parse(session.as_bytes(), BodyFormat::Jsonl, options(settings))
            .expect("the generated session parses");
        let plan = plan_compaction(&input, &prompts, settings, checking())
            .unwrap_or_else(|e| panic!("seed {seed} round {round} budget {f}: {e}"));
        let result = runtime
            .block_on(run_compaction(
                plan,
                &prompts,
                summarizer,
                time::OffsetDateTime::UNIX_EPOCH,
                &compactd::summarize::Silent,
            ))
            .expect("the fake summarizers never fail");
        let details_text = result.entry["details"].to_string();
        let restored = result
            .summary
            .find(PINNED_HEADING)
            .map_or("", |at| &result.summary[at..]);
        w.append_entry(result.entry.clone());
        let context = context_text(&w.text(), &result.summary, &prompts);
        if std::env::var("RETENTION_DEBUG").is_ok_and(|v| v == format!("{seed}/{round}")) {
            eprintln!(
                "--- seed {seed} round {round} budget {f}: context ---\n{context}\n--- items ---"
            );
            for t in &tracked {
                eprintln!("{:?} {:?}", t.item.kind, t.item.values);
            }
        }

        let mut r = RoundResult {
            tokens_before,
            tokens_after: result.tokens_after,
            ..RoundResult::default()
        };
        for kind in ItemType::ALL {
            let measured: Vec<&Tracked> = tracked
                .iter()
                .filter(|t| t.item.kind == kind && t.superseded_in.is_none())
                .collect();
            let present = measured
                .iter()
                .filter(|t| t.item.values.iter().all(|v| contains_value(&context, v)))
                .count();
            if std::env::var("RETENTION_MISSING").is_ok() {
                for t in &measured {
                    if !t.item.values.iter().all(|v| contains_value(&context, v)) {
                        eprintln!(
                            "missing: seed {seed} budget {f} round {round}: {}",
                            t.item.text
                        );
                    }
                }
            }
            r.by_type.push((kind, present, measured.len()));
        }
        for t in tracked
            .iter()
            .filter(|t| t.item.round == 1 && t.superseded_in.is_none())
        {
            r.first_round.1 += 1;
            if t.item.values.iter().all(|v| contains_value(&context, v)) {
                r.first_round.0 += 1;
            }
        }
        for t in tracked
            .iter()
            .filter(|t| !t.old_values.is_empty() && t.superseded_in.is_none())
        {
            r.supersessions += 1;
            let new_present = contains_value(&context, &t.item.values[0]);
            let old_present = t.old_values.iter().any(|v| contains_value(&context, v));
            if old_present && !new_present {
                r.stale += 1;
            }
        }
        let secrets: Vec<&String> = tracked
            .iter()
            .filter_map(|t| t.item.secret.as_ref())
            .collect();
        let has_secret =
            |text: &str| usize::from(secrets.iter().any(|v| text.contains(v.as_str())));
        r.secret_in_summary = has_secret(&result.summary);
        r.secret_in_pinned = has_secret(&details_text).max(has_secret(restored));
        results.push(r);
    }
    results
}
