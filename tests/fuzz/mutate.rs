//! Seedable mutations shared by the fuzz test and the hostile-body API test.

pub use fastrand::Rng;

/// The draws the mutations make, over a seeded `fastrand::Rng`.
pub trait Draw {
    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize;
    fn chance(&mut self, one_in: usize) -> bool;
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
}

impl Draw for Rng {
    fn below(&mut self, n: usize) -> usize {
        self.usize(..n.max(1))
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

pub const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\u",
    "\\ud800",
    "\\udc00",
    "null",
    "true",
    "-0",
    "1e999",
    "1e21",
    "\"type\"",
    "\"message\"",
    "\"compaction\"",
    "\"branch_summary\"",
    "\"id\"",
    "\"parentId\"",
    "\"role\"",
    "\"assistant\"",
    "\"toolResult\"",
    "\"toolCall\"",
    "\"arguments\"",
    "\"content\"",
    "\"firstKeptEntryId\"",
    "\n",
    "\r\n",
    "😀",
    "\u{0}",
    "\u{feff}",
];

/// Byte-level damage: flipped bytes, JSON tokens spliced in, deletions, duplications.
pub fn mutate_bytes(rng: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            return;
        }
        let at = rng.below(b.len());
        match rng.below(4) {
            0 => b[at] = rng.u8(..),
            1 => {
                let tok = rng.pick(TOKENS).as_bytes();
                b.splice(at..at, tok.iter().copied());
            }
            2 => {
                let end = (at + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            _ => {
                let end = (at + rng.below(256)).min(b.len());
                let chunk = b[at..end].to_vec();
                b.splice(at..at, chunk);
            }
        }
    }
}
