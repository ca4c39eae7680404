//! `compactd inspect FILE -o report.html`: the inspector's view of a session as one
//! self-contained HTML file, for people without a server.
//!
//! Design decisions:
//! * The same page as `GET /` (`http::inspect`), its modules joined into one inline
//!   script, its stylesheet inlined, and the data embedded in a
//!   `<script type="application/json">` block the page reads instead of calling the API.
//! * A meta Content-Security-Policy allows exactly that script and that stylesheet by
//!   their SHA-256 hashes and nothing else (no network, no other code): the file is as
//!   locked down as the served page.
//! * The embedded JSON has `<`, `>`, `&`, U+2028 and U+2029 escaped as `\uXXXX`, so no
//!   session text can close the data block (`</script`) or open a comment.
//! * The compaction shown is the extractive summarizer's (no model, works offline) unless
//!   `--model-summary` asks for the configured summarizer; `--no-compact` leaves it out.
//!   The settings are the ones given on the command line; the report cannot re-run them.

use std::path::PathBuf;

use base64::Engine as _;
use clap::Args;
use serde_json::{json, Value};
use sha2::Digest;

use crate::config::{Config, SummarizerChoice};
use crate::http::inspect::{bundle, INDEX_HTML, STYLE_CSS};
use crate::pipeline::compact::{plan_compaction, run_compaction};
use crate::pipeline::outline::outline;
use crate::pipeline::{prepare_response, CompactOptions, SessionInput};
use crate::summarize::Prompts;

use super::error::{CliError, RequestError};
use super::input::{block_on, write_output, InputArgs};

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write the HTML report (`-`: standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Leave the compaction out of the report.
    #[arg(long)]
    pub no_compact: bool,
    /// Summarize with the configured summarizer (may call a model) instead of the
    /// extractive one.
    #[arg(long)]
    pub model_summary: bool,
}

pub fn run(args: InspectArgs, config: &Config, prompts: &Prompts) -> Result<(), CliError> {
    let bytes = args.input.read()?;
    let data = report_data(&args, &bytes, config, prompts)?;
    let html = report_html(&data);
    let path = args.output;
    write_output(&path, html.as_bytes()).map_err(|source| CliError::Write { path, source })
}

/// What the report embeds: the outline (with previews), the preparation, the
/// compaction (or why there is none) and the settings.
fn report_data(
    args: &InspectArgs,
    bytes: &[u8],
    config: &Config,
    prompts: &Prompts,
) -> Result<Value, CliError> {
    let mut prepare = args.input.options();
    prepare.include_messages = Some(false);
    let options = CompactOptions {
        prepare,
        ..CompactOptions::default()
    };
    let input =
        SessionInput::parse(bytes, args.input.format(), options).map_err(RequestError::from)?;
    let outline = outline(&input, bytes, true).map_err(RequestError::from)?;
    let answer =
        prepare_response(&input, prompts, config.settings(), None).map_err(RequestError::from)?;
    let prepared = serde_json::to_value(&answer)
        .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))?;
    let settings = input.options.prepare.settings(config.settings());
    let (compaction, note) = if args.no_compact {
        (Value::Null, "Left out (--no-compact).".to_string())
    } else {
        match compaction(&input, config, prompts, args.model_summary)? {
            Ok(result) => (result, String::new()),
            Err(why) => (Value::Null, why),
        }
    };
    let name = args
        .input
        .file
        .file_name()
        .map_or("session".into(), |n| n.to_string_lossy().into_owned());
    Ok(json!({
        "name": name,
        "outline": outline,
        "prepare": prepared,
        "compaction": compaction,
        "compactionNote": note,
        "settings": {
            "keepRecentTokens": settings.keep_recent_tokens,
            "reserveTokens": settings.reserve_tokens,
            "contextWindow": args.input.context_window.unwrap_or(config.context_window),
        },
    }))
}

/// The compaction's answer, or why there is none (nothing to compact).
fn compaction(
    input: &SessionInput<'_, CompactOptions>,
    config: &Config,
    prompts: &Prompts,
    model_summary: bool,
) -> Result<Result<Value, String>, CliError> {
    let mut config = config.clone();
    if !model_summary {
        config.llm.summarizer = SummarizerChoice::Extractive;
    }
    let summarizer = crate::summarize::backend::build(&config)?;
    let plan = match plan_compaction(input, prompts, config.settings(), config.checking()) {
        Ok(plan) => plan,
        Err(crate::pipeline::compact::PlanError::NothingToCompact(n)) => {
            return Ok(Err(format!("Nothing to compact: {}.", n.reason.reason())))
        }
        Err(e) => return Err(RequestError::from(e).into()),
    };
    let result = block_on(run_compaction(
        plan,
        prompts,
        &*summarizer,
        time::OffsetDateTime::now_utc(),
        &crate::summarize::Silent,
    ))?
    .map_err(RequestError::from)?;
    let value = serde_json::to_value(&result)
        .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))?;
    Ok(Ok(value))
}

/// JSON that cannot end or comment out the `<script>` block it is embedded in.
pub fn embeddable_json(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 50);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn sha256_source(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The page with its stylesheet and modules inlined, `data` embedded and a meta CSP
/// naming the script and the stylesheet by hash.
pub fn report_html(data: &Value) -> String {
    let script = format!("\n{}", bundle());
    let style = format!("\n{STYLE_CSS}");
    let csp = format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; \
         form-action 'none'",
        sha256_source(&script),
        sha256_source(&style)
    );
    let head = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <style>{style}</style>\n<script type=\"module\">{script}</script>"
    );
    let data_block = format!(
        "<script type=\"application/json\" id=\"compactd-data\">{}</script>",
        embeddable_json(data)
    );
    INDEX_HTML
        .replace(
            "<link rel=\"stylesheet\" href=\"/inspector/style.css\">\n<script type=\"module\" src=\"/inspector/main.js\"></script>",
            &head,
        )
        .replace("<!--BODY-->", &data_block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_block() {
        let v = json!({"text": "</script><!-- \u{2028}\u{2029} & >"});
        let s = embeddable_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(!s.contains('\u{2028}') && !s.contains('\u{2029}'));
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    }

    #[test]
    fn the_report_inlines_everything_under_a_hash_csp() {
        let html = report_html(&json!({"x": 1}));
        assert!(!html.contains("src=\"/inspector"), "no served asset");
        assert!(!html.contains("href=\"/inspector"), "no served stylesheet");
        assert!(html.contains("id=\"compactd-data\">{\"x\":1}</script>"));
        let script = format!("\n{}", bundle());
        assert!(html.contains(&format!("<script type=\"module\">{script}</script>")));
        assert!(html.contains(&sha256_source(&script)));
        assert!(html.contains(&sha256_source(&format!("\n{STYLE_CSS}"))));
        assert!(!html.contains("'unsafe-inline'"));
    }
}
