//! The generator of pi sessions with planted items, seeded with `fastrand`.
//!
//! A conversation is a sequence of turns: a user request, an assistant answer with tool
//! calls (`read`, `bash`, `edit`, `grep`), their results (source listings, test runs,
//! search hits) and a closing assistant line. The filler is realistic in shape and
//! size but never carries a planted value: filler numbers stay below 1,000 and filler
//! words come from fixed lists, while every planted value is drawn at random (made-up
//! words, four-digit numbers, hex ids), so no summarizer can guess one and no filler
//! line can carry one by chance.
//!
//! Planted items ride in user messages (decisions sometimes in the assistant's), at
//! early, middle and late turns of each segment, alone or before a request, as people
//! write them. A supersession plants an old value and later a new one on the same
//! subject; only the newest is the item, the old value is tracked for the "stale"
//! metric. A credential is planted with its name (the item) and a secret value that
//! must never appear in any summary.

/// What a planted item is, as the issue lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ItemType {
    Objective,
    Rule,
    Constraint,
    Preference,
    Fact,
    Credential,
    Decision,
    Supersession,
}

impl ItemType {
    pub const ALL: [ItemType; 8] = [
        ItemType::Objective,
        ItemType::Rule,
        ItemType::Constraint,
        ItemType::Preference,
        ItemType::Fact,
        ItemType::Credential,
        ItemType::Decision,
        ItemType::Supersession,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ItemType::Objective => "objective",
            ItemType::Rule => "rule",
            ItemType::Constraint => "constraint",
            ItemType::Preference => "preference",
            ItemType::Fact => "fact",
            ItemType::Credential => "credential",
            ItemType::Decision => "decision",
            ItemType::Supersession => "supersession",
        }
    }
}

/// One planted item: the values a continuing agent must still see.
#[derive(Debug, Clone)]
pub struct Planted {
    pub kind: ItemType,
    /// The sentence as planted (the newest one for a supersession).
    pub text: String,
    /// Every value must appear exactly for the item to survive.
    pub values: Vec<String>,
    /// A supersession's replaced value: not to be presented as current.
    pub old_value: Option<String>,
    /// A credential's value: never to appear in any summary.
    pub secret: Option<String>,
    /// The round (1-based) whose conversation planted it.
    pub round: usize,
}

/// A seeded source of made-up values.
pub struct Gen {
    pub rng: fastrand::Rng,
}

const ONSETS: [&str; 16] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr",
];
const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];
const CODAS: [&str; 8] = ["", "n", "r", "l", "x", "k", "m", "s"];

impl Gen {
    pub fn new(seed: u64) -> Self {
        Gen {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn pick<'a, T: ?Sized>(&mut self, xs: &[&'a T]) -> &'a T {
        xs[self.rng.usize(..xs.len())]
    }

    /// A made-up word of three syllables (about 10^6 of them): unguessable.
    pub fn word(&mut self) -> String {
        (0..3)
            .map(|_| {
                format!(
                    "{}{}{}",
                    self.pick(&ONSETS),
                    self.pick(&VOWELS),
                    self.pick(&CODAS)
                )
            })
            .collect()
    }

    /// A four-digit number (1000..=9999), never a filler number.
    pub fn four(&mut self) -> u32 {
        self.rng.u32(1000..=9999)
    }

    /// `4817` as `4,817`.
    pub fn grouped(n: u32) -> String {
        format!("{},{:03}", n / 1000, n % 1000)
    }

    pub fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from_digit(self.rng.u32(..16), 16).unwrap())
            .collect()
    }

    pub fn alnum(&mut self, len: usize) -> String {
        const A: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        (0..len)
            .map(|_| A[self.rng.usize(..A.len())] as char)
            .collect()
    }

    pub fn version(&mut self) -> String {
        format!(
            "{}.{}.{}",
            self.rng.u32(2..=9),
            self.rng.u32(10..=60),
            self.rng.u32(100..=999)
        )
    }
}

/// The objective, planted once at the first turn of the first round.
pub fn objective(g: &mut Gen) -> Planted {
    let svc = g.word();
    let (text, values) = match g.rng.u32(..3) {
        0 => (
            format!("Goal: build a CSV invoice exporter for the {svc} billing service."),
            vec![svc],
        ),
        1 => (
            format!(
                "I want you to migrate the {svc} service from callbacks to async/await, module by module."
            ),
            vec![svc],
        ),
        _ => (
            format!("We need a rate limiter in front of the {svc} API; that's the task for today."),
            vec![svc],
        ),
    };
    Planted {
        kind: ItemType::Objective,
        text,
        values,
        old_value: None,
        secret: None,
        round: 1,
    }
}

/// How many phrasings (each its own subject) a kind has. A session uses each at most
/// once: a second "Budget cap is ..." would supersede the first, not add an item.
pub fn variants(kind: ItemType) -> u32 {
    match kind {
        ItemType::Objective => 1,
        ItemType::Rule => 4,
        ItemType::Constraint => 5,
        ItemType::Preference => 5,
        ItemType::Fact => 4,
        ItemType::Credential => 2,
        ItemType::Decision => 5,
        ItemType::Supersession => 3,
    }
}

