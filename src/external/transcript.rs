//! What the agent last said, read from its transcript as the hook runs: Claude Code's
//! (`transcript_path`, JSON lines of `{"type":"assistant","message":{"content":[…]}}`) and
//! Codex's rollout file (`{"type":"response_item","payload":{"type":"message","role":
//! "assistant",…}}` or `{"type":"event_msg","payload":{"type":"agent_message",…}}`). The card
//! shows it as "the agent says", beside the arguments, never instead of them.
//!
//! Bounded every way: only a regular file, opened without blocking (a FIFO never stalls the
//! hook), only its last [`TAIL_BYTES`], on the blocking pool with a deadline. Only words said
//! since the person's last message count: an older turn's words would describe another call.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// How much of the end of the transcript is read.
pub const TAIL_BYTES: u64 = 256 * 1024;
/// How long reading it may take before the hook goes on without it.
const READ_DEADLINE: Duration = Duration::from_secs(2);
/// How often a waiting hook looks at what the agent appended to its transcript.
const DROP_POLL: Duration = Duration::from_millis(500);

/// The agent's last words in the transcript at `path`, if it said any since the person's last
/// message; `None` when the file cannot be read in time (the card then goes without).
pub async fn last_words(path: &str) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let path = path.to_owned();
    let read = tokio::task::spawn_blocking(move || read_tail(Path::new(&path)));
    match tokio::time::timeout(READ_DEADLINE, read).await {
        Ok(Ok(Some(tail))) => words_in(&tail),
        _ => None,
    }
}

/// The last [`TAIL_BYTES`] of a regular file, from the first whole line in them.
fn read_tail(path: &Path) -> Option<String> {
    let (mut file, len) = open_regular(path)?;
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // Cut into a line: drop its piece.
    Some(match (start > 0, text.find('\n')) {
        (true, Some(at)) => text[at + 1..].to_owned(),
        (true, None) => String::new(),
        (false, _) => text,
    })
}

/// The file at `path` and its length, if it is a regular file: opened without blocking (a FIFO
/// never stalls the hook) and without becoming a controlling terminal.
fn open_regular(path: &Path) -> Option<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    meta.is_file().then_some((file, meta.len()))
}

/// What one transcript line is, as far as the agent's words go.
enum Line {
    /// The agent said this.
    Said(String),
    /// The person wrote (a new turn began here).
    Person,
    /// A tool's result came back: words before it were about an earlier call.
    Result,
    /// Anything else: tool calls and results, metadata, reasoning.
    Other,
}

/// The agent's last words in a transcript's lines, newest first, stopping at the person's
/// and at any tool result (the words before a result introduced the call that made it, not
/// the call asking now).
pub fn words_in(tail: &str) -> Option<String> {
    for line in tail.lines().rev() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match classify(&entry) {
            Line::Said(text) => {
                if let Some(words) = crate::text::agent_words(&text) {
                    return Some(words);
                }
            }
            Line::Person | Line::Result => return None,
            Line::Other => {}
        }
    }
    None
}

fn classify(entry: &Value) -> Line {
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        // Claude Code.
        "assistant" => match texts(entry.pointer("/message/content"), &["text"]) {
            Some(text) => Line::Said(text),
            None => Line::Other,
        },
        "user" => claude_user(entry.pointer("/message/content")),
        // Codex.
        "response_item" => codex_response_item(entry.get("payload")),
        "event_msg" => codex_event(entry.get("payload")),
        _ => Line::Other,
    }
}

/// A Claude Code user entry: the person's prompt, or only tool results (the agent's own loop).
fn claude_user(content: Option<&Value>) -> Line {
    let has = |kind: &str| match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some(kind)),
        _ => false,
    };
    let prompt = matches!(content, Some(Value::String(_))) || has("text");
    match (prompt, has("tool_result")) {
        (true, _) => Line::Person,
        (false, true) => Line::Result,
        (false, false) => Line::Other,
    }
}

/// A Codex `response_item`: the agent's message, the person's, or a tool's output.
fn codex_response_item(payload: Option<&Value>) -> Line {
    let kind = payload.and_then(|p| p.get("type")).and_then(Value::as_str);
    let message = kind == Some("message");
    match payload.and_then(|p| p.get("role")).and_then(Value::as_str) {
        Some("assistant") if message => {
            let content = payload.and_then(|p| p.get("content"));
            match texts(content, &["output_text", "text"]) {
                Some(text) => Line::Said(text),
                None => Line::Other,
            }
        }
        Some("user") if message => Line::Person,
        _ if kind.is_some_and(|t| t.ends_with("_output")) => Line::Result,
        _ => Line::Other,
    }
}

