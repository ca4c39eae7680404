use serde_json::{json, Value};

use crate::helpers::{cli_json, entries_of, fixture, small_session, spawn_app};

#[tokio::test]
async fn prepare_a_real_session_from_jsonl() {
    let app = spawn_app().await;
    let res = app
        .post_jsonl(
            "/v1/prepare?keepRecentTokens=20000",
            fixture("before-compaction.jsonl"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["compactable"], true);
    // Values the reference computes for this file (see tests/conformance/goldens).
    assert_eq!(body["firstKeptEntryId"], "da33d933");
    assert_eq!(body["firstKeptEntryIndex"], 946);
    assert_eq!(body["firstKeptEntryInputIndex"], 947);
    assert_eq!(body["isSplitTurn"], true);
    assert_eq!(body["turnStartIndex"], 939);
    assert_eq!(body["tokensBefore"], 180820);
    assert!(body["previousSummary"]
        .as_str()
        .unwrap()
        .starts_with("# Context Checkpoint"));
    assert!(
        body.get("shouldCompact").is_none(),
        "no contextWindow given"
    );
    let requests = body["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2, "split turn: history and prefix");
    assert_eq!(requests[0]["kind"], "history");
    assert_eq!(requests[0]["maxTokens"], 13107);
    assert_eq!(requests[1]["kind"], "turnPrefix");
    assert_eq!(requests[1]["maxTokens"], 8192);
    let history = body["conversation"]["history"].as_str().unwrap();
    assert!(requests[0]["prompt"]
        .as_str()
        .unwrap()
        .starts_with(&format!(
            "<conversation>\n{history}\n</conversation>\n\n<previous-summary>\n"
        )));
    let summarized = body["summarizedEntryIds"].as_array().unwrap().len();
    assert_eq!(
        summarized,
        946 - 550,
        "from the previous compaction's kept entry to the cut"
    );
    let to_summarize = body["messagesToSummarize"].as_array().unwrap();
    assert!(!to_summarize.is_empty());
    assert!(to_summarize.iter().all(|m| m["role"].is_string()));
    assert!(body["turnPrefixMessages"].as_array().unwrap()[0]["role"] == "user");
}

#[tokio::test]
async fn json_and_jsonl_bodies_give_the_same_answer() {
    let app = spawn_app().await;
    let jsonl = fixture("large-session.jsonl");
    let a: Value = app
        .post_jsonl(
            "/v1/prepare?keepRecentTokens=5000&messages=false",
            jsonl.clone(),
        )
        .await
        .json()
        .await
        .unwrap();
    let b: Value = app
        .post_json(
            "/v1/prepare",
            &json!({"entries": entries_of(&jsonl), "settings": {"keepRecentTokens": 5000}, "includeMessages": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(a, b);
    assert!(a.get("messagesToSummarize").is_none());
    assert_eq!(a["settings"]["keepRecentTokens"], 5000);
}

#[tokio::test]
async fn leaf_choice_and_should_compact() {
    let app = spawn_app().await;
    let body: Value = app
        .post_jsonl(
            "/v1/prepare?keepRecentTokens=100&leafId=e010&contextWindow=200&reserveTokens=100",
            small_session(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["compactable"], true);
    // The path ends at e010: the second turn's last tool result.
    let ids = body["summarizedEntryIds"].as_array().unwrap();
    assert!(ids.iter().all(|id| id.as_str().unwrap() <= "e010"));
    assert_eq!(body["shouldCompact"], true);
    assert_eq!(body["details"]["modifiedFiles"], json!(["src/lib0.rs"]));
    // lib1.rs was read in the split turn's prefix; lib0.rs was read and then edited.
    assert_eq!(body["details"]["readFiles"], json!(["src/lib1.rs"]));
}

#[tokio::test]
async fn nothing_to_compact_is_a_200_with_a_reason() {
    let app = spawn_app().await;
    let body: Value = app
        .post_jsonl("/v1/prepare", small_session())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["compactable"], false);
    assert_eq!(body["reasonCode"], "nothing-to-summarize");
    assert!(body["tokensBefore"].as_u64().unwrap() > 0);

    let empty: Value = app
        .post_json("/v1/prepare", &json!({"entries": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(empty["reasonCode"], "empty");
}

#[tokio::test]
async fn headerless_json_entries_keep_their_ids() {
    let app = spawn_app().await;
    let mut entries = entries_of(&small_session());
    entries.remove(0);
    let body: Value = app
        .post_json(
            "/v1/prepare",
            &json!({"entries": entries, "settings": {"keepRecentTokens": 100}}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(
        body["firstKeptEntryId"].as_str().unwrap().starts_with('e'),
        "{body}"
    );
}

#[test]
fn cli_prepare_prints_the_same_json_as_the_server() {
    let file = crate::fixtures::path(crate::fixtures::LARGE_SESSION);
    let cli = cli_json(&[
        "prepare",
        file.to_str().unwrap(),
        "--keep-recent-tokens",
        "5000",
        "--no-messages",
    ]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server: Value = rt.block_on(async {
        let app = spawn_app().await;
        app.post_jsonl(
            "/v1/prepare?keepRecentTokens=5000&messages=false",
            fixture("large-session.jsonl"),
        )
        .await
        .json()
        .await
        .unwrap()
    });
    assert_eq!(cli, server);
}

#[tokio::test]
async fn include_selects_the_parts_of_the_answer() {
    let app = spawn_app().await;
    let jsonl = fixture("before-compaction.jsonl");
    let url = |q: &str| format!("/v1/prepare?keepRecentTokens=20000{q}");
    let all = app.post_jsonl(&url(""), jsonl.clone()).await;
    let all: Value = all.json().await.unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };

    let res = app.post_jsonl(&url("&include=cut"), jsonl.clone()).await;
    assert_eq!(res.status().as_u16(), 200);
    let bytes = res.bytes().await.unwrap();
    assert!(
        bytes.len() < 400,
        "a cut-only answer is small: {} bytes",
        bytes.len()
    );
    let cut: Value = serde_json::from_slice(&bytes).unwrap();
    let expected = [
        "compactable",
        "firstKeptEntryId",
        "firstKeptEntryIndex",
        "firstKeptEntryInputIndex",
        "isSplitTurn",
        "turnStartEntryId",
        "turnStartIndex",
        "tokensBefore",
        "settings",
    ];
    assert_eq!(keys(&cut), expected);
    for k in expected {
        assert_eq!(cut[k], all[k], "{k}");
    }

    let work: Value = app
        .post_jsonl(&url("&include=cut,files,conversation"), jsonl.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(work["conversation"], all["conversation"]);
    assert_eq!(work["details"], all["details"]);
    assert_eq!(work["previousSummary"], all["previousSummary"]);
    for k in ["requests", "messagesToSummarize", "summarizedEntryIds"] {
        assert!(work.get(k).is_none(), "{k} not asked for");
    }

    // A JSON body names the parts in an array; `requests` alone still has its prompts.
    let json: Value = app
        .post_json(
            "/v1/prepare",
            &json!({"entries": entries_of(&jsonl), "include": ["requests", "messages"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(json["requests"], all["requests"]);
    assert_eq!(json["messagesToSummarize"], all["messagesToSummarize"]);
    assert_eq!(json["summarizedEntryIds"], all["summarizedEntryIds"]);
    assert!(json.get("conversation").is_none() && json.get("details").is_none());

    // Every part named is the default answer.
    let every: Value = app
        .post_jsonl(
            &url("&include=cut,messages,conversation,requests,files"),
            jsonl,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(every, all);
}

#[tokio::test]
async fn unknown_include_parts_are_refused() {
    let app = spawn_app().await;
    let p = crate::helpers::problem(
        app.post_jsonl("/v1/prepare?include=cut,history", small_session())
            .await,
        400,
        "invalid-parameter",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("unknown variant `history`"),
        "{p}"
    );
    assert_eq!(p["errors"][0]["pointer"], "include", "{p}");
    let p = crate::helpers::problem(
        app.post_json(
            "/v1/prepare",
            &json!({"entries": entries_of(&small_session()), "include": ["cut", "history"]}),
        )
        .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/include/1", "{p}");
}

/// Sends a JSONL body to `target` over a raw connection, `parts` written one by one
/// (each flushed, so the server sees them arrive apart), and returns the answer's status
/// line and body.
async fn post_in_parts(address: &str, target: &str, parts: &[&[u8]]) -> (String, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = address.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(host).await.unwrap();
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let head = format!(
        "POST {target} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/x-ndjson\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    for p in parts {
        tcp.write_all(p).await.unwrap();
        tcp.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_string();
    (status, serde_json::from_str(body).unwrap())
}

/// `body` cut inside lines, near multi-byte characters and at line ends: at 0, 1, 100,
/// the `extra` offsets, a third, just past half, and one byte before the end.
fn cut_in_parts<'a>(body: &'a [u8], extra: &[usize]) -> Vec<&'a [u8]> {
    let n = body.len();
    let mut cuts = vec![0, 1, 100];
    cuts.extend_from_slice(extra);
    cuts.extend([n / 3, n / 2 + 1, n - 1, n]);
    cuts.windows(2).map(|w| &body[w[0]..w[1]]).collect()
}

#[tokio::test]
async fn a_jsonl_body_arriving_in_pieces_cut_mid_line_parses_as_a_whole() {
    let app = spawn_app().await;
    let body = fixture("before-compaction.jsonl");
    let whole: Value = app
        .post_jsonl("/v1/prepare?include=cut", body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(whole["compactable"], true);
    let parts = cut_in_parts(body.as_bytes(), &[4097]);
    let (status, answer) = post_in_parts(&app.address, "/v1/prepare?include=cut", &parts).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(answer, whole);

    // An error in a later line: the same problem as for the body sent at once.
    let bad = format!("{}\n{{\"type\": \"message\", oops}}\n", small_session());
    let at_once: Value = app
        .post_jsonl("/v1/prepare?include=cut", bad.clone())
        .await
        .json()
        .await
        .unwrap();
    let (mid, end) = (bad.len() / 2, bad.len() - 10);
    let b = bad.as_bytes();
    let (status, answer) = post_in_parts(
        &app.address,
        "/v1/prepare?include=cut",
        &[&b[..mid], &b[mid..end], &b[end..]],
    )
    .await;
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert_eq!(answer["line"], at_once["line"]);
    assert_eq!(answer["column"], at_once["column"]);
    assert_eq!(answer["detail"], at_once["detail"]);
}

/// `value` with every `prunedAt` (the time of the run) set to 0.
fn without_pruned_at(mut value: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "prunedAt" {
                        *v = json!(0);
                    } else {
                        walk(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

#[tokio::test]
async fn the_other_session_endpoints_parse_a_body_arriving_in_pieces_alike() {
    let app = spawn_app().await;
    let results: Vec<_> = (0..6).map(|_| crate::prune::r("bash", 8_000)).collect();
    let pruned = crate::prune::session(&results, None);
    let tree = crate::branch::tree();
    let real = fixture("large-session.jsonl");
    let cases = [
        (
            "/v1/prune?protectTokens=1&minimumSavings=0",
            pruned.as_str(),
        ),
        ("/v1/prune", real.as_str()),
        (
            "/v1/compact?dryRun=true&keepRecentTokens=2000",
            real.as_str(),
        ),
        (
            "/v1/branch-summary?dryRun=true&oldLeafId=d&targetId=e",
            tree.as_str(),
        ),
    ];
    for (target, body) in cases {
        let res = app.post_jsonl(target, body.to_string()).await;
        assert_eq!(res.status().as_u16(), 200, "{target}");
        let whole = without_pruned_at(res.json().await.unwrap());
        let parts = cut_in_parts(body.as_bytes(), &[]);
        let (status, answer) = post_in_parts(&app.address, target, &parts).await;
        assert_eq!(status, "HTTP/1.1 200 OK", "{target}");
        assert_eq!(without_pruned_at(answer), whole, "{target}");

        // An error in a later line: the same problem as for the body sent at once.
        let bad = format!("{body}{{\"type\": \"message\", oops}}\n");
        let at_once: Value = app
            .post_jsonl(target, bad.clone())
            .await
            .json()
            .await
            .unwrap();
        let (mid, end) = (bad.len() / 2, bad.len() - 10);
        let b = bad.as_bytes();
        let (status, answer) =
            post_in_parts(&app.address, target, &[&b[..mid], &b[mid..end], &b[end..]]).await;
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{target}");
        assert_eq!(answer, at_once, "{target}");
    }
}

#[tokio::test]
async fn a_body_cut_off_midway_leaves_the_server_serving() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app().await;
    let body = fixture("large-session.jsonl");
    let host = app.address.trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "POST /v1/prepare HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    drop(tcp);
    // The parser of the cut-off body stops; the next requests are answered.
    for _ in 0..3 {
        let res = app
            .post_jsonl("/v1/prepare?include=cut", body.clone())
            .await;
        assert_eq!(res.status().as_u16(), 200);
    }
}
