//! The offline demo agent: turns the person's message into tool calls with the small command
//! language of protocol.md, then summarizes what happened. No model, no network, no key.
//!
//! It is stateless: each reply is computed from the conversation alone (how many of this
//! message's calls already have results), so a turn resumed from the log continues correctly.

use std::borrow::Borrow;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    ChatMessage, Completion, CompletionRequest, DeltaSink, Provider, ProviderError, ToolCallRequest,
};

/// Pause between streamed pieces, so the reply visibly streams.
const DELTA_PAUSE: Duration = Duration::from_millis(12);

pub const HELP: &str = "I'm the offline demo agent. Each line of your message that matches one of these forms becomes a tool call:\n\n\
- `read <path>` · `list [<dir>]` · `search <text>`\n\
- `write <path>: <content>` (`\\n` means newline) · `edit <path>: <old> => <new>`\n\
- `run: <command>`\n\
- `ask <decision_kind>: <title> | <proposal markdown>`\n\
- `set <key> = <value>` · `propose plan: <markdown>` · `loop <n>`\n\
- `say: <words>`: what the agent says before its next calls\n\
- `parallel:` then lines up to a blank line: one batch of parallel calls\n\n\
To use a real model, set `[provider] kind = \"openai\"` with `base_url` and `model` in the config file.";

pub struct DemoProvider;

/// One tool call as the demo agent plans it (the id is given when it is issued).
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    pub tool: &'static str,
    pub args: Value,
}

/// Calls issued together, and what the agent says before them (a `say:` line).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Batch {
    pub said: Option<String>,
    pub calls: Vec<PlannedCall>,
}

/// Parses a message into batches of calls; each batch runs before the next is issued. A
/// `say: <words>` line is what the agent writes before the next batch (its cards show it as
/// what the agent says it is doing).
pub fn plan(message: &str) -> Vec<Batch> {
    let mut batches = Vec::new();
    let mut said: Option<String> = None;
    let mut parallel: Option<Vec<PlannedCall>> = None;
    let mut push = |calls: Vec<PlannedCall>, said: &mut Option<String>| {
        batches.push(Batch {
            said: said.take(),
            calls,
        })
    };
    for raw in message.lines() {
        let line = raw.trim();
        if let Some(words) = line.strip_prefix("say:") {
            said = Some(unescape(words.trim()));
            continue;
        }
        if let Some(batch) = parallel.as_mut() {
            if line.is_empty() {
                if let Some(batch) = parallel.take().filter(|b| !b.is_empty()) {
                    push(batch, &mut said);
                }
            } else {
                batch.extend(parse_line(line));
            }
            continue;
        }
        if line == "parallel:" {
            parallel = Some(Vec::new());
            continue;
        }
        for call in parse_line(line) {
            push(vec![call], &mut said);
        }
    }
    if let Some(batch) = parallel.filter(|b| !b.is_empty()) {
        push(batch, &mut said);
    }
    batches
}

/// One line → zero or more calls (`loop <n>` gives n).
fn parse_line(line: &str) -> Vec<PlannedCall> {
    let one = |tool, args| vec![PlannedCall { tool, args }];
    if let Some(command) = line.strip_prefix("run:") {
        return one("shell", json!({ "command": command.trim() }));
    }
    if let Some(plan) = line.strip_prefix("propose plan:") {
        return one("exit_plan", json!({ "plan": unescape(plan.trim()) }));
    }
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    let call = match word {
        "read" if !rest.is_empty() => Some(("read_file", json!({ "path": rest }))),
        "list" => Some((
            "list_files",
            json!({ "path": if rest.is_empty() { "." } else { rest } }),
        )),
        "search" if !rest.is_empty() => Some(("search", json!({ "pattern": rest }))),
        "write" => write_call(rest),
        "edit" => edit_call(rest),
        "ask" => ask_call(rest),
        "set" => rest.split_once('=').map(|(key, value)| {
            let value = value.trim();
            let value = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
            ("config_set", json!({ "key": key.trim(), "value": value }))
        }),
        "loop" => {
            let n = rest.parse::<u32>().unwrap_or(0).min(1000);
            return (0..n)
                .map(|_| PlannedCall {
                    tool: "list_files",
                    args: json!({ "path": "." }),
                })
                .collect();
        }
        _ => None,
    };
    call.map_or_else(Vec::new, |(tool, args)| one(tool, args))
}

