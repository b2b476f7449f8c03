//! What a turn needs from its session's past, folded from the log: the conversation for the
//! model, how many calls each suggested rule would have covered were approved by hand, where
//! the latest turn starts in the log (what a resumed turn finishes) and which of its calls
//! have started.
//!
//! **Why the latest turn is a seq, not its events:** a memo lives as long as its session is
//! live, e.g. while a turn waits on ten cards; holding the turn's events (cards with their
//! diffs) would copy each of them for that whole time. A resumed turn reads them from the log.
//!
//! **Why a fold:** reading and decoding the whole log at every turn start made a turn's start
//! grow with the session. A history is a memo of the fold up to `through_seq` (the hub keeps
//! one per live session) and only ever takes the events after it, which the append-only log
//! never changes; a dropped memo is rebuilt from the log.

use std::collections::HashMap;
use std::sync::Arc;

use super::{ChatMessage, ToolCallRequest, edited_result_text, tool_result_text};
use crate::protocol::{AnsweredBy, ApprovalId, CallId, Decision, Event, EventBody};

/// One session's history, as of `through_seq`.
#[derive(Debug, Default)]
pub struct SessionHistory {
    through_seq: u64,
    /// Shared with the turns that read it: handing the conversation to a turn copies pointers.
    messages: Vec<Arc<ChatMessage>>,
    /// Gates that carried a suggested rule and are not resolved yet: id → (tool, pattern).
    suggested: HashMap<ApprovalId, (String, String)>,
    /// (tool, pattern) → calls approved by hand whose card suggested that rule.
    hand_approved: HashMap<(String, String), u32>,
    /// The seq of the latest `user_message` (where the latest turn starts).
    current_turn_from: Option<u64>,
    /// The calls of the latest turn whose `tool_started` is in the log.
    started: std::collections::HashSet<CallId>,
    /// Gates not resolved yet: id → the call each is for (to name the call an answer is for).
    open_gates: HashMap<ApprovalId, CallId>,
    /// The person's answers the model must keep when old messages are cut, as the log records
    /// them (resolutions, never a tool's output): by call.
    answers: Answers,
    /// Calls a person edited that have no result yet: what each ran with, which its result
    /// tells the model (`edited_result_text`).
    edited: HashMap<CallId, serde_json::Value>,
}

/// The person's recorded answers, by the call each answered: what the context-trim marker
/// may say the person said (`fit`), and nothing else.
pub type Answers = HashMap<CallId, String>;

/// What a resolution tells the model the person said, when it must outlive a cut: a denial
/// and its reason, a card left unanswered, a checkpoint approved with changes. Only the
/// person's own words (a reason, a revised proposal) and fixed text, on one line.
fn recorded_answer(resolution: &crate::protocol::Resolution) -> Option<String> {
    let line = |text: &str| {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        flat[..flat.floor_char_boundary(400)].to_owned()
    };
    match (resolution.decision, resolution.answered_by) {
        (Decision::Deny, AnsweredBy::User) => Some(match resolution.reason.as_deref() {
            Some(reason) => line(&format!("denied: {reason}")),
            None => "denied (no reason given)".to_owned(),
        }),
        (Decision::Timeout, _) => Some("not answered in time: not approved".to_owned()),
        (Decision::Edit, AnsweredBy::User) => match resolution.edits.as_ref()? {
            serde_json::Value::String(revised) => {
                Some(line(&format!("approved with changes: {revised}")))
            }
            edits => Some(line(&format!("edited before it ran; it ran with: {edits}"))),
        },
        _ => None,
    }
}

/// The arguments a person's edit made a call run with (an edit of a question's text is not
/// one: the agent is told that in the question's result).
fn edited_args(resolution: &crate::protocol::Resolution) -> Option<&serde_json::Value> {
    resolution
        .edits
        .as_ref()
        .filter(|e| resolution.decision == Decision::Edit && e.is_object())
}

impl SessionHistory {
    /// Folds the session's events, oldest first.
    pub fn from_events(events: &[Event]) -> Self {
        let mut history = SessionHistory::default();
        events.iter().for_each(|e| history.apply(e));
        history
    }

    /// The conversation the model sees.
    pub fn messages(&self) -> &[Arc<ChatMessage>] {
        &self.messages
    }

    /// The person's answers as the log records them, by call.
    pub fn answers(&self) -> &Answers {
        &self.answers
    }

