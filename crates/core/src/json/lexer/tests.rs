//! The lexer against serde_json and byte-by-byte readings of its fast paths.

use super::*;

/// The text of the one value in `json`, if the strict lexer takes all of it.
fn strict(json: &str) -> Option<&str> {
    let mut lx = Lexer::strict(json);
    lx.ws();
    let v = lx.value_text()?;
    lx.at_end().then_some(v)
}

fn trusted(json: &str) -> Option<&str> {
    let mut lx = Lexer::trusted(json);
    lx.ws();
    let v = lx.value_text()?;
    lx.at_end().then_some(v)
}

#[test]
fn numbers_follow_the_json_grammar() {
    for n in [
        "0",
        "-0",
        "12",
        "-1.5",
        "1e5",
        "1E+5",
        "2.5e-3",
        "123456789012345678901",
    ] {
        assert_eq!(strict(n), Some(n), "{n}");
        let mut lx = Lexer::strict(n);
        assert_eq!(lx.number(), Some(n));
    }
    for n in ["01", "-", "1.", ".5", "1e", "1e+", "+1", "-a", "0x1"] {
        assert_eq!(strict(n), None, "{n}");
    }
}

#[test]
fn digit_runs_end_where_the_byte_wise_reading_ends() {
    let mut rng = fastrand::Rng::with_seed(5);
    let alphabet = b"0123456789/:.eE-+ \x80\xff";
    for _ in 0..20_000 {
        let len = rng.usize(0..80);
        // Some texts mostly digits: runs past the 16-byte step and the 8-byte tail.
        let other = rng.u8(2..40);
        let text: Vec<u8> = (0..len)
            .map(|_| match rng.u8(..other) {
                0 => alphabet[rng.usize(..alphabet.len())],
                1 => rng.u8(..),
                _ => b'0' + rng.u8(..10),
            })
            .collect();
        for start in 0..=text.len() {
            let mut end = start;
            while text.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            assert_eq!(digits_end(&text, start), end, "{text:?} from {start}");
        }
    }
}

#[test]
fn control_bytes_are_found_anywhere() {
    let mut rng = fastrand::Rng::with_seed(9);
    for len in 0..400usize {
        let mut text: Vec<u8> = (0..len).map(|_| rng.u8(0x20..)).collect();
        assert!(!has_control_bytes(&text), "{len}");
        assert!(!has_control_bytes_portable(&text));
        let back = |k: usize| len.saturating_sub(k);
        for at in [
            0,
            len / 2,
            back(1),
            back(33),
            back(40),
            back(100),
            back(130),
        ] {
            if at < len {
                let keep = text[at];
                text[at] = rng.u8(..0x20);
                assert!(has_control_bytes(&text), "{len} at {at}");
                assert!(has_control_bytes_portable(&text), "{len} at {at}");
                text[at] = keep;
            }
        }
    }
}

