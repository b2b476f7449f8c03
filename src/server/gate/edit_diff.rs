//! What a person's edit changed: the proposed call next to the one that runs, as a unified
//! diff per changed argument (a decision's revised proposal, as a diff of its text). It is
//! kept in the resolution, so the record — the feed, the page after a reload, the audit —
//! shows what ran, not only what was proposed.

use serde_json::{Map, Value};

use crate::server::tools::{unified_diff, with_newline};

/// The most of a diff kept: an edit of a large file is shown up to here, then says it was cut.
const MAX_DIFF_CHARS: usize = 64 * 1024;

/// The diff from a tool call's proposed arguments to the edited ones; `None` when they are the
/// same (an edit that changed nothing). Arguments that are not objects are diffed whole.
pub fn of_arguments(proposed: &Value, edited: &Value) -> Option<String> {
    let text = match (proposed, edited) {
        (Value::Object(before), Value::Object(after)) => by_key(before, after),
        _ => value_diff("arguments", proposed, edited),
    };
    (!text.is_empty()).then(|| cap(text))
}

/// The diff from a decision's proposal to the revised text; `None` when unchanged.
pub fn of_proposal(proposed: &str, revised: &str) -> Option<String> {
    (proposed.trim() != revised.trim()).then(|| {
        cap(text_diff(
            "proposal",
            &with_newline(proposed),
            &with_newline(revised),
        ))
    })
}

/// Changed, added and removed keys, in the proposal's order and then the edit's new keys.
fn by_key(before: &Map<String, Value>, after: &Map<String, Value>) -> String {
    let keys = before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)));
    let mut out = String::new();
    for key in keys {
        let (old, new) = (
            before.get(key).unwrap_or(&Value::Null),
            after.get(key).unwrap_or(&Value::Null),
        );
        if old != new {
            out.push_str(&value_diff(key, old, new));
        }
    }
    out
}

fn value_diff(key: &str, old: &Value, new: &Value) -> String {
    text_diff(key, &shown(old), &shown(new))
}

/// A string as its text (so a file's content diffs by line), anything else as pretty JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => with_newline(text),
        Value::Null => String::new(),
        other => with_newline(&serde_json::to_string_pretty(other).unwrap_or_default()),
    }
}

fn text_diff(key: &str, old: &str, new: &str) -> String {
    unified_diff(key, old, new)
        .replacen(&format!("--- a/{key}"), &format!("--- proposed {key}"), 1)
        .replacen(&format!("+++ b/{key}"), &format!("+++ edited {key}"), 1)
}

/// Whether `diff` is one `cap` cut short (an uncut diff is never longer than the cap).
pub fn is_cut(diff: &str) -> bool {
    diff.len() > MAX_DIFF_CHARS
}

fn cap(text: String) -> String {
    if text.len() <= MAX_DIFF_CHARS {
        return text;
    }
    let mut end = MAX_DIFF_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (the rest of this diff is not shown)\n", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_command_shows_the_old_and_the_new_line() {
        let diff = of_arguments(
            &json!({"command": "rm -r build", "timeout": 5}),
            &json!({"command": "rm -r build/tmp", "timeout": 5}),
        )
        .unwrap();
        assert!(diff.contains("--- proposed command"), "{diff}");
        assert!(diff.contains("+++ edited command"), "{diff}");
        assert!(diff.contains("-rm -r build\n"), "{diff}");
        assert!(diff.contains("+rm -r build/tmp\n"), "{diff}");
        assert!(
            !diff.contains("timeout"),
            "an unchanged argument is left out: {diff}"
        );
    }

    #[test]
    fn file_content_diffs_by_line_and_added_or_removed_keys_show() {
        let diff = of_arguments(
            &json!({"path": "a.md", "content": "one\ntwo\nthree\n", "mode": "w"}),
            &json!({"path": "a.md", "content": "one\n2\nthree\n", "append": true}),
        )
        .unwrap();
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        assert!(
            diff.contains("--- proposed mode") && diff.contains("-w\n"),
            "{diff}"
        );
        assert!(
            diff.contains("+++ edited append") && diff.contains("+true\n"),
            "{diff}"
        );
        assert!(!diff.contains("a.md"), "{diff}");
    }

    #[test]
    fn an_edit_that_changes_nothing_has_no_diff() {
        let args = json!({"command": "ls"});
        assert_eq!(of_arguments(&args, &args), None);
        assert_eq!(of_proposal("Ship it", " Ship it\n"), None);
        let revised = of_proposal("Deploy friday", "Deploy monday").unwrap();
        assert!(
            revised.contains("-Deploy friday\n+Deploy monday\n"),
            "{revised}"
        );
    }

    #[test]
    fn a_huge_edit_is_cut_and_says_so() {
        let big = "x\n".repeat(100_000);
        let diff = of_arguments(&json!({"content": ""}), &json!({"content": big})).unwrap();
        assert!(diff.len() < MAX_DIFF_CHARS + 100);
        assert!(diff.ends_with("(the rest of this diff is not shown)\n"));
    }
}
