//! The fast paths of `json::escaped` against the plain paths they stand in for.

use super::*;
use crate::json::string;

/// The escape-start backslashes of `b` read one byte at a time, from a first byte
/// escaped (`carry`) or not.
fn escape_starts(b: &[u8], carry: bool) -> u64 {
    let (mut m, mut i) = (0u64, carry as usize);
    while i < b.len() {
        if b[i] == b'\\' {
            m |= 1 << i;
            i += 2;
        } else {
            i += 1;
        }
    }
    m
}

#[test]
fn escape_starts_agree_with_a_byte_wise_reading() {
    let mut rng = fastrand::Rng::with_seed(22);
    for _ in 0..20_000 {
        let b: Vec<u8> = (0..64)
            .map(|_| if rng.u8(..3) == 0 { b'a' } else { b'\\' })
            .collect();
        let bs = b
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &c)| m | ((c == b'\\') as u64) << k);
        for carry in [false, true] {
            let want = escape_starts(&b, carry);
            let (escaped, escape, next) = escapes(bs, carry as u64);
            assert_eq!(escape, want, "{b:?} {carry}");
            assert_eq!(escaped, (want << 1) | carry as u64, "{b:?} {carry}");
            assert_eq!(next, want >> 63);
        }
    }
}

/// Valid bodies of `len` pieces, rich in what the fast paths must get right; with
/// `sparse`, runs of plain text of up to 70 bytes between them (one escape in a
/// block, at any of its bytes).
pub(crate) fn random_body_with(rng: &mut fastrand::Rng, len: usize, sparse: bool) -> String {
    let mut s = String::new();
    for _ in 0..len {
        if sparse {
            s.push_str(&"x".repeat(rng.usize(..70)));
        }
        s.push_str(&random_body(rng, 1));
    }
    s
}

/// Valid bodies of `len` pieces, rich in what the fast paths must get right.
pub(crate) fn random_body(rng: &mut fastrand::Rng, len: usize) -> String {
    const MORE: [&str; 6] = [
        r"\\\\",
        r"\\\n",
        r"\\u0041",
        "abcdefghijklmnopqrstuvw",
        "𝒳",
        r"\/",
    ];
    let pieces = crate::json::transcode::tests::PIECES;
    (0..len)
        .map(|_| match rng.usize(..pieces.len() + MORE.len() + 8) {
            k if k < pieces.len() => pieces[k],
            k if k < pieces.len() + MORE.len() => MORE[k - pieces.len()],
            _ => "a",
        })
        .collect()
}

/// Decode, then escape: what `write_decoded_contents` must give.
fn decoded_then_escaped(body: &str) -> Vec<u8> {
    let mut text = String::new();
    string::unescape_into(body, &mut text);
    let mut out = Vec::new();
    crate::json::write::write_str_contents(&mut out, &text);
    out
}

#[test]
fn block_copies_agree_with_decoding_then_escaping() {
    use crate::json::transcode::{write_decoded_contents, write_decoded_prefix};
    let mut rng = fastrand::Rng::with_seed(65);
    for round in 0..3000 {
        let body = random_body_with(&mut rng, round % 60, round % 3 != 0);
        let mut out = b"x".to_vec();
        write_decoded_contents(&mut out, &body);
        assert_eq!(out[1..], decoded_then_escaped(&body), "{body:?}");
        assert_eq!(
            escaped_utf16_len(&body),
            string::escaped_utf16_len(&body),
            "{body:?}"
        );
        for max in [rng.usize(..body.len() + 2), 64, 2000] {
            let mut text = String::new();
            string::unescape_prefix_into(&body, &mut text, max);
            let mut want = Vec::new();
            crate::json::write::write_str_contents(&mut want, &text);
            let mut out = Vec::new();
            write_decoded_prefix(&mut out, &body, max);
            assert_eq!(out, want, "{body:?} {max}");
        }
    }
}

