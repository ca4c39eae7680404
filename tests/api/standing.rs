//! The model path: a model is shown the user's standing statements in force, numbered,
//! told they stand verbatim beside its summary, and may name in a `Replaced:` trailer the
//! ones a later message replaced. The fake models here read their prompt as a real one
//! would and behave as real ones do: they drop the statements, copy some in another
//! order, answer the trailer in its plain or decorated form, forget it, or name a number
//! that was never listed.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

use crate::helpers::{spawn_app_with, SessionWriter, TestApp};
use crate::model_servers::OpenAiServer;
use crate::upstreams::{config, openai};

const MAIN: &str = "Never push to main.";
const TUESDAYS: &str = "Always deploy on Tuesdays only.";
const DOCS: &str = "Always document every public function.";
/// Replaces TUESDAYS in words the ledger does not connect to it.
const ANY_DAY: &str = "From now on, ship whenever CI is green, any weekday.";

fn filler(n: usize) -> String {
    format!("Step {n}: reading through the importer module and its helpers. ").repeat(30)
}

fn session() -> SessionWriter {
    let mut s = SessionWriter::new();
    s.user(MAIN);
    s.assistant("Understood.");
    s.user(TUESDAYS);
    s.assistant(&filler(0));
    s.user(DOCS);
    s.assistant(&filler(1));
    s.user(ANY_DAY);
    s.assistant(&filler(2));
    for n in 3..7 {
        s.user(&format!("Continue with part {n} of the importer."));
        s.assistant(&filler(n));
    }
    s
}

/// The statements a prompt lists, as `(number, text)`.
fn listed(prompt: &str) -> Vec<(usize, String)> {
    let Some(start) = prompt.find("<standing-statements>\n") else {
        return Vec::new();
    };
    let block = &prompt[start + "<standing-statements>\n".len()..];
    let block = &block[..block.find("</standing-statements>").unwrap_or(block.len())];
    block
        .lines()
        .filter_map(|l| {
            let (n, text) = l.strip_prefix('S')?.split_once(". ")?;
            Some((n.parse().ok()?, text.to_string()))
        })
        .collect()
}

/// How a fake model writes its summary.
#[derive(Clone, Copy)]
enum Writes {
    /// Leaves the listed statements out, as told, and names the replaced one.
    AsTold,
    /// Leaves them out and never writes the trailer.
    NoTrailer,
    /// Names numbers that were never listed (also where nothing was listed).
    Invents,
    /// Copies every listed statement, newest first, and names the replaced one in a
    /// decorated trailer after a blank line.
    CopiesReordered,
}

/// A model writing as `how`; the prompts it was sent are kept in `seen`.
fn model(how: Writes, seen: Arc<Mutex<Vec<String>>>) -> OpenAiServer {
    OpenAiServer::new(64_000).writing(move |prompt| {
        seen.lock().unwrap().push(prompt.to_string());
        let list = listed(prompt);
        let replaced = list
            .iter()
            .find(|(_, t)| t.contains("Tuesdays"))
            .map(|(n, _)| *n);
        let mut out = String::from(
            "## Goal\nFinish the importer.\n\n## Progress\n### Done\n- [x] Parts 1-6 read.\n",
        );
        match how {
            Writes::AsTold => {
                if let Some(n) = replaced {
                    out.push_str(&format!("Replaced: S{n}"));
                }
            }
            Writes::NoTrailer => {}
            Writes::Invents => out.push_str(&format!("Replaced: S0, S{}", list.len() + 7)),
            Writes::CopiesReordered => {
                out.push_str("\n## Constraints & Preferences\n");
                for (_, text) in list.iter().rev() {
                    out.push_str(&format!("- {text}\n"));
                }
                if let Some(n) = replaced {
                    out.push_str(&format!("\n**Replaced:** [S{n}]\n"));
                }
            }
        }
        out
    })
}

async fn app_with(how: Writes) -> (TestApp, Arc<Mutex<Vec<String>>>, MockServer) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(model(how, seen.clone()))
        .mount(&server)
        .await;
    let llm = config(vec![openai("m", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    (app, seen, server)
}

async fn compact(app: &TestApp, session: &SessionWriter) -> Value {
    let res = app
        .post_jsonl("/v1/compact?keepRecentTokens=600", session.text())
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body:#}");
    body
}

fn item<'v>(body: &'v Value, text: &str) -> &'v Value {
    body["details"]["pinned"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["text"] == text)
        .unwrap_or_else(|| panic!("{text:?} is not in details: {body:#}"))
}

fn occurrences(summary: &str, text: &str) -> usize {
    summary.matches(text).count()
}