/// `write PATH: CONTENT`.
fn write_call(rest: &str) -> Option<(&'static str, Value)> {
    let (path, content) = rest.split_once(':')?;
    (!path.trim().is_empty()).then(|| {
        let content = unescape(content.strip_prefix(' ').unwrap_or(content));
        (
            "write_file",
            json!({ "path": path.trim(), "content": content }),
        )
    })
}

/// `edit PATH: OLD => NEW`.
fn edit_call(rest: &str) -> Option<(&'static str, Value)> {
    let (path, change) = rest.split_once(':')?;
    let (old, new) = change.split_once("=>")?;
    Some((
        "edit_file",
        json!({ "path": path.trim(), "old": unescape(old.trim()), "new": unescape(new.trim()) }),
    ))
}

/// `ask KIND: TITLE | PROPOSAL`.
fn ask_call(rest: &str) -> Option<(&'static str, Value)> {
    let (kind, body) = rest.split_once(':')?;
    let (title, proposal) = body.split_once('|').unwrap_or((body, ""));
    Some((
        "request_approval",
        json!({ "kind": kind.trim(), "title": title.trim(), "proposal": unescape(proposal.trim()) }),
    ))
}

fn unescape(text: &str) -> String {
    text.replace("\\n", "\n")
}

/// The calls and results since the person's last message, matched by call id.
fn this_turn<M: Borrow<ChatMessage>>(
    messages: &[M],
) -> (&str, Vec<(&ToolCallRequest, Option<&str>)>) {
    let start = messages
        .iter()
        .rposition(|m| matches!(m.borrow(), ChatMessage::User(_)))
        .unwrap_or(0);
    let user = match messages.get(start).map(Borrow::borrow) {
        Some(ChatMessage::User(text)) => text.as_str(),
        _ => "",
    };
    let mut calls: Vec<(&ToolCallRequest, Option<&str>)> = Vec::new();
    for message in &messages[start..] {
        match message.borrow() {
            ChatMessage::Assistant { tool_calls, .. } => {
                calls.extend(tool_calls.iter().map(|c| (c, None)));
            }
            ChatMessage::Tool { call_id, output } => {
                if let Some(slot) = calls.iter_mut().find(|(c, _)| &c.id == call_id) {
                    slot.1 = Some(output.as_str());
                }
            }
            _ => {}
        }
    }
    (user, calls)
}

/// What the demo says next: the next batch of calls, or the closing summary.
pub fn next_step<M: Borrow<ChatMessage>>(messages: &[M]) -> Completion {
    let (user, calls) = this_turn(messages);
    let batches = plan(user);
    if batches.is_empty() {
        return Completion {
            text: HELP.to_owned(),
            ..Completion::default()
        };
    }
    let done = calls.len();
    let mut issued = 0;
    for batch in &batches {
        if issued == done {
            return Completion {
                text: batch.said.clone().unwrap_or_default(),
                tool_calls: batch
                    .calls
                    .iter()
                    .map(|c| ToolCallRequest {
                        id: format!("call_{}", uuid::Uuid::new_v4().simple()).into(),
                        name: c.tool.to_owned(),
                        args: c.args.clone(),
                    })
                    .collect(),
                tokens: 0,
            };
        }
        issued += batch.calls.len();
    }
    Completion {
        text: summary(&calls),
        ..Completion::default()
    }
}