/// A Codex `event_msg`: the agent's words, the person's, or the end of a tool's run.
fn codex_event(payload: Option<&Value>) -> Line {
    match payload.and_then(|p| p.get("type")).and_then(Value::as_str) {
        Some("agent_message") => {
            match payload
                .and_then(|p| p.get("message"))
                .and_then(Value::as_str)
            {
                Some(text) => Line::Said(text.to_owned()),
                None => Line::Other,
            }
        }
        Some("user_message") => Line::Person,
        Some(t) if t.ends_with("_end") => Line::Result,
        _ => Line::Other,
    }
}

/// The text blocks of a message's content (of the given block types), joined; a plain string
/// content counts as one.
fn texts(content: Option<&Value>, kinds: &[&str]) -> Option<String> {
    let joined = match content? {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                b.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| kinds.contains(&t))
            })
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!joined.trim().is_empty()).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(entries: &[Value]) -> String {
        entries
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn claude_code_the_last_text_since_the_prompt_is_what_the_agent_says() {
        let tail = lines(&[
            json!({"type": "user", "message": {"role": "user", "content": "fix the build"}}),
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "First I'll look."}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Read", "input": {}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": "…"}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "thinking", "thinking": "hidden"},
                {"type": "text", "text": "The tests fail; I'll run them once to see why."},
                {"type": "tool_use", "name": "Bash", "input": {"command": "npm test"}}
            ]}}),
        ]);
        assert_eq!(
            words_in(&tail).as_deref(),
            Some("The tests fail; I'll run them once to see why.")
        );
    }

    #[test]
    fn words_before_an_earlier_calls_result_are_not_this_calls() {
        // "I'll just list the files", an `ls` that ran, then a silent second call: the card
        // of the second call must not say it only lists files.
        let claude = lines(&[
            json!({"type": "user", "message": {"content": "tidy up"}}),
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "I'll just list the files."}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": "a b"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "curl x | sh"}}]}}),
        ]);
        assert_eq!(words_in(&claude), None);
        let codex = lines(&[
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Listing first."}]}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell"}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "output": "a"}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell"}}),
        ]);
        assert_eq!(words_in(&codex), None);
        let events = lines(&[
            json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "Listing first."}}),
            json!({"type": "event_msg", "payload": {"type": "exec_command_end", "exit_code": 0}}),
        ]);
        assert_eq!(words_in(&events), None);
    }

    #[test]
    fn words_from_before_the_persons_last_message_do_not_count() {
        let tail = lines(&[
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "old turn"}]}}),
            json!({"type": "user", "message": {"content": [{"type": "text", "text": "now delete it"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}}),
        ]);
        assert_eq!(words_in(&tail), None);
        let codex = lines(&[
            json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "old"}}),
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": "go"}}),
        ]);
        assert_eq!(words_in(&codex), None);
    }

    #[test]
    fn codex_rollout_messages_and_agent_events_both_read() {
        let tail = lines(&[
            json!({"type": "session_meta", "payload": {"id": "x"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "clean up"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Removing the build folder."}]}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "shell"}}),
            "not json at all".into(),
        ]);
        assert_eq!(
            words_in(&tail).as_deref(),
            Some("Removing the build folder.")
        );
        let events = lines(&[
            json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "Running tests."}}),
        ]);
        assert_eq!(words_in(&events).as_deref(), Some("Running tests."));
    }

    #[test]
    fn long_words_are_cut_and_unreadable_files_give_nothing() {
        let long = lines(&[json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "x".repeat(5000)}
        ]}})]);
        let words = words_in(&long).unwrap();
        assert_eq!(words.chars().count(), crate::text::MAX_AGENT_SAYS_CHARS);
        assert_eq!(read_tail(Path::new("/nonexistent/transcript.jsonl")), None);
        assert_eq!(read_tail(Path::new("/")), None, "a directory is not read");
    }

    #[tokio::test]
    async fn a_fifo_or_a_huge_file_never_stalls_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("t.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        assert_eq!(last_words(fifo.to_str().unwrap()).await, None);
        assert!(started.elapsed() < Duration::from_secs(2));

        // Only the tail of a large file is read: the first line (cut) is dropped.
        let big = dir.path().join("big.jsonl");
        let filler = json!({"type": "progress", "data": "y".repeat(1000)}).to_string();
        let mut text = String::new();
        while text.len() < 3 * TAIL_BYTES as usize {
            text.push_str(&filler);
            text.push('\n');
        }
        text.push_str(
            &json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "at the end"}]}})
                .to_string(),
        );
        std::fs::write(&big, text).unwrap();
        assert_eq!(
            last_words(big.to_str().unwrap()).await.as_deref(),
            Some("at the end")
        );
    }
}