#[tokio::test]
async fn the_model_sees_the_numbered_statements_and_what_it_names_leaves_the_summary() {
    let (app, seen, _server) = app_with(Writes::AsTold).await;
    let body = compact(&app, &session()).await;
    let prompt = seen.lock().unwrap()[0].clone();
    let list = listed(&prompt);
    let texts: Vec<&str> = list.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, [MAIN, TUESDAYS, DOCS, ANY_DAY], "{prompt}");
    assert!(prompt.contains("do not copy them"), "{prompt}");
    assert!(prompt
        .trim_end()
        .ends_with("Leave that line out when none was replaced."));

    let summary = body["summary"].as_str().unwrap();
    assert!(!summary.contains("Replaced:"), "{summary}");
    assert!(!summary.contains(TUESDAYS), "{summary}");
    // The rest stand verbatim beside the narrative, once each.
    for text in [MAIN, DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
    assert!(
        summary.starts_with("## Goal\nFinish the importer."),
        "{summary}"
    );
    // Kept in details, with who judged it replaced.
    let gone = item(&body, TUESDAYS);
    assert_eq!(gone["status"], "superseded");
    assert_eq!(
        gone["supersededBy"]["text"],
        "named as replaced by the summarizing model"
    );
    assert_eq!(item(&body, MAIN)["status"], "active");
}

#[tokio::test]
async fn a_model_that_ignores_the_trailer_changes_nothing() {
    let (app, _, _server) = app_with(Writes::NoTrailer).await;
    let body = compact(&app, &session()).await;
    let summary = body["summary"].as_str().unwrap();
    // The ledger alone does not connect the two: every statement stands, verbatim.
    for text in [MAIN, TUESDAYS, DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
    assert_eq!(item(&body, TUESDAYS)["status"], "active");
    assert_eq!(body["retention"]["leftOut"], serde_json::json!([]));
}

#[tokio::test]
async fn numbers_that_were_never_listed_are_ignored() {
    let (app, _, _server) = app_with(Writes::Invents).await;
    let body = compact(&app, &session()).await;
    let summary = body["summary"].as_str().unwrap();
    assert!(!summary.contains("Replaced:"), "{summary}");
    for text in [MAIN, TUESDAYS, DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
    let items = body["details"]["pinned"]["items"].as_array().unwrap();
    assert!(items
        .iter()
        .all(|i| i["supersededBy"]["text"] != "named as replaced by the summarizing model"));
}

#[tokio::test]
async fn a_copied_statement_the_model_names_leaves_its_own_copy_too() {
    let (app, _, _server) = app_with(Writes::CopiesReordered).await;
    let body = compact(&app, &session()).await;
    let summary = body["summary"].as_str().unwrap();
    assert!(!summary.contains("Replaced"), "{summary}");
    assert!(!summary.contains(TUESDAYS), "{summary}");
    // Copied by the model in its own order: present once, nothing restored twice.
    for text in [MAIN, DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
    assert!(summary.find(ANY_DAY) < summary.find(MAIN), "{summary}");
}

#[tokio::test]
async fn what_the_model_named_stays_withdrawn_in_the_next_round() {
    let (app, _, _server) = app_with(Writes::AsTold).await;
    let mut s = session();
    let first = compact(&app, &s).await;
    s.append_entry(&first["entry"]);
    for n in 7..12 {
        s.user(&format!("Continue with part {n} of the importer."));
        s.assistant(&filler(n));
    }
    // The next round's model forgets the trailer: the statement stays withdrawn.
    let (next_app, seen, _next) = app_with(Writes::NoTrailer).await;
    let second = compact(&next_app, &s).await;
    let summary = second["summary"].as_str().unwrap();
    assert!(!summary.contains(TUESDAYS), "{summary}");
    for text in [MAIN, DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
    let prompt = seen.lock().unwrap()[0].clone();
    assert!(
        listed(&prompt).iter().all(|(_, t)| t != TUESDAYS),
        "{prompt}"
    );
    assert_eq!(item(&second, TUESDAYS)["status"], "superseded");
}

#[tokio::test]
async fn a_branch_summary_takes_the_same_path() {
    let (app, seen, _server) = app_with(Writes::AsTold).await;
    let mut s = session();
    let leaf = s.user("Try the streaming parser instead.");
    let root = "m001";
    let res = app
        .post_jsonl(
            &format!("/v1/branch-summary?oldLeafId={leaf}&targetId={root}"),
            s.text(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    let summary = body["summary"].as_str().unwrap();
    assert!(!listed(&seen.lock().unwrap()[0]).is_empty());
    assert!(!summary.contains("Replaced:"), "{summary}");
    assert!(!summary.contains(TUESDAYS), "{summary}");
    for text in [DOCS, ANY_DAY] {
        assert_eq!(occurrences(summary, text), 1, "{text:?} in {summary}");
    }
}
