//! The one script every scripted model server follows, whatever API it speaks: the person's
//! prompt names the shell commands the model asks for, in order (`RUN[<command>]`), and after
//! the last tool result the model says `DONE`. The servers record every request and every tool
//! result they are sent, so a test can check what the agent told the model (a deny's reason).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

/// What the model does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Ask for the shell tool with this command (the `n`th of the prompt, counting from 0).
    Run { n: usize, command: String },
    /// Answer with text and end the turn.
    Say(String),
}

/// The commands a prompt asks for: each `RUN[…]`, in order (a `]` inside is written `\]`).
pub fn commands(prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = prompt;
    while let Some(start) = rest.find("RUN[") {
        let body = &rest[start + 4..];
        let mut command = String::new();
        let mut chars = body.char_indices();
        let mut end = body.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if body[i + 1..].starts_with(']') => {
                    command.push(']');
                    chars.next();
                }
                ']' => {
                    end = i + 1;
                    break;
                }
                c => command.push(c),
            }
        }
        out.push(command);
        rest = &body[end.min(body.len())..];
    }
    out
}

/// The next step, from the person's words and how many tool results came back so far.
pub fn next_step(prompt: &str, results_so_far: usize) -> Step {
    let commands = commands(prompt);
    match commands.get(results_so_far) {
        Some(command) => Step::Run {
            n: results_so_far,
            command: command.clone(),
        },
        None => Step::Say("DONE".into()),
    }
}

/// One tool result the agent sent back to the model.
#[derive(Clone, Debug)]
pub struct ToolResult {
    pub text: String,
    pub is_error: bool,
}

/// Everything a scripted server was sent.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<Recorded>>,
}

#[derive(Default)]
struct Recorded {
    requests: Vec<(String, Value)>,
    results: Vec<ToolResult>,
    /// When the server last sent a tool call, and when a call's result first came back.
    asked_at: Option<Instant>,
    result_at: Option<Instant>,
}

impl Recorder {
    pub fn request(&self, path: &str, body: &Value) {
        self.inner
            .lock()
            .unwrap()
            .requests
            .push((path.to_owned(), body.clone()));
    }

    /// Records the tool results of the latest model call that carried any (agents resend the
    /// whole conversation on every call, so these are all of that conversation's).
    pub fn results(&self, results: Vec<ToolResult>) {
        if !results.is_empty() {
            let mut inner = self.inner.lock().unwrap();
            if results.len() != inner.results.len() {
                inner.result_at = Some(Instant::now());
            }
            inner.results = results;
        }
    }

    /// The server is sending a tool call now (for the latency figures).
    pub fn asked(&self) {
        self.inner.lock().unwrap().asked_at = Some(Instant::now());
    }

    /// When the last tool call was sent and when a new result last arrived.
    pub fn times(&self) -> (Option<Instant>, Option<Instant>) {
        let inner = self.inner.lock().unwrap();
        (inner.asked_at, inner.result_at)
    }

    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.inner.lock().unwrap().results.clone()
    }

    /// How many model calls the agent made.
    pub fn calls(&self) -> usize {
        self.inner.lock().unwrap().requests.len()
    }
}

#[test]
fn the_prompt_names_the_commands_in_order() {
    assert_eq!(
        commands("please RUN[echo a > x] then RUN[ls \\] y]"),
        vec!["echo a > x".to_owned(), "ls ] y".to_owned()]
    );
    assert_eq!(
        next_step("RUN[a]", 0),
        Step::Run {
            n: 0,
            command: "a".into()
        }
    );
    assert_eq!(next_step("RUN[a]", 1), Step::Say("DONE".into()));
    assert!(commands("nothing here").is_empty());
}