/// The closing words: each call as it ran — a call a person edited is named as edited, not as
/// the agent proposed it (its result says what it ran with) — and the first line of its result.
fn summary(calls: &[(&ToolCallRequest, Option<&str>)]) -> String {
    let mut text = String::from(if calls.len() == 1 {
        "Here is what happened:\n\n"
    } else {
        "Here is what happened, call by call:\n\n"
    });
    for (call, output) in calls {
        let edited = output.and_then(crate::server::conversation::ran_with);
        let (ran, output, note) = match edited {
            Some((args, result)) => (
                ToolCallRequest {
                    args,
                    ..(*call).clone()
                },
                Some(result),
                " (as you edited it)",
            ),
            None => ((*call).clone(), *output, ""),
        };
        let output = output.unwrap_or("(no result)");
        let first_line = output.lines().next().unwrap_or("").trim();
        let short: String = first_line.chars().take(160).collect();
        let ellipsis = if short.len() < first_line.len() || output.lines().nth(1).is_some() {
            " …"
        } else {
            ""
        };
        text.push_str(&format!(
            "- `{}`{note} → {short}{ellipsis}\n",
            describe(&ran)
        ));
    }
    text
}

fn describe(call: &ToolCallRequest) -> String {
    let field = |k: &str| call.args.get(k).and_then(Value::as_str).unwrap_or("");
    let subject = match call.name.as_str() {
        "shell" => field("command"),
        "search" => field("pattern"),
        "request_approval" => field("title"),
        "config_set" => field("key"),
        "exit_plan" => "plan",
        _ => field("path"),
    };
    format!("{} {}", call.name, subject).trim().to_owned()
}

/// Streams `text` in small pieces through the sink, stopping early on cancel.
async fn stream(
    text: &str,
    deltas: DeltaSink<'_>,
    cancel: &CancellationToken,
) -> Result<(), ProviderError> {
    let mut piece = String::new();
    for word in text.split_inclusive(' ') {
        piece.push_str(word);
        if piece.len() >= 24 {
            deltas(&piece);
            piece.clear();
            tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                _ = tokio::time::sleep(DELTA_PAUSE) => {}
            }
        }
    }
    if !piece.is_empty() {
        deltas(&piece);
    }
    Ok(())
}