#[test]
fn one_escape_at_every_byte_of_a_block_is_found() {
    use crate::json::transcode::tests::PIECES;
    use crate::json::transcode::write_decoded_contents;
    for p in PIECES
        .iter()
        .chain(&[r"\\\\", r"\\\/", r"\\\u0041", "\u{1}", "\""])
    {
        for pad in 0..140 {
            for tail in [0, 1, 63, 64, 65, 130] {
                let body = format!("{}{p}{}", "a".repeat(pad), "b".repeat(tail));
                let mut out = Vec::new();
                write_decoded_contents(&mut out, &body);
                assert_eq!(out, decoded_then_escaped(&body), "{body:?}");
                if !body.contains('"') && !body.contains('\u{1}') {
                    let n = string::escaped_utf16_len(&body);
                    assert_eq!(escaped_utf16_len(&body), n, "{body:?}");
                }
            }
        }
    }
}

/// `write_js_literal_escaped` against its plain path (a stop at every backslash);
/// the plain path is held to `JSON.stringify` in `compaction::conversation_json`.
fn check_js(body: &str) {
    use crate::json::transcode::{js_stop, write_js_literal_escaped};
    let mut out = b"x".to_vec();
    write_js_literal_escaped(&mut out, body);
    let mut want = b"x\\\"".to_vec();
    crate::json::write::escape_with(&mut want, body.as_bytes(), js_stop);
    want.extend_from_slice(b"\\\"");
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&want),
        "{body:?}"
    );
}

#[test]
fn js_block_copies_agree_with_the_plain_path() {
    let mut rng = fastrand::Rng::with_seed(96);
    for round in 0..3000 {
        check_js(&random_body_with(&mut rng, round % 70, round % 3 != 0));
    }
    use crate::json::transcode::tests::PIECES;
    // Raw quotes and control bytes, and a control byte after a backslash: not valid,
    // but written as the plain path writes them all the same.
    let more = [r"\\\\", r"\\\/", r"\\\u0041", "\u{1}", "\"", "\\\u{1}"];
    for p in PIECES.iter().chain(&more) {
        for pad in 0..170 {
            for tail in [0, 1, 31, 32, 33, 63, 64, 65, 96, 130] {
                check_js(&format!("{}{p}{}", "a".repeat(pad), "b".repeat(tail)));
            }
        }
    }
}

#[test]
fn utf16_lengths_agree_with_the_plain_count() {
    let mut rng = fastrand::Rng::with_seed(16);
    for len in 0..600 {
        let body = random_body(&mut rng, len % 300);
        // Every offset of the block grid.
        for pad in [0, 1, 5, 63] {
            let b = format!("{}{body}", "a".repeat(pad));
            assert_eq!(
                escaped_utf16_len(&b),
                string::escaped_utf16_len(&b),
                "{b:?}"
            );
        }
    }
}

#[test]
fn prefix_starts_are_clean_and_within_the_prefix() {
    let mut rng = fastrand::Rng::with_seed(2000);
    for len in (0..400).step_by(7) {
        let body = random_body(&mut rng, len);
        for max in [0, 1, 63, 64, 65, 100, 500, 1999, 2000, 5000] {
            let (at, units) = prefix_start(body.as_bytes(), max);
            assert!(body.is_char_boundary(at), "{body:?} {max}");
            let (before, after) = body.split_at(at);
            // Clean: the text before decodes on its own to `units` units, and the
            // two parts decode to the whole.
            assert_eq!(string::escaped_utf16_len(before), units, "{body:?} {max}");
            let (mut whole, mut parts) = (String::new(), String::new());
            string::unescape_into(&body, &mut whole);
            string::unescape_into(before, &mut parts);
            string::unescape_into(after, &mut parts);
            assert_eq!(parts, whole, "{body:?} {max}");
            let mut text = String::new();
            let n = string::unescape_prefix_into(&body, &mut text, max);
            assert!(units <= n, "{body:?} {max}");
        }
    }
}