/// Resolves once a line the agent appends to its transcript at `path` (after this was called)
/// says it dropped the call the hook waits on (`dropped(line)`: on Esc, Gemini CLI writes
/// "Request cancelled." and Qwen Code the call's cancelled result, and both leave their hook
/// running); never, when there is no transcript to read.
pub async fn dropped(path: &str, dropped: impl Fn(&Value) -> bool) {
    watch(path, Start::End, |line, _| dropped(line)).await
}

/// Where [`watch`] starts reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Only lines appended after the watch began.
    End,
    /// Also the last [`TAIL_BYTES`] as they stand when it begins (read first, marked not
    /// fresh), for a watch that must know what was written just before it.
    Tail,
}

/// Resolves once `seen(line, fresh)` holds for a line of the transcript at `path`, fed in the
/// order written (`fresh`: appended after the watch began); never, when there is no transcript
/// to read. Read as [`last_words`] reads: a regular file, without blocking, at most
/// [`TAIL_BYTES`] a look, on the blocking pool.
pub async fn watch(path: &str, start: Start, mut seen: impl FnMut(&Value, bool) -> bool) {
    if path.is_empty() {
        return std::future::pending().await;
    }
    let path = std::path::PathBuf::from(path);
    let len = {
        let path = path.clone();
        match tokio::task::spawn_blocking(move || std::fs::metadata(path).map(|m| m.len())).await {
            Ok(Ok(len)) => len,
            // No transcript yet: everything it will hold is new.
            _ => 0,
        }
    };
    let (mut from, mut fresh) = match start {
        Start::End => (len, true),
        Start::Tail => (len.saturating_sub(TAIL_BYTES), false),
    };
    loop {
        if fresh {
            tokio::time::sleep(DROP_POLL).await;
        }
        let read = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || read_from(&path, from))
        };
        let looked = tokio::time::timeout(READ_DEADLINE, read).await;
        let was_fresh = std::mem::replace(&mut fresh, true);
        let Ok(Ok(Some((lines, next)))) = looked else {
            continue;
        };
        from = next;
        // A line cut at the start of the tail does not parse, and is skipped.
        let mut parsed = lines
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok());
        if parsed.any(|line| seen(&line, was_fresh)) {
            return;
        }
    }
}

/// The whole lines appended after byte `from` (at most [`TAIL_BYTES`] of them), and where the
/// next look starts; a file that shrank is read again from its new end.
fn read_from(path: &Path, from: u64) -> Option<(String, u64)> {
    let (mut file, len) = open_regular(path)?;
    if len < from {
        return Some((String::new(), len));
    }
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    // Only whole lines: a line being written is read on the next look.
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let whole = if whole == 0 && bytes.len() as u64 == TAIL_BYTES {
        bytes.len()
    } else {
        whole
    };
    bytes.truncate(whole);
    Some((
        String::from_utf8_lossy(&bytes).into_owned(),
        from + whole as u64,
    ))
}

#[cfg(test)]
mod drop_tests {
    use super::*;

    fn cancelled(line: &Value) -> bool {
        line["type"] == "info" && line["content"] == "Request cancelled."
    }

    #[tokio::test]
    async fn a_drop_written_after_the_wait_began_is_seen_and_one_before_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.jsonl");
        let old = "{\"type\":\"info\",\"content\":\"Request cancelled.\"}\n";
        std::fs::write(&path, old).unwrap();
        let shown = path.display().to_string();
        let watch = tokio::spawn(async move { dropped(&shown, cancelled).await });
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(!watch.is_finished(), "an earlier cancel is not this call's");
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        // Half a line first: not read until it is whole.
        file.write_all(b"{\"type\":\"gemini\",\"content\":\"\"}\n{\"type\":\"in")
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(!watch.is_finished());
        file.write_all(b"fo\",\"content\":\"Request cancelled.\"}\n")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), watch)
            .await
            .expect("the drop is seen")
            .unwrap();
    }
}
