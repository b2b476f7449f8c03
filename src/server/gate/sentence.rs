//! The one plain sentence a safety-floor card opens with: what will happen, to what, why that
//! is sensitive, and the rule — "Writes `.env` — a secrets file: always asks, even in Yolo."
//! Which floor pattern matched stays in the card's reason (`reason_detail`), not here.

use serde_json::Value;

use crate::shown;

/// The rule every floor card states.
const RULE: &str = "always asks, even in Yolo";

/// The sentence for a floor card of the built-in agent's `tool` called with `args`; `why` is
/// the floor's own reason for it (`reason_detail`), read for what the call touches.
pub fn floor_sentence(tool: &str, args: &Value, why: &str) -> String {
    let path = args.get("path").and_then(Value::as_str);
    let verb = match tool {
        "write_file" => Some("Writes"),
        "edit_file" => Some("Edits"),
        "read_file" => Some("Reads"),
        "list_files" => Some("Lists"),
        "search" => Some("Searches"),
        _ => None,
    };
    match (verb, path) {
        (Some(verb), Some(path)) => {
            let what = sensitive_kind(&format!("{path} {why}"));
            format!("{verb} {} — {what}: {RULE}.", quoted(path))
        }
        _ if tool == "shell" => command_sentence(why),
        _ => format!(
            "Calls `{}`, which touches something on the safety floor: {RULE}.",
            shown::line(tool)
        ),
    }
}

/// A command's sentence: the floor path it touches when the reason names one, else the kind of
/// command it is.
fn command_sentence(why: &str) -> String {
    if let Some(path) = touched_path(why) {
        let what = sensitive_kind(&format!("{path} {why}"));
        return format!(
            "Runs a command that touches {} — {what}: {RULE}.",
            quoted(path)
        );
    }
    if let Some(entry) = why
        .strip_prefix("runs `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(entry, _)| entry)
        .filter(|_| !why.to_lowercase().contains("countersign"))
    {
        return format!(
            "Runs a command with {} in it — a destructive or far-reaching command: {RULE}.",
            quoted(entry)
        );
    }
    let lower = why.to_lowercase();
    let what = if lower.contains("countersign") {
        "it could change Countersign's own state"
    } else if lower.contains("not known") || lower.contains("cannot") || lower.contains("can't") {
        "what it touches is only known when it runs"
    } else {
        sensitive_kind(why)
    };
    format!("Runs a command — {what}: {RULE}.")
}

/// The path after the floor's "touches" (`touches .env (matches …)`, `touches the folder .git,
/// …`), as it wrote it.
fn touched_path(why: &str) -> Option<&str> {
    let after = why.split_once("touches ")?.1;
    let after = after.strip_prefix("the folder ").unwrap_or(after);
    let end = after
        .find(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .unwrap_or(after.len());
    Some(&after[..end]).filter(|path| !path.is_empty())
}

/// What kind of sensitive thing a floor path is, in a person's words.
fn sensitive_kind(text: &str) -> &'static str {
    let lower = text.to_lowercase();
    let has = |part: &str| lower.contains(part);
    if has("hooks and permissions") {
        "an agent's hooks and permissions"
    } else if has("countersign") {
        "Countersign's own files"
    } else if has(".ssh") || has("id_rsa") || has("id_ed25519") || has("id_ecdsa") {
        "your SSH keys"
    } else if has(".env") {
        "a secrets file"
    } else if has(".pem") || has(".key") {
        "a private key or certificate"
    } else if has(".aws") || has("credential") || has(".netrc") || has(".npmrc") {
        "credentials"
    } else if has(".git") {
        "git's own files (its hooks run code)"
    } else if has("deploy") {
        "a deployment file"
    } else {
        "on the safety floor"
    }
}

/// A path between backticks, written as `shown::line` writes it; a backtick of its own is
/// written out, so the path cannot close the quote and speak for the page.
fn quoted(path: &str) -> String {
    format!("`{}`", shown::line(path).replace('`', "⟨U+0060⟩"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sentence(tool: &str, args: Value, why: &str) -> String {
        floor_sentence(tool, &args, why)
    }

    #[test]
    fn a_floor_write_reads_as_one_plain_sentence() {
        let why = "`.env` touches .env (matches `**/.env*`) — always asks, even in Yolo";
        assert_eq!(
            sentence("write_file", json!({"path": ".env", "content": "A=1"}), why),
            "Writes `.env` — a secrets file: always asks, even in Yolo."
        );
        assert_eq!(
            sentence(
                "edit_file",
                json!({"path": "keys/server.pem"}),
                "touches keys/server.pem"
            ),
            "Edits `keys/server.pem` — a private key or certificate: always asks, even in Yolo."
        );
    }

    #[test]
    fn a_floor_command_names_what_it_touches() {
        assert_eq!(
            sentence(
                "shell",
                json!({"command": "cat ~/.ssh/id_rsa"}),
                "touches ~/.ssh/id_rsa (matches `**/.ssh/**`) — always asks, even in Yolo"
            ),
            "Runs a command that touches `~/.ssh/id_rsa` — your SSH keys: always asks, even in Yolo."
        );
        assert_eq!(
            sentence(
                "shell",
                json!({"command": "rm -rf build"}),
                "runs `rm -rf` — always asks, even in Yolo"
            ),
            "Runs a command with `rm -rf` in it — a destructive or far-reaching command: always asks, even in Yolo."
        );
    }

    #[test]
    fn a_path_cannot_close_the_quote() {
        let s = sentence(
            "write_file",
            json!({"path": "a` — harmless: `b.env"}),
            "touches it",
        );
        assert!(
            s.starts_with("Writes `a⟨U+0060⟩ — harmless: ⟨U+0060⟩b.env` — "),
            "{s}"
        );
    }
}
