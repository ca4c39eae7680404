//! `compactd prune FILE [-o OUT]`: the same pruning as `POST /v1/prune`, on files.

use std::process::Command;

use serde_json::Value;

use crate::prune::{keys, r, session};

fn compactd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(args)
        .env_remove("COMPACTD_CONFIG")
        .output()
        .expect("compactd runs")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("prune-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}", std::process::id()))
}

/// Runs `compactd prune FILE -o OUT` and checks the file: same lines, unchanged ones
/// byte-identical, changed ones exactly those the JSON answer names. Returns the
/// output file and the counts printed on stderr.
fn round_trip(input: &std::path::Path, opts: &[&str]) -> (Vec<u8>, Value) {
    let file = input.to_str().unwrap();
    let out_path = tmp(&format!(
        "{}.out.jsonl",
        input.file_name().unwrap().to_str().unwrap()
    ));
    let printed = compactd(&[&["prune", file], opts].concat());
    assert!(printed.status.success(), "{printed:?}");
    let answer: Value = serde_json::from_slice(&printed.stdout).unwrap();

    let written = compactd(&[&["prune", file, "-o", out_path.to_str().unwrap()], opts].concat());
    assert!(written.status.success(), "{written:?}");
    assert!(written.stdout.is_empty());
    let counts: Value = serde_json::from_slice(&written.stderr).unwrap();
    assert_eq!(counts["prunedCount"], answer["prunedCount"]);
    assert_eq!(counts["tokensSaved"], answer["tokensSaved"]);

    let before = std::fs::read(input).unwrap();
    let after = std::fs::read(&out_path).unwrap();
    let split =
        |b: &[u8]| -> Vec<Vec<u8>> { b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect() };
    let (old_lines, new_lines) = (split(&before), split(&after));
    assert_eq!(old_lines.len(), new_lines.len(), "same number of lines");
    // entryIndexes count non-blank lines, header = 0.
    let nonblank: Vec<usize> = old_lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(n, _)| n)
        .collect();
    let changed: Vec<usize> = answer["entryIndexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| nonblank[i.as_u64().unwrap() as usize])
        .collect();
    for (n, (old, new)) in old_lines.iter().zip(&new_lines).enumerate() {
        if !changed.contains(&n) {
            assert_eq!(old, new, "line {} changed", n + 1);
            continue;
        }
        assert_ne!(old, new);
        assert_eq!(old.ends_with(b"\r"), new.ends_with(b"\r"));
        let old_v: Value =
            serde_json::from_slice(old.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(old)).unwrap();
        let new_v: Value =
            serde_json::from_slice(new.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(new)).unwrap();
        // The file keeps its format: no ids added to a v1 line.
        assert_eq!(keys(&old_v), keys(&new_v), "line {}", n + 1);
        let k = changed.iter().position(|&c| c == n).unwrap();
        let mut from_answer = answer["entries"][k].clone();
        if old_v.get("id").is_none() {
            let o = from_answer.as_object_mut().unwrap();
            o.remove("id");
            o.remove("parentId");
        }
        // Two runs, two timestamps.
        let mut new_v = new_v;
        assert!(new_v["message"]["prunedAt"].is_u64());
        new_v["message"]["prunedAt"] = from_answer["message"]["prunedAt"].clone();
        assert_eq!(new_v, from_answer, "line {}", n + 1);
    }
    // The output parses as a session and pruning it again changes nothing.
    let again = compactd(&[&["prune", out_path.to_str().unwrap()], opts].concat());
    assert!(again.status.success(), "{again:?}");
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["prunedCount"], 0);
    (after, counts)
}

#[test]
fn cli_round_trip_on_the_real_sessions() {
    for name in crate::fixtures::ALL {
        let path = crate::fixtures::path(name);
        let (_, counts) = round_trip(
            &path,
            &["--protect-tokens", "1000", "--minimum-savings", "0"],
        );
        assert!(counts["prunedCount"].as_u64().unwrap() > 10, "{name}");
        let (after, counts) = round_trip(&path, &[]);
        assert_eq!(counts["prunedCount"], 0);
        assert_eq!(
            after,
            std::fs::read(&path).unwrap(),
            "nothing pruned: the same bytes"
        );
    }
}

#[test]
fn cli_round_trip_keeps_crlf_blank_lines_and_bom() {
    let text = session(
        &[
            r("read", 8_000),
            r("bash", 8_000),
            r("bash", 8_000),
            r("edit", 8_000),
        ],
        None,
    );
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    for (n, line) in text.lines().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        if n == 2 {
            bytes.extend_from_slice(b"\r\n   \n");
        }
    }
    let path = tmp("crlf.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let (after, counts) = round_trip(
        &path,
        &[
            "--protect-tokens",
            "1",
            "--minimum-savings",
            "0",
            "--protected-tools",
            "edit",
        ],
    );
    assert_eq!(counts["prunedCount"], 3);
    assert!(after.starts_with(b"\xEF\xBB\xBF{\"type\":\"session\""));
    // -o may name the input itself.
    let out = compactd(&[
        "prune",
        path.to_str().unwrap(),
        "--protect-tokens",
        "1",
        "--minimum-savings",
        "0",
        "--protected-tools",
        "edit",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    // The same change (prunedAt has as many digits in both runs).
    assert_eq!(std::fs::read(&path).unwrap().len(), after.len());
}

#[test]
fn cli_reports_an_unknown_leaf_as_a_problem() {
    let path = tmp("leaf.jsonl");
    std::fs::write(&path, session(&[r("bash", 8_000)], None)).unwrap();
    let out = compactd(&["prune", path.to_str().unwrap(), "--leaf-id", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let p: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(p["type"], "urn:compactd:problem:invalid-session");
}