#[test]
fn strings_give_their_body_and_whether_it_has_escapes() {
    let long = format!("\"{}\\n{}\"", "a".repeat(40), "é".repeat(20));
    for (json, body, escaped) in [
        (r#""""#, "", false),
        (r#""plain é 😀""#, "plain é 😀", false),
        (
            r#""a\"b\\c\/d\b\f\n\r\t\u00e9""#,
            r#"a\"b\\c\/d\b\f\n\r\t\u00e9"#,
            true,
        ),
        (&long[..], &long[1..long.len() - 1], true),
    ] {
        let mut lx = Lexer::strict(json);
        assert_eq!(lx.string(), Some((body, escaped)), "{json}");
        assert!(lx.at_end());
    }
}

#[test]
fn strings_reject_bad_escapes_controls_and_open_ends() {
    for json in [
        r#""\x""#,
        r#""\u12""#,
        r#""\u12g4""#,
        r#""open"#,
        r#""ends in a backslash\"#,
        "\"a\tb\"",
        "\"a\u{1}b\"",
    ] {
        assert_eq!(strict(json), None, "{json}");
    }
}

#[test]
fn surrogate_escapes_are_left_to_serde_in_strict_mode_only() {
    for json in [r#""\ud83d\ude00""#, r#""\ud800""#, r#""\uDFFF""#] {
        assert_eq!(strict(json), None, "{json}");
        assert_eq!(trusted(json), Some(json), "{json}");
    }
    assert_eq!(strict(r#""\ud7ff\ue000""#), Some(r#""\ud7ff\ue000""#));
}

#[test]
fn keys_with_escapes_or_controls_are_not_read() {
    let mut lx = Lexer::strict(r#""a\u0062""#);
    assert_eq!(lx.key(), None);
    let mut lx = Lexer::strict("\"a\u{1}\"");
    assert_eq!(lx.key(), None);
    let mut lx = Lexer::strict(r#""fullOutputPath":1"#);
    assert_eq!(lx.key(), Some("fullOutputPath"));
    assert_eq!(lx.pos(), 16);
}

#[test]
fn keys_end_where_the_byte_wise_reading_ends() {
    let mut rng = fastrand::Rng::with_seed(17);
    let alphabet: &[u8] = b"abcXYZ_09 \"\\\x01\x1f\x7f";
    for _ in 0..20_000 {
        let len = rng.usize(0..40);
        let mut text = vec![b'"'];
        text.extend((0..len).map(|_| match rng.u8(..8) {
            0 => alphabet[rng.usize(..alphabet.len())],
            1 => 0xC3,
            _ => b'a' + rng.u8(..26),
        }));
        text.push(b'"');
        let Ok(text) = std::str::from_utf8(&text) else {
            continue;
        };
        let b = text.as_bytes();
        let mut end = 1;
        while !matches!(b[end], b'"' | b'\\' | ..0x20) {
            end += 1;
        }
        let expected = (b[end] == b'"').then(|| &text[1..end]);
        let mut lx = Lexer::strict(text);
        assert_eq!(lx.key(), expected, "{text:?}");
        if expected.is_some() {
            assert_eq!(lx.pos(), end + 1);
        }
    }
}

#[test]
fn objects_and_arrays_are_walked_and_checked() {
    let json = r#" { "a" : [ 1 , true , false , null , { } , [ ] ] , "b" : "x" } "#;
    assert_eq!(strict(json), Some(json.trim()));
    let mut keys = Vec::new();
    let mut lx = Lexer::strict(json);
    lx.ws();
    lx.object(|lx, k| {
        keys.push(k);
        lx.skip_value()
    })
    .unwrap();
    assert_eq!(keys, ["a", "b"]);
    for bad in [
        r#"{"x":1,}"#,
        r#"[1,]"#,
        r#"{"x" 1}"#,
        r#"{1:2}"#,
        r#"[1 2]"#,
        r#"{"x":tru}"#,
        r#"{"x":nul}"#,
        r#"{"x":1"#,
        r#"[1"#,
        "",
        "x",
    ] {
        assert_eq!(strict(bad), None, "{bad}");
    }
    assert_eq!(strict(r#"{"x":1} x"#), None);
}

#[test]
fn nesting_is_limited_in_strict_mode_only() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let at_limit = nested(STRICT_MAX_DEPTH as usize);
    assert!(strict(&at_limit).is_some());
    let deeper = nested(STRICT_MAX_DEPTH as usize + 1);
    assert!(strict(&deeper).is_none());
    assert!(trusted(&deeper).is_some());
}

/// Lines of the conformance corpus, mutated at random: whatever the strict lexer
/// takes, serde_json takes too, as the same single value.
#[test]
fn mutated_corpus_lines_agree_with_serde() {
    let mut rng = fastrand::Rng::with_seed(11);
    let (mut accepted, mut total) = (0, 0);
    for line in &crate::json::mutations::corpus_lines() {
        for k in 0..9 {
            let edits = if k == 0 { 0 } else { rng.usize(1..4) };
            let Some(m) = crate::json::mutations::mutate(line, edits, &mut rng) else {
                continue;
            };
            total += 1;
            let Some(text) = strict(&m) else { continue };
            accepted += 1;
            let serde: &serde_json::value::RawValue = serde_json::from_str(&m)
                .unwrap_or_else(|e| panic!("the lexer took what serde rejects ({e}): {m}"));
            assert_eq!(serde.get(), text, "{m}");
            assert_eq!(trusted(&m), Some(text), "{m}");
        }
    }
    assert!(accepted > total / 20, "{accepted} of {total}");
}
