//! The inspector in a real browser: the page served on `GET /` against a running
//! compactd, and the self-contained report `compactd inspect` writes. Screenshots are
//! left under target/tmp/inspector/.

mod browser;
#[path = "../../benches/support/generate/mod.rs"]
mod generate;
mod providers;

use std::path::PathBuf;

use compactd::config::{ClientKeys, Config};
use compactd::startup::Application;
use fantoccini::actions::{InputSource, MouseActions, PointerAction};
use fantoccini::Locator;
use serde_json::{json, Value};

use browser::{artefacts, available, Browser};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-sessions/before-compaction.jsonl")
}

/// compactd on a random port (extractive summarizer), served until the test ends.
async fn spawn(configure: impl FnOnce(&mut Config)) -> String {
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Config::default()
    };
    configure(&mut config);
    let app = Application::build(config).await.expect("compactd starts");
    let address = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());
    address
}

/// What the API itself answers, to compare the page with.
async fn api(address: &str, path: &str, key: Option<&str>) -> Value {
    let mut req = reqwest::Client::new()
        .post(format!("{address}{path}"))
        .header("content-type", "application/x-ndjson")
        .body(std::fs::read(fixture()).unwrap());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.unwrap()
}

/// Moves the real pointer `dx` CSS pixels right of the canvas's left edge.
async fn hover_timeline(b: &Browser, dx: f64) {
    let canvas = b.client.find(Locator::Id("timeline")).await.unwrap();
    let width = b
        .js(
            "return document.getElementById('timeline').clientWidth",
            vec![],
        )
        .await
        .as_f64()
        .unwrap();
    let mouse = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: canvas,
        duration: None,
        x: (dx - width / 2.0).round(),
        y: 0.0,
    });
    b.client.perform_actions(mouse).await.unwrap();
}