    /// How many calls approved by hand in this session had a card suggesting `tool`+`pattern`.
    pub fn approved_by_hand(&self, tool: &str, pattern: &str) -> u32 {
        self.hand_approved
            .get(&(tool.to_owned(), pattern.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// The seq of the latest turn's `user_message` (none before the first message).
    pub fn current_turn_from(&self) -> Option<u64> {
        self.current_turn_from
    }

    /// Whether the latest turn's call `call_id` has its `tool_started` in the log.
    pub fn started(&self, call_id: &CallId) -> bool {
        self.started.contains(call_id)
    }

    /// The last seq folded in.
    pub fn through_seq(&self) -> u64 {
        self.through_seq
    }

    /// Folds one more event (the next after `through_seq`).
    pub fn apply(&mut self, event: &Event) {
        if let Some(seq) = event.seq {
            self.through_seq = self.through_seq.max(seq);
        }
        match &event.body {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if self.edited.contains_key(call_id) => {
                let ran_with = self.edited.remove(call_id).unwrap_or_default();
                self.messages.push(Arc::new(ChatMessage::Tool {
                    call_id: call_id.clone(),
                    output: edited_result_text(&ran_with, *status, output),
                }));
            }
            body => add_to_conversation(&mut self.messages, body),
        }
        match &event.body {
            EventBody::UserMessage { .. } => {
                self.current_turn_from = event.seq;
                self.started.clear();
            }
            EventBody::ToolStarted { call_id } => {
                self.started.insert(call_id.clone());
            }
            EventBody::ApprovalRequest(gate) => {
                self.open_gates
                    .insert(gate.approval_id.clone(), gate.call_id.clone());
                if let Some(rule) = &gate.suggested_rule {
                    self.suggested.insert(
                        gate.approval_id.clone(),
                        (rule.tool.clone(), rule.pattern.clone()),
                    );
                }
            }
            EventBody::ApprovalResolved(resolution) => {
                if let Some(call) = self.open_gates.remove(&resolution.approval_id) {
                    if let Some(ran_with) = edited_args(resolution) {
                        self.edited.insert(call.clone(), ran_with.clone());
                    }
                    if let Some(answer) = recorded_answer(resolution) {
                        self.answers.insert(call, answer);
                    }
                }
                let by_hand = resolution.answered_by == AnsweredBy::User
                    && matches!(resolution.decision, Decision::Approve | Decision::Edit);
                if let Some(key) = self.suggested.remove(&resolution.approval_id)
                    && by_hand
                {
                    *self.hand_approved.entry(key).or_insert(0) += 1;
                }
            }
            _ => {}
        }
    }
}

/// Adds what one event says to the model's conversation: user messages, assistant text with
/// the tool calls it made, and tool results. The outcome of a gate reaches the model as its
/// tool result, so gates, modes, deltas and turn markers add nothing.
pub fn add_to_conversation(messages: &mut Vec<Arc<ChatMessage>>, body: &EventBody) {
    match body {
        EventBody::UserMessage { text, .. } => {
            messages.push(Arc::new(ChatMessage::User(text.clone())))
        }
        EventBody::AssistantMessage { text, .. } => {
            messages.push(Arc::new(ChatMessage::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
            }))
        }
        EventBody::ToolCall {
            call_id,
            tool,
            args,
            ..
        } => {
            let call = ToolCallRequest {
                id: call_id.clone(),
                name: tool.clone(),
                args: args.clone(),
            };
            // Copy-on-write: a turn holding the previous version keeps it unchanged.
            match messages.last_mut().map(Arc::make_mut) {
                Some(ChatMessage::Assistant { tool_calls, .. }) => tool_calls.push(call),
                _ => messages.push(Arc::new(ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![call],
                })),
            }
        }
        EventBody::ToolResult {
            call_id,
            status,
            output,
            ..
        } => messages.push(Arc::new(ChatMessage::Tool {
            call_id: call_id.clone(),
            output: tool_result_text(*status, output),
        })),
        EventBody::ApprovalRequest(_)
        | EventBody::ApprovalResolved(_)
        | EventBody::ModeChanged { .. }
        | EventBody::AssistantDelta { .. }
        | EventBody::ToolStarted { .. }
        | EventBody::TurnFinished { .. } => {}
        // The reviewer's concern is the person's to read, never the agent's.
        EventBody::ReviewConcern { .. } => {}
        // Who approved a card, and whom it went to, are the people's business.
        EventBody::ApprovalGiven { .. } | EventBody::ApprovalEscalated { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Mode;

    fn ev(seq: u64, body: EventBody) -> Event {
        Event {
            seq: Some(seq),
            at: "t".into(),
            turn_id: None,
            body,
        }
    }

    fn user(seq: u64, text: &str) -> Event {
        ev(
            seq,
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )
    }

    #[test]
    fn folding_in_pieces_equals_folding_at_once() {
        let events = vec![
            user(1, "a"),
            ev(
                2,
                EventBody::AssistantMessage {
                    text: "x".into(),
                    html: String::new(),
                },
            ),
            user(3, "b"),
        ];
        let whole = SessionHistory::from_events(&events);
        let mut pieces = SessionHistory::from_events(&events[..1]);
        events[1..].iter().for_each(|e| pieces.apply(e));
        assert_eq!(whole.messages(), pieces.messages());
        assert_eq!(whole.messages().len(), 3);
        assert_eq!(pieces.through_seq, 3);
        // The current turn starts at the latest user message.
        assert_eq!(pieces.current_turn_from(), Some(3));
    }

    #[test]
    fn nothing_is_a_current_turn_before_the_first_message() {
        let history = SessionHistory::from_events(&[ev(
            1,
            EventBody::ModeChanged {
                previous: Mode::Ask,
                next: Mode::Yolo,
                source: crate::protocol::ModeSource::User,
                actor: None,
            },
        )]);
        assert_eq!(history.current_turn_from(), None);
    }

    /// The person's answers come from resolutions in the log, by the call their gate was for:
    /// a denial with its reason, a timeout, a checkpoint's revised text; an approval, a rule's
    /// or a cancel is no answer to carry, and a resolution of no gate folded here is nothing.
    #[test]
    fn answers_are_the_logs_resolutions_by_call() {
        use crate::protocol::Resolution;
        use crate::server::store::conformance::gate;
        let resolved = |id: &str, decision, by, reason: Option<&str>, edits: Option<&str>| {
            let mut r = Resolution::plain(&id.into(), decision, by, "browser", Default::default());
            r.reason = reason.map(str::to_owned);
            r.edits = edits.map(|e| serde_json::json!(e));
            EventBody::ApprovalResolved(r)
        };
        let request = |id: &str, call: &str| {
            let mut g = gate("s", id);
            g.body.call_id = call.into();
            EventBody::ApprovalRequest(Box::new(g.body))
        };
        let events = vec![
            ev(1, request("a1", "c1")),
            ev(
                2,
                resolved(
                    "a1",
                    Decision::Deny,
                    AnsweredBy::User,
                    Some("not\n  prod"),
                    None,
                ),
            ),
            ev(3, request("a2", "c2")),
            ev(
                4,
                resolved("a2", Decision::Approve, AnsweredBy::User, None, None),
            ),
            ev(5, request("a3", "c3")),
            ev(
                6,
                resolved("a3", Decision::Timeout, AnsweredBy::Timeout, None, None),
            ),
            ev(7, request("a4", "c4")),
            ev(
                8,
                resolved(
                    "a4",
                    Decision::Edit,
                    AnsweredBy::User,
                    None,
                    Some("staging only"),
                ),
            ),
            ev(
                9,
                resolved("unknown", Decision::Deny, AnsweredBy::User, Some("x"), None),
            ),
        ];
        let history = SessionHistory::from_events(&events);
        let answers = history.answers();
        assert_eq!(
            answers.get(&CallId::from("c1")).map(String::as_str),
            Some("denied: not prod")
        );
        assert_eq!(answers.get(&CallId::from("c2")), None);
        assert!(
            answers
                .get(&CallId::from("c3"))
                .is_some_and(|a| a.contains("not answered"))
        );
        assert_eq!(
            answers.get(&CallId::from("c4")).map(String::as_str),
            Some("approved with changes: staging only")
        );
        assert_eq!(answers.len(), 3);
    }

    /// A call a person edited: its result tells the model what ran (the call itself stays as
    /// the model made it), and only that call's.
    #[test]
    fn an_edited_calls_result_says_what_ran() {
        use crate::protocol::{Resolution, ToolClass, ToolStatus, Verdict};
        use crate::server::store::conformance::gate;
        let call = |id: &str| EventBody::ToolCall {
            call_id: id.into(),
            tool: "shell".into(),
            args: serde_json::json!({"command": "echo proposed"}),
            class: ToolClass::Exec,
            verdict: Verdict::Ask,
            rule_id: None,
            rule_pattern: None,
        };
        let request = |id: &str, call: &str| {
            let mut g = gate("s", id);
            g.body.call_id = call.into();
            EventBody::ApprovalRequest(Box::new(g.body))
        };
        let mut edit = Resolution::plain(
            &"a1".into(),
            Decision::Edit,
            AnsweredBy::User,
            "browser",
            Default::default(),
        );
        edit.edits = Some(serde_json::json!({"command": "echo edited"}));
        let approve = Resolution::plain(
            &"a2".into(),
            Decision::Approve,
            AnsweredBy::User,
            "browser",
            Default::default(),
        );
        let result = |id: &str| EventBody::ToolResult {
            call_id: id.into(),
            tool: "shell".into(),
            status: ToolStatus::Ok,
            output: "done".into(),
        };
        let bodies = vec![
            call("c1"),
            request("a1", "c1"),
            call("c2"),
            request("a2", "c2"),
            EventBody::ApprovalResolved(edit),
            EventBody::ApprovalResolved(approve),
            result("c1"),
            result("c2"),
        ];
        let events: Vec<Event> = bodies
            .into_iter()
            .zip(1..)
            .map(|(b, seq)| ev(seq, b))
            .collect();
        let history = SessionHistory::from_events(&events);
        let outputs: Vec<&str> = history
            .messages()
            .iter()
            .filter_map(|m| match &**m {
                ChatMessage::Tool { output, .. } => Some(output.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(outputs.len(), 2);
        let (ran, rest) = crate::server::conversation::ran_with(outputs[0]).expect("edited");
        assert_eq!(ran, serde_json::json!({"command": "echo edited"}));
        assert_eq!(rest, "done");
        assert_eq!(outputs[1], "done");
        assert_eq!(
            history
                .answers()
                .get(&CallId::from("c1"))
                .map(String::as_str),
            Some(r#"edited before it ran; it ran with: {"command":"echo edited"}"#)
        );
    }
}
