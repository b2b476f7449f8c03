//! Startup recovery: turns that were running when the process died are closed honestly.
//!
//! A tool with `tool_started` but no `tool_result` is reported `interrupted` and never re-run;
//! calls that had not started are reported not run; the turn ends `failed` with a sentence
//! saying why. A gate still pending in such a turn is resolved `cancelled` by the system (its
//! card says so; a late answer gets 410). Resuming parked turns instead is the durable-gates
//! work.

use std::collections::HashSet;

use crate::protocol::{AnsweredBy, Decision, Event, EventBody, Resolution, ToolStatus, TurnStatus};
use crate::server::event_log::EventLog;
use crate::server::store::{Commit, GateChange, NewEvent, StoreError, now_rfc3339};

pub const INTERRUPTED_OUTPUT: &str = "the server stopped while this ran; it was not run again";
const NOT_STARTED_OUTPUT: &str = "the server stopped before this ran; it was not run";
const TURN_ERROR: &str = "the server stopped during this turn; send the message again to retry";

/// Closes every unfinished turn; returns how many were closed.
pub async fn close_unfinished_turns(log: &EventLog) -> Result<usize, StoreError> {
    let sessions = log.store().sessions_with_unfinished_turns().await?;
    for session_id in &sessions {
        for gate in log.store().pending_gates(Some(session_id)).await? {
            let resolution = Resolution {
                approval_id: gate.body.approval_id.clone(),
                decision: Decision::Cancelled,
                answered_by: AnsweredBy::System,
                resolved_at: now_rfc3339(),
                reason: Some("the server restarted while this waited".into()),
                edits: None,
                rule_id: None,
                client_id: None,
            };
            let event = NewEvent::new(
                Some(&gate.turn_id),
                EventBody::ApprovalResolved(resolution.clone()),
            );
            let commit = Commit {
                gate: Some(GateChange::Resolve {
                    resolution,
                    new_rule: None,
                }),
                ..Commit::default()
            };
            match log.commit(session_id, vec![event], commit, || ()).await {
                Ok(_) | Err(StoreError::AlreadyResolved(_)) => {}
                Err(other) => return Err(other),
            }
        }
        let events = log.all_events(session_id).await?;
        let closing = closing_events(&events);
        if !closing.is_empty() {
            log.append(session_id, closing, None).await?;
            tracing::info!(session = %session_id, "closed a turn left unfinished by a restart");
        }
    }
    Ok(sessions.len())
}

/// The events that close the last turn of `events`, if it is unfinished.
pub fn closing_events(events: &[Event]) -> Vec<NewEvent> {
    let Some(start) = events
        .iter()
        .rposition(|e| matches!(e.body, EventBody::UserMessage { .. }))
    else {
        return Vec::new();
    };
    let turn = &events[start..];
    if turn
        .iter()
        .any(|e| matches!(e.body, EventBody::TurnFinished { .. }))
    {
        return Vec::new();
    }
    let turn_id = events[start].turn_id.clone();
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut started = HashSet::new();
    let mut finished = HashSet::new();
    for event in turn {
        match &event.body {
            EventBody::ToolCall { call_id, tool, .. } => {
                calls.push((call_id.clone(), tool.clone()));
            }
            EventBody::ToolStarted { call_id } => {
                started.insert(call_id.clone());
            }
            EventBody::ToolResult { call_id, .. } => {
                finished.insert(call_id.clone());
            }
            _ => {}
        }
    }
    let mut closing: Vec<NewEvent> = calls
        .into_iter()
        .filter(|(call_id, _)| !finished.contains(call_id))
        .map(|(call_id, tool)| {
            let (status, output) = if started.contains(&call_id) {
                (ToolStatus::Interrupted, INTERRUPTED_OUTPUT)
            } else {
                (ToolStatus::Cancelled, NOT_STARTED_OUTPUT)
            };
            NewEvent {
                turn_id: turn_id.clone(),
                body: EventBody::ToolResult {
                    call_id,
                    tool,
                    status,
                    output: output.to_owned(),
                },
            }
        })
        .collect();
    closing.push(NewEvent {
        turn_id,
        body: EventBody::TurnFinished {
            status: TurnStatus::Failed,
            error: Some(TURN_ERROR.to_owned()),
        },
    });
    closing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Mode, ToolClass, Verdict};
    use serde_json::json;

    fn ev(seq: u64, body: EventBody) -> Event {
        Event {
            seq: Some(seq),
            at: "t".into(),
            turn_id: Some("turn".into()),
            body,
        }
    }

    fn call(id: &str) -> EventBody {
        EventBody::ToolCall {
            call_id: id.into(),
            tool: "shell".into(),
            args: json!({"command": "sleep 9"}),
            class: ToolClass::Exec,
            verdict: Verdict::Run,
            rule_id: None,
        }
    }

    #[test]
    fn started_tools_are_interrupted_and_unstarted_are_not_run() {
        let events = vec![
            ev(
                1,
                EventBody::UserMessage {
                    text: "x".into(),
                    approval_mode: Mode::Yolo,
                },
            ),
            ev(2, call("a")),
            ev(3, call("b")),
            ev(
                4,
                EventBody::ToolStarted {
                    call_id: "a".into(),
                },
            ),
        ];
        let closing = closing_events(&events);
        assert_eq!(closing.len(), 3);
        match &closing[0].body {
            EventBody::ToolResult {
                call_id, status, ..
            } => {
                assert_eq!(call_id, "a");
                assert_eq!(*status, ToolStatus::Interrupted);
            }
            other => panic!("{other:?}"),
        }
        match &closing[1].body {
            EventBody::ToolResult { status, .. } => assert_eq!(*status, ToolStatus::Cancelled),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            closing[2].body,
            EventBody::TurnFinished {
                status: TurnStatus::Failed,
                ..
            }
        ));
    }

    #[test]
    fn finished_turns_are_left_alone() {
        let events = vec![
            ev(
                1,
                EventBody::UserMessage {
                    text: "x".into(),
                    approval_mode: Mode::Ask,
                },
            ),
            ev(
                2,
                EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            ),
        ];
        assert!(closing_events(&events).is_empty());
        assert!(closing_events(&[]).is_empty());
    }
}
