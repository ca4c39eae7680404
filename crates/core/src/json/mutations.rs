//! Test material for the differential tests of the lexer and of the entry scanner: real
//! session lines from the conformance corpus, and random byte edits of them drawn from
//! the characters JSON syntax turns on. Whatever a fast path accepts among these, serde_json
//! must accept as the same thing.

/// Up to 40 corpus files' lines shorter than 4000 bytes.
pub(crate) fn corpus_lines() -> Vec<String> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/corpus");
    let mut lines = Vec::new();
    for f in std::fs::read_dir(dir).unwrap().take(40) {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        lines.extend(text.lines().filter(|l| l.len() < 4000).map(str::to_string));
    }
    assert!(lines.len() > 100);
    lines
}

/// `line` with `edits` random replacements, deletions or insertions; `None` when the
/// bytes are no longer UTF-8 (the parsers take `&str`).
pub(crate) fn mutate(line: &str, edits: usize, rng: &mut fastrand::Rng) -> Option<String> {
    const ALPHABET: &[u8] = b"{}[]\",:\\/ \t\n0123456789-+.eEnulltruefalsu\x01\x1f\x7fabcdefABCDEF";
    let mut b = line.as_bytes().to_vec();
    for _ in 0..edits {
        let at = rng.usize(..b.len().max(1));
        let c = ALPHABET[rng.usize(..ALPHABET.len())];
        match rng.u8(..3) {
            0 if at < b.len() => b[at] = c,
            1 if at < b.len() => drop(b.remove(at)),
            _ => b.insert(at.min(b.len()), c),
        }
    }
    String::from_utf8(b).ok()
}