#[async_trait]
impl Provider for DemoProvider {
    fn name(&self) -> &str {
        "demo"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        crate::timeline::mark("demo: asked for the next step");
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let step = next_step(&request.messages);
        stream(&step.text, deltas, cancel).await?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(batches: &[Batch]) -> Vec<Vec<&str>> {
        batches
            .iter()
            .map(|b| b.calls.iter().map(|c| c.tool).collect())
            .collect()
    }

    #[test]
    fn every_form_of_the_command_language_parses() {
        let batches = plan(
            "read a.txt\nlist\nlist src\nsearch foo bar\nwrite notes.md: hello\\nworld\n\
             edit notes.md: hello => bye\nrun: ls -la\nask prep_plan: Drop nulls | **why** not\n\
             set approvals.timeout_secs = 60\npropose plan: do it\nloop 2\nnonsense line",
        );
        assert_eq!(
            tools(&batches),
            vec![
                vec!["read_file"],
                vec!["list_files"],
                vec!["list_files"],
                vec!["search"],
                vec!["write_file"],
                vec!["edit_file"],
                vec!["shell"],
                vec!["request_approval"],
                vec!["config_set"],
                vec!["exit_plan"],
                vec!["list_files"],
                vec!["list_files"],
            ]
        );
        assert_eq!(batches[1].calls[0].args, json!({"path": "."}));
        assert_eq!(batches[3].calls[0].args, json!({"pattern": "foo bar"}));
        assert_eq!(
            batches[4].calls[0].args,
            json!({"path": "notes.md", "content": "hello\nworld"})
        );
        assert_eq!(
            batches[5].calls[0].args,
            json!({"path": "notes.md", "old": "hello", "new": "bye"})
        );
        assert_eq!(batches[6].calls[0].args, json!({"command": "ls -la"}));
        assert_eq!(
            batches[7].calls[0].args,
            json!({"kind": "prep_plan", "title": "Drop nulls", "proposal": "**why** not"})
        );
        assert_eq!(
            batches[8].calls[0].args,
            json!({"key": "approvals.timeout_secs", "value": 60})
        );
        // `\n` in a plan is a line break, as in every other demo text (the empty screen's
        // example is one line with `\n` in it).
        let plan = plan("propose plan: 1. read the data\\n2. clean it");
        assert_eq!(
            plan[0].calls[0].args,
            json!({"plan": "1. read the data\n2. clean it"})
        );
    }

    #[test]
    fn parallel_lines_form_one_batch_until_a_blank_line() {
        let batches = plan("parallel:\nwrite a: 1\nwrite b: 2\n\nread a");
        assert_eq!(
            tools(&batches),
            vec![vec!["write_file", "write_file"], vec!["read_file"]]
        );
        assert_eq!(
            tools(&plan("parallel:\nrun: a\nrun: b")),
            vec![vec!["shell", "shell"]]
        );
    }

    #[test]
    fn a_say_line_is_what_the_agent_writes_before_the_next_batch() {
        let batches = plan("say: Checking the tests first\nrun: npm test\nread a\nsay: dangling");
        assert_eq!(batches[0].said.as_deref(), Some("Checking the tests first"));
        assert_eq!(batches[1].said, None);
        assert_eq!(batches.len(), 2, "a say with no call after it is dropped");
        let step = next_step(&[ChatMessage::User("say: Cleaning up\nrun: rm -f x".into())]);
        assert_eq!(step.text, "Cleaning up");
        assert_eq!(step.tool_calls.len(), 1);
    }

    #[test]
    fn a_message_with_no_command_gets_help() {
        let step = next_step(&[ChatMessage::User("hello there".into())]);
        assert!(step.tool_calls.is_empty());
        assert!(step.text.contains("write <path>"));
    }

    #[test]
    fn steps_follow_results_then_summarize() {
        let mut messages = vec![ChatMessage::User("write a: x\nrun: echo hi".into())];
        let first = next_step(&messages);
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].name, "write_file");
        messages.push(ChatMessage::Assistant {
            text: String::new(),
            tool_calls: first.tool_calls.clone(),
        });
        messages.push(ChatMessage::Tool {
            call_id: first.tool_calls[0].id.clone(),
            output: "wrote 1 bytes to a".into(),
        });
        let second = next_step(&messages);
        assert_eq!(second.tool_calls[0].name, "shell");
        messages.push(ChatMessage::Assistant {
            text: String::new(),
            tool_calls: second.tool_calls.clone(),
        });
        messages.push(ChatMessage::Tool {
            call_id: second.tool_calls[0].id.clone(),
            output: "[denied] use b.txt instead".into(),
        });
        let last = next_step(&messages);
        assert!(last.tool_calls.is_empty());
        assert!(last.text.contains("write_file a"), "{}", last.text);
        assert!(last.text.contains("use b.txt instead"), "{}", last.text);
    }

    /// After a person edited a command, the closing words name the command that ran, never
    /// the one proposed, and say it was edited.
    #[test]
    fn the_summary_names_what_ran_after_an_edit() {
        let mut messages = vec![ChatMessage::User("run: echo proposed-words".into())];
        let step = next_step(&messages);
        messages.push(ChatMessage::Assistant {
            text: String::new(),
            tool_calls: step.tool_calls.clone(),
        });
        messages.push(ChatMessage::Tool {
            call_id: step.tool_calls[0].id.clone(),
            output: crate::server::conversation::edited_result_text(
                &json!({"command": "echo edited-words"}),
                crate::protocol::ToolStatus::Ok,
                "edited-words\n",
            ),
        });
        let last = next_step(&messages);
        assert!(
            last.text
                .contains("`shell echo edited-words` (as you edited it) → edited-words"),
            "{}",
            last.text
        );
        assert!(!last.text.contains("proposed-words"), "{}", last.text);
    }
}
