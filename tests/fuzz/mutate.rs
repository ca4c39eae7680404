//! Seedable mutations shared by the fuzz test and the hostile-body API test.

/// xorshift64*: tiny, seedable, reproducible.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
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
            0 => b[at] = rng.next() as u8,
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