/// One item of `kind` in phrasing `variant` (not the objective, not a supersession).
pub fn item(g: &mut Gen, kind: ItemType, variant: u32, round: usize) -> Planted {
    let mut secret = None;
    let (text, values) = match kind {
        ItemType::Rule => match variant {
            0 => {
                let v = format!("${}", Gen::grouped(g.four()));
                (
                    format!("Budget cap is {v} total. Never exceed it."),
                    vec![v],
                )
            }
            1 => {
                let host = format!("{}-{}", g.word(), g.rng.u32(10..99));
                (format!("Never deploy to {host} on a Friday."), vec![host])
            }
            2 => {
                let dir = format!("gen/{}", g.word());
                (
                    format!("Do not edit anything under {dir}, it is generated."),
                    vec![dir],
                )
            }
            _ => {
                let cmd = format!("make check-{}", g.word());
                (
                    format!("Always run `{cmd}` before you commit anything."),
                    vec![cmd],
                )
            }
        },
        ItemType::Constraint => {
            let n = g.four();
            match variant {
                0 => (
                    format!("Hard limit: the export must finish in under {n} ms per page."),
                    vec![n.to_string()],
                ),
                1 => (
                    format!("The batch size must never exceed {n} rows."),
                    vec![n.to_string()],
                ),
                2 => (
                    format!("Memory on the worker has to stay below {n} MiB, no exceptions."),
                    vec![n.to_string()],
                ),
                3 => {
                    let v = Gen::grouped(n);
                    (format!("You must keep the bundle under {v} KB."), vec![v])
                }
                _ => (
                    format!("No single request may take more than {n} tokens, that's a hard cap."),
                    vec![n.to_string()],
                ),
            }
        }
        ItemType::Preference => {
            let w = g.word();
            match variant {
                0 => (
                    format!("I prefer commit messages that start with [{w}]."),
                    vec![format!("[{w}]")],
                ),
                1 => (
                    format!("Please name new branches feature/{w}-something, I like it that way."),
                    vec![format!("feature/{w}")],
                ),
                2 => (
                    format!(
                        "I'd rather have log lines prefixed with {w}: than with the module name."
                    ),
                    vec![format!("{w}:")],
                ),
                3 => (
                    format!("I like test files named after the feature, like {w}.spec.ts."),
                    vec![format!("{w}.spec.ts")],
                ),
                _ => {
                    let code = format!("{}-E{}", w.to_uppercase(), g.rng.u32(100..999));
                    (
                        format!("My preference: error codes in the form {code}."),
                        vec![code],
                    )
                }
            }
        }
        ItemType::Fact => match variant {
            0 => {
                let url = format!(
                    "https://{}.{}.dev/api/v{}",
                    g.word(),
                    g.word(),
                    g.rng.u32(2..9)
                );
                (format!("The staging endpoint is {url}."), vec![url])
            }
            1 => {
                let id = format!("{}-{}", g.word(), g.hex(6));
                (format!("Our project id is {id}."), vec![id])
            }
            2 => {
                let v = g.version();
                let lib = g.word();
                (
                    format!("We are pinned to {lib} {v}, do not upgrade it."),
                    vec![lib, v],
                )
            }
            _ => {
                let port = g.four().to_string();
                let host = format!("db-{}.internal", g.word());
                (
                    format!("The database runs on {host} port {port}."),
                    vec![host, port],
                )
            }
        },
        ItemType::Credential => {
            let name = format!("{}_API_TOKEN", g.word().to_uppercase());
            let value = format!("sk_live_{}", g.alnum(28));
            secret = Some(value.clone());
            let text = if variant == 0 {
                format!("The token is in the {name} environment variable; for now its value is {value}.")
            } else {
                format!(
                    "For the payment sandbox, export {name}={value} before running the e2e suite."
                )
            };
            (text, vec![name])
        }
        ItemType::Decision => {
            let w = g.word();
            match variant {
                0 => (format!("Let's go with {w} as the queue name."), vec![w]),
                1 => {
                    let p = format!("/var/cache/{w}.db");
                    (
                        format!("Decision: we store the cache in {p} instead of Redis."),
                        vec![p],
                    )
                }
                2 => (
                    format!("We decided to call the new crate {w}-core."),
                    vec![format!("{w}-core")],
                ),
                3 => {
                    let v = g.version();
                    (
                        format!("We'll target Node {v} for the build, decided."),
                        vec![v],
                    )
                }
                _ => (
                    format!(
                        "Final answer on the schema: the table is {w}_events, partitioned by day."
                    ),
                    vec![format!("{w}_events")],
                ),
            }
        }
        ItemType::Objective | ItemType::Supersession => unreachable!("planted elsewhere"),
    };
    Planted {
        kind,
        text,
        values,
        old_value: None,
        secret,
        round,
    }
}

/// A supersession on subject `variant`: the old statement and the newer one (the item).
pub fn supersession(g: &mut Gen, variant: u32, round: usize) -> (String, Planted) {
    let (a, b) = (g.four(), g.four());
    let b = if a == b { a % 9000 + 1000 } else { b };
    let (old, new) = match variant {
        0 => (
            format!("Use port {a} for the dev server."),
            format!("Change of plan: use port {b} for the dev server instead."),
        ),
        1 => (
            format!("Set the retry limit to {a} attempts."),
            format!("Actually make the retry limit {b} attempts, not {a}."),
        ),
        _ => (
            format!("The cache TTL should be {a} seconds."),
            format!("Update: the cache TTL should be {b} seconds from now on."),
        ),
    };
    (
        old,
        Planted {
            kind: ItemType::Supersession,
            text: new,
            values: vec![b.to_string()],
            old_value: Some(a.to_string()),
            secret: None,
            round,
        },
    )
}
