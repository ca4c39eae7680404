//! The short summary: one plain paragraph for a UI, and the last-resort form for budgets
//! too small for any format.

use compactd_core::session::text::utf16_len;

use super::facts::{Facts, Modified};
use super::text::{collapse_ws, shorten};

/// One plain paragraph of at most three sentences: what the session is about, the files,
/// where the work stands.
pub(super) fn short(f: &Facts, limit: usize) -> String {
    let files: Vec<&str> = {
        let modified: Vec<&str> = f
            .modified
            .iter()
            .filter(|m| m.done())
            .map(|m| m.path.as_str())
            .collect();
        if modified.is_empty() {
            f.mentioned.items.iter().map(String::as_str).collect()
        } else {
            modified
        }
    };
    let changed = f.modified.iter().any(Modified::done);
    for (about, latest, status, n_files) in [
        (300, 160, 300, 3),
        (160, 80, 160, 2),
        (80, 0, 100, 1),
        (60, 0, 60, 0),
    ] {
        let mut p = String::new();
        match f.first_goal() {
            Some(goal) => {
                p.push_str(&format!(
                    "The session is about: \"{}\"",
                    shorten(&goal, about)
                ));
                let real: Vec<&String> = f.real_requests().collect();
                if latest > 0 && real.len() > 1 {
                    let last = real[real.len() - 1];
                    p.push_str(&format!(", most recently \"{}\"", shorten(last, latest)));
                }
                p.push('.');
            }
            None => p.push_str("The session has no user request."),
        }
        if n_files > 0 && !files.is_empty() {
            let shown = files.len().min(n_files);
            let more = files.len() - shown;
            p.push_str(if changed {
                " Files changed: "
            } else {
                " Files involved: "
            });
            p.push_str(&files[..shown].join(", "));
            if more > 0 {
                p.push_str(&format!(" and {more} more"));
            }
            p.push('.');
        }
        match (f.blocker(), &f.last_assistant) {
            (Some(e), _) => p.push_str(&format!(
                " Work is blocked: {} failed with \"{}\".",
                collapse_ws(&e.what.replace('`', "")),
                shorten(&e.line, status)
            )),
            (None, Some(last)) if f.waiting => p.push_str(&format!(
                " The assistant's last reply, now waiting for the user: \"{}\".",
                shorten(last, status)
            )),
            (None, Some(last)) => p.push_str(&format!(
                " Work is in progress: \"{}\".",
                shorten(last, status)
            )),
            (None, None) => {}
        }
        if utf16_len(&p) <= limit {
            return p;
        }
    }
    compact(f, limit)
}

/// The last resort for budgets too small for the format: the first request and the
/// blocking error, cut to fit.
pub(super) fn compact(f: &Facts, limit: usize) -> String {
    let first = f.first_goal().unwrap_or_default();
    let error = f
        .blocker()
        .map(|e| format!("Blocked: {}", e.line.trim()))
        .unwrap_or_default();
    let whole = match (first.is_empty(), error.is_empty()) {
        (false, false) => format!("{first} {error}"),
        (false, true) => first.clone(),
        (true, false) => error.clone(),
        (true, true) => return shorten(&f.fallback, limit),
    };
    if utf16_len(&whole) <= limit {
        return whole;
    }
    if !first.is_empty() && !error.is_empty() {
        let error = shorten(
            &error,
            (limit / 2).max(limit.saturating_sub(utf16_len(&first) + 1)),
        );
        let room = limit.saturating_sub(utf16_len(&error) + 1);
        if room >= 12 {
            return format!("{} {error}", shorten(&first, room));
        }
    }
    shorten(if first.is_empty() { &error } else { &first }, limit)
}

#[cfg(test)]
mod tests {
    use crate::summarize::extractive::summarize;
    use crate::summarize::extractive::tests::request;
    use crate::summarize::templates::tests::CONVERSATION;
    use crate::summarize::{Prompts, RequestKind};

    #[test]
    fn short_is_one_paragraph() {
        let p = Prompts::builtin();
        let prompt = format!(
            "<conversation>\n{CONVERSATION}\n</conversation>\n\n{}",
            p.short_summary
        );
        assert_eq!(RequestKind::detect(&prompt), RequestKind::Short);
        let t = summarize(&request(RequestKind::Short, prompt, 300)).text;
        assert!(
            !t.contains('\n') && !t.contains('#') && !t.contains("- "),
            "{t}"
        );
        assert!(!t.contains("`cargo test`"), "no markdown of ours: {t}");
        assert!(t.starts_with("The session is about: \"Add a --verbose flag"));
        assert!(t.contains("src/cli.rs"));
        assert!(t.contains("Work is blocked: cargo test failed"));
    }
}