async fn hovered_id(b: &Browser) -> String {
    b.js("return document.getElementById('entry').dataset.id", vec![])
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn cut_x(b: &Browser) -> f64 {
    let x = b
        .until(
            "the cut on screen",
            "return document.getElementById('timeline').dataset.cutX",
        )
        .await;
    x.as_str().unwrap().parse().unwrap()
}

/// The page of the compactd at `address`, loaded and waiting for a session.
async fn open_page(b: &Browser, address: &str) {
    b.client.goto(&format!("{address}/")).await.unwrap();
    b.until("the page", "return document.body.dataset.ready === '0'")
        .await;
}

/// Chooses the real pi session in the page and waits until it is drawn.
async fn upload(b: &Browser) {
    upload_file(b, &fixture()).await;
}

/// Chooses `file` in the page and waits until it is drawn.
async fn upload_file(b: &Browser, file: &std::path::Path) {
    b.type_into("file", file.to_str().unwrap()).await;
    b.until(
        "the session drawn",
        "return document.body.dataset.ready >= '1'",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_draws_the_cut_follows_the_settings_and_compacts() {
    if !available() {
        return;
    }
    let address = spawn(|_| {}).await;
    let expected = api(&address, "/v1/prepare?messages=false", None).await;
    let outline = api(&address, "/v1/inspect/outline", None).await;
    let b = Browser::start().await;
    open_page(&b, &address).await;
    upload(&b).await;

    // The cut, in words and on the timeline, is the entry /v1/prepare names.
    let id = expected["firstKeptEntryId"].as_str().unwrap();
    let index = expected["firstKeptEntryIndex"].as_u64().unwrap() as usize;
    let line = b.text("#cut-line").await;
    assert!(
        line.contains(&format!("Cut before entry {id} (path index {index}")),
        "{line}"
    );
    assert!(line.contains("tokensBefore 180,820"), "{line}");
    assert!(
        line.contains(&format!(
            "split turn, starting at {}",
            expected["turnStartEntryId"].as_str().unwrap()
        )),
        "{line}"
    );
    // Keyboard: C jumps to the cut and announces it.
    b.type_into("timeline", "c").await;
    let announced = b
        .until(
            "the announcement",
            "return document.getElementById('announce').textContent",
        )
        .await;
    assert!(
        announced.as_str().unwrap().contains(&format!("id {id}")),
        "{announced}"
    );
    assert!(
        announced
            .as_str()
            .unwrap()
            .contains("first kept entry (cut)"),
        "{announced}"
    );
    // The pointer just right of the cut marker is on that entry, just left of it on the
    // entry before it.
    let x = cut_x(&b).await;
    hover_timeline(&b, x + 2.0).await;
    assert_eq!(hovered_id(&b).await, id);
    let path = outline["path"].as_array().unwrap();
    let before = &outline["ids"][path[index - 1].as_u64().unwrap() as usize];
    hover_timeline(&b, x - 2.0).await;
    assert_eq!(hovered_id(&b).await, before.as_str().unwrap());
    let shown = b.text("#entry").await;
    assert!(shown.contains("tokens"), "{shown}");
    // Arrow keys move the focus one entry.
    b.type_into("timeline", "\u{E014}").await; // ArrowRight
    let focus = b
        .js(
            "return document.getElementById('timeline').dataset.focus",
            vec![],
        )
        .await;
    assert_eq!(focus, json!((index + 1).to_string()));
    b.screenshot("page-cut").await;

    // A larger keepRecentTokens moves the cut to where /v1/prepare puts it.
    let moved = api(
        &address,
        "/v1/prepare?messages=false&keepRecentTokens=40000",
        None,
    )
    .await;
    let new_index = moved["firstKeptEntryIndex"].as_u64().unwrap();
    assert_ne!(new_index as usize, index);
    let field = b
        .client
        .find(Locator::Id("keepRecentTokens"))
        .await
        .unwrap();
    field.clear().await.unwrap();
    field.send_keys("40000").await.unwrap();
    b.until(
        "the cut to move",
        &format!("return document.getElementById('timeline').dataset.cutIndex === '{new_index}'"),
    )
    .await;
    let line = b.text("#cut-line").await;
    let new_id = moved["firstKeptEntryId"].as_str().unwrap();
    assert!(
        line.contains(&format!("Cut before entry {new_id}")),
        "{line}"
    );
    // The marker moved too: C jumps to it and the pointer finds the new entry there.
    b.type_into("timeline", "c").await;
    hover_timeline(&b, cut_x(&b).await + 2.0).await;
    assert_eq!(hovered_id(&b).await, new_id);

    // Compact, with the first user message pinned: the summary, tokensAfter and
    // madeProgress appear, and the summary carries the pinned text.
    let user = outline["kindNames"]
        .as_array()
        .unwrap()
        .iter()
        .position(|k| k == "user")
        .unwrap();
    let first_user = outline["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as usize)
        .find(|&p| outline["kinds"][p] == user)
        .unwrap();
    let pinned_id = outline["ids"][first_user].as_str().unwrap();
    b.type_into("pin-entries", pinned_id).await;
    b.click("#compact").await;
    let summary = b
        .until(
            "the summary",
            "return document.getElementById('summary')?.textContent",
        )
        .await;
    assert!(
        summary.as_str().unwrap().starts_with("## Goal"),
        "{summary}"
    );
    assert!(
        summary.as_str().unwrap().contains("### Pinned entries"),
        "{summary}"
    );
    let result = b.text("#result").await;
    assert!(result.contains("madeProgress true"), "{result}");
    assert!(result.contains("tokensAfter"), "{result}");
    // The pinned items the closing section re-inserted are marked, as many as the answer
    // counts.
    let marked = b
        .js(
            "return document.querySelectorAll('#pinned li.reinserted').length",
            vec![],
        )
        .await;
    let retention = b.text("#result").await;
    assert!(marked.as_u64().unwrap() > 0, "{retention}");
    assert!(
        retention.contains(&format!("{} re-inserted", marked.as_u64().unwrap())),
        "{retention}"
    );
    b.screenshot("page-compacted").await;

    // Recall: what /v1/recall finds in the compacted part, and a match moves the timeline
    // to its entry.
    let expected = api(&address, "/v1/recall?q=AgentSession", None).await;
    let first = expected["matches"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_string();
    b.type_into("recall-q", "AgentSession").await;
    b.click("#recall-form button").await;
    let listed = b
        .until(
            "the recall matches",
            "return document.querySelector('#recall-result .recall-jump')?.dataset.entry",
        )
        .await;
    assert_eq!(listed, first.as_str());
    let shown = b
        .js(
            "return document.querySelectorAll('#recall-result li').length",
            vec![],
        )
        .await;
    assert_eq!(
        shown.as_u64().unwrap() as usize,
        expected["matches"].as_array().unwrap().len()
    );
    b.click("#recall-result .recall-jump").await;
    let focused = b
        .js(
            "const s = window.compactdInspector.state; \
             return s.model.id(Number(document.getElementById('timeline').dataset.focus))",
            vec![],
        )
        .await;
    assert_eq!(focused, first.as_str());

    // The branch-summary preview from the leaf back to an earlier entry.
    let target = outline["ids"][path[900].as_u64().unwrap() as usize]
        .as_str()
        .unwrap();
    b.type_into("branch-to", target).await;
    b.click("#branch-form button").await;
    let preview = b
        .until(
            "the branch preview",
            "return document.querySelector('#branch-result pre')?.textContent",
        )
        .await;
    assert!(
        preview
            .as_str()
            .unwrap()
            .contains(&format!("\"commonAncestorId\": \"{target}\"")),
        "{preview}"
    );
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_key_once_and_sends_it() {
    if !available() {
        return;
    }
    let address = spawn(|c| c.api_keys = ClientKeys::new(["inspector-key"])).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{address}/")).await.unwrap();
    let asked = b
        .until(
            "the key to be asked for",
            "return document.getElementById('key-box').open",
        )
        .await;
    assert_eq!(asked, json!(true));
    b.type_into("api-key", "inspector-key").await;
    b.click("#key-form button").await;
    upload(&b).await;
    let kept = b
        .js("return sessionStorage.getItem('compactd.apiKey')", vec![])
        .await;
    assert_eq!(kept, json!("inspector-key"));
    let expected = api(
        &address,
        "/v1/prepare?messages=false",
        Some("inspector-key"),
    )
    .await;
    let line = b.text("#cut-line").await;
    assert!(
        line.contains(expected["firstKeptEntryId"].as_str().unwrap()),
        "{line}"
    );
    // A reload keeps the key for the tab: no question this time.
    b.client.refresh().await.unwrap();
    b.until("the page", "return document.body.dataset.ready === '0'")
        .await;
    let asked = b
        .js("return document.getElementById('key-box').open", vec![])
        .await;
    assert_eq!(asked, json!(false));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_file_shows_the_same_view_offline() {
    if !available() {
        return;
    }
    let report = artefacts().join("report.html");
    let exe = env!("CARGO_BIN_EXE_compactd");
    let status = std::process::Command::new(exe)
        .args([
            "inspect",
            fixture().to_str().unwrap(),
            "-o",
            report.to_str().unwrap(),
        ])
        .env_remove("COMPACTD_CONFIG")
        .status()
        .unwrap();
    assert!(status.success());
    let prepared = std::process::Command::new(exe)
        .args(["prepare", "--no-messages", fixture().to_str().unwrap()])
        .output()
        .unwrap();
    let expected: Value = serde_json::from_slice(&prepared.stdout).unwrap();
    let b = Browser::start().await;
    b.client
        .goto(&format!("file://{}", report.display()))
        .await
        .unwrap();
    // The inline script ran (its hash is in the meta CSP) and drew the session.
    b.until(
        "the report drawn",
        "return document.body.dataset.ready >= '1'",
    )
    .await;
    let line = b.text("#cut-line").await;
    let id = expected["firstKeptEntryId"].as_str().unwrap();
    assert!(line.contains(&format!("Cut before entry {id}")), "{line}");
    let painted = b
        .js(
            "const c = document.getElementById('timeline');
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;",
            vec![],
        )
        .await;
    assert!(
        painted.as_u64().unwrap() > 1000,
        "the timeline is drawn: {painted}"
    );
    // Hovering shows an entry's text from the embedded previews.
    let x = cut_x(&b).await;
    b.type_into("timeline", "c").await;
    hover_timeline(&b, cut_x(&b).await + 2.0).await;
    assert_eq!(hovered_id(&b).await, id);
    assert!(x > 0.0);
    let summary = b.text("#summary").await;
    assert!(summary.starts_with("## Goal"), "{summary}");
    // No live controls in a report.
    let hidden = b
        .js(
            "return getComputedStyle(document.getElementById('compact')).display",
            vec![],
        )
        .await;
    assert_eq!(hidden, json!("none"));
    b.screenshot("report").await;
    b.close().await;
}

/// 100,000 short turns (about 20 MB), one a line.
fn many_entries(path: &std::path::Path) -> PathBuf {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, r#"{{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}}"#).unwrap();
    let mut parent = "null".to_string();
    for i in 0..100_000u32 {
        let (role, extra) = if i % 2 == 0 {
            ("user", "")
        } else {
            ("assistant", r#","stopReason":"stop""#)
        };
        let text = format!(
            "message {i}: {}",
            "lorem ipsum ".repeat(1 + (i % 5) as usize)
        );
        writeln!(out, r#"{{"type":"message","id":"m{i:06}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}]{extra},"timestamp":1}}}}"#).unwrap();
        parent = format!("\"m{i:06}\"");
    }
    out.flush().unwrap();
    path.to_path_buf()
}

/// The generated 20 MB session of the benchmarks (about 7,000 large entries) and
/// 100,000 short entries (about 20 MB): the page draws them, the cut is where
/// /v1/prepare puts it, and the keyboard and pointer still work. The time each step
/// took is printed (recorded, never asserted: this machine's speed is not the page's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_mb_session_stays_usable() {
    if !available() {
        return;
    }
    let generated = generate::ensure(
        &generate::data_dir().join("generated-20mb.jsonl"),
        generate::SEED,
        20_000_000,
    )
    .expect("the generated session");
    let many = many_entries(&artefacts().join("many-entries.jsonl"));
    for file in [generated, many] {
        measure(&file).await;
    }
}

async fn measure(file: &std::path::Path) {
    let bytes = std::fs::read(file).unwrap();
    let address = spawn(|_| {}).await;
    let res = reqwest::Client::new()
        .post(format!("{address}/v1/prepare?messages=false"))
        .header("content-type", "application/x-ndjson")
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    let expected: Value = res.json().await.unwrap();
    let b = Browser::start().await;
    open_page(&b, &address).await;
    upload_file(&b, file).await;
    let line = b.text("#cut-line").await;
    let id = expected["firstKeptEntryId"].as_str().unwrap();
    assert!(line.contains(&format!("Cut before entry {id}")), "{line}");
    let m = b
        .js(
            "const { state, timeline } = window.compactdInspector;
             const t0 = performance.now();
             for (let k = 0; k < 20; k++) timeline.draw();
             const draw = (performance.now() - t0) / 20;
             const canvas = document.getElementById('timeline');
             canvas.focus();
             canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'Home', bubbles: true }));
             const t1 = performance.now();
             for (let k = 0; k < 200; k++) {
               canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
             }
             const key = (performance.now() - t1) / 200;
             const t2 = performance.now();
             for (let k = 0; k < 200; k++) {
               canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: 20 + k * 5, clientY: 60, bubbles: true }));
             }
             const hover = (performance.now() - t2) / 200;
             return { entries: state.outline.count, path: state.model.n, focus: timeline.focus,
                      requestsMs: state.timings.requestsMs, renderMs: state.timings.renderMs,
                      drawMs: draw, keyMs: key, hoverMs: hover,
                      heapMb: performance.memory ? performance.memory.usedJSHeapSize / 1e6 : null };",
            vec![],
        )
        .await;
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    eprintln!("{name} ({} bytes) in the page: {m}", bytes.len());
    assert!(m["entries"].as_u64().unwrap() > 5_000, "{m}");
    assert_eq!(
        m["focus"].as_u64(),
        Some(200),
        "Home, then 200 arrow presses: {m}"
    );
    b.screenshot(&format!("page-{name}")).await;
    b.close().await;
}

/// A session with branches: the tree lists its leaves, and picking another leaf shows
/// that leaf's path (the preparation re-run with `leafId`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picking_a_leaf_in_the_tree_shows_its_path() {
    if !available() {
        return;
    }
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/corpus/gen-017.jsonl");
    let address = spawn(|_| {}).await;
    let b = Browser::start().await;
    open_page(&b, &address).await;
    upload_file(&b, &file).await;
    b.until(
        "the first path only",
        "return document.body.dataset.ready === '1'",
    )
    .await;
    let leaves = b
        .js(
            "return [...document.querySelectorAll('#tree button')].map(b => b.textContent)",
            vec![],
        )
        .await;
    let leaves = leaves.as_array().unwrap();
    assert_eq!(leaves.len(), 4, "{leaves:?}");
    assert_eq!(
        leaves
            .iter()
            .filter(|l| l.as_str().unwrap().ends_with("shown)"))
            .count(),
        1
    );
    let other = b
        .js(
            "const b = [...document.querySelectorAll('#tree button')].find(b => !b.textContent.endsWith('shown)'));
             b.click(); return b.textContent;",
            vec![],
        )
        .await;
    b.until(
        "the other path",
        "return document.body.dataset.ready === '2'",
    )
    .await;
    let leaf = b
        .js("return document.getElementById('leaf').value", vec![])
        .await;
    // The button names the leaf last: "first … leaf: n entries (leaf)".
    let label = other.as_str().unwrap();
    let leaf_id = leaf.as_str().unwrap();
    assert!(
        !leaf_id.is_empty() && label.contains(&format!("… {leaf_id}:")),
        "{label} / {leaf_id}"
    );
    let shown = b
        .js(
            "return document.querySelector('#tree button[aria-current]').textContent",
            vec![],
        )
        .await;
    assert!(
        shown.as_str().unwrap().contains(&format!("… {leaf_id}:")),
        "{shown}"
    );
    b.close().await;
}
