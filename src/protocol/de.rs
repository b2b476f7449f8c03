//! `Deserialize` by hand for the wire types whose derive would be internally tagged or
//! flattened: [`Event`], [`EventBody`], [`ApprovalRequest`] and [`DecideOutcome`].
//!
//! For those, serde's derive buffers the object in its private `Content` tree and reads every
//! type inside from that: a second generic deserializer, instantiated for each of those types,
//! in the browser bundle. These impls read the object into a `serde_json::Map` (the bundle has
//! `Value` anyway) and take the fields out by name. The JSON does not change: serialization is
//! still derived, and these accept what the derives accepted (any key order, unknown keys
//! ignored, absent optional fields as `None`).

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error};
use serde_json::{Map, Value};

use super::{
    ApprovalRequest, ApprovalRequestBody, DecideOutcome, Event, EventBody, EventKind, Resolution,
};

type Object = Map<String, Value>;

/// A field the type requires.
fn required<T: DeserializeOwned, E: Error>(
    object: &mut Object,
    name: &'static str,
) -> Result<T, E> {
    match object.remove(name) {
        Some(value) => T::deserialize(value).map_err(E::custom),
        None => Err(E::missing_field(name)),
    }
}

/// An `Option` field (absent is `None`, as with the derive) or a `#[serde(default)]` one.
fn optional<T: DeserializeOwned + Default, E: Error>(
    object: &mut Object,
    name: &'static str,
) -> Result<T, E> {
    match object.remove(name) {
        Some(value) => T::deserialize(value).map_err(E::custom),
        None => Ok(T::default()),
    }
}

/// The rest of the object as one struct (what `#[serde(flatten)]` or a newtype variant held).
fn rest<T: DeserializeOwned, E: Error>(object: Object) -> Result<T, E> {
    T::deserialize(Value::Object(object)).map_err(E::custom)
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        Ok(Event {
            seq: optional(&mut object, "seq")?,
            at: required(&mut object, "at")?,
            turn_id: optional(&mut object, "turn_id")?,
            body: EventBody::from_object(object)?,
        })
    }
}

impl<'de> Deserialize<'de> for EventBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        EventBody::from_object(Object::deserialize(deserializer)?)
    }
}

impl EventBody {
    /// The body from an event object's fields, by its `type`. Matching on [`EventKind`] keeps
    /// this exhaustive: a new variant needs a new kind (`event_kind`), and then an arm here.
    fn from_object<E: Error>(mut object: Object) -> Result<Self, E> {
        let tag: String = required(&mut object, "type")?;
        let Some(kind) = EventKind::ALL.into_iter().find(|k| k.as_str() == tag) else {
            return Err(E::custom(format_args!("unknown event type `{tag}`")));
        };
        let o = &mut object;
        Ok(match kind {
            EventKind::UserMessage => EventBody::UserMessage {
                text: required(o, "text")?,
                approval_mode: required(o, "approval_mode")?,
            },
            EventKind::ModeChanged => EventBody::ModeChanged {
                previous: required(o, "previous")?,
                next: required(o, "next")?,
                source: required(o, "source")?,
                actor: optional(o, "actor")?,
            },
            EventKind::AssistantDelta => EventBody::AssistantDelta {
                text: required(o, "text")?,
            },
            EventKind::AssistantMessage => EventBody::AssistantMessage {
                text: required(o, "text")?,
                html: required(o, "html")?,
            },
            EventKind::ToolCall => EventBody::ToolCall {
                call_id: required(o, "call_id")?,
                tool: required(o, "tool")?,
                args: required(o, "args")?,
                class: required(o, "class")?,
                verdict: required(o, "verdict")?,
                rule_id: optional(o, "rule_id")?,
            },
            EventKind::ApprovalRequest => {
                EventBody::ApprovalRequest(Box::new(rest::<ApprovalRequestBody, E>(object)?))
            }
            EventKind::ApprovalResolved => {
                EventBody::ApprovalResolved(rest::<Resolution, E>(object)?)
            }
            EventKind::ToolStarted => EventBody::ToolStarted {
                call_id: required(o, "call_id")?,
            },
            EventKind::ToolResult => EventBody::ToolResult {
                call_id: required(o, "call_id")?,
                tool: required(o, "tool")?,
                status: required(o, "status")?,
                output: required(o, "output")?,
            },
            EventKind::TurnFinished => EventBody::TurnFinished {
                status: required(o, "status")?,
                error: optional(o, "error")?,
            },
        })
    }
}

impl<'de> Deserialize<'de> for ApprovalRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        Ok(ApprovalRequest {
            turn_id: required(&mut object, "turn_id")?,
            body: rest(object)?,
        })
    }
}

impl<'de> Deserialize<'de> for DecideOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        let outcome: String = required(&mut object, "outcome")?;
        let resolution = required(&mut object, "resolution")?;
        match outcome.as_str() {
            "decided" => Ok(DecideOutcome::Decided { resolution }),
            "lost" => Ok(DecideOutcome::Lost { resolution }),
            _ => Err(D::Error::unknown_variant(&outcome, &["decided", "lost"])),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{
        AnsweredBy, Decision, GateKind, GateReason, Mode, ModeSource, RuleSuggestion,
        TimeoutOutcome, Timestamp, ToolClass, ToolStatus, TurnStatus, Verdict,
    };

    fn request_body() -> ApprovalRequestBody {
        ApprovalRequestBody {
            approval_id: "a1".into(),
            session_id: "s1".into(),
            call_id: "c1".into(),
            kind: GateKind::Tool,
            tool: "write_file".into(),
            class: ToolClass::Edit,
            args: json!({"path": "notes.md", "content": "hello"}),
            decision_kind: None,
            title: "Write notes.md".into(),
            summary: "5 bytes".into(),
            proposal_md: "**hello**".into(),
            proposal_html: "<p><strong>hello</strong></p>".into(),
            diff: Some("+hello".into()),
            reason: GateReason::Mode,
            reason_detail: "Ask mode".into(),
            allowed_decisions: vec![Decision::Approve, Decision::Deny],
            digest: "d".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            expires_at: "2026-01-01T00:10:00Z".into(),
            timeout_outcome: TimeoutOutcome::Deny,
            suggested_rule: Some(RuleSuggestion {
                tool: "write_file".into(),
                pattern: "notes.md".into(),
                approved_before: 2,
            }),
            execution_mode: Some(Mode::AutoEdit),
        }
    }

    fn resolution() -> Resolution {
        let mut resolution = Resolution::plain(
            "a1",
            Decision::Edit,
            AnsweredBy::User,
            "browser",
            "2026-01-01T00:01:00Z".into(),
        );
        resolution.edits = Some(json!({"content": "bye"}));
        resolution.client_id = Some("tab".into());
        resolution
    }

    /// One body of every kind, with the optional fields set.
    fn bodies() -> Vec<EventBody> {
        let bodies = vec![
            EventBody::UserMessage {
                text: "hi".into(),
                approval_mode: Mode::Ask,
            },
            EventBody::ModeChanged {
                previous: Mode::Ask,
                next: Mode::Yolo,
                source: ModeSource::User,
                actor: Some("browser".into()),
            },
            EventBody::AssistantDelta { text: "h".into() },
            EventBody::AssistantMessage {
                text: "hi".into(),
                html: "<p>hi</p>".into(),
            },
            EventBody::ToolCall {
                call_id: "c1".into(),
                tool: "shell".into(),
                args: json!({"command": "ls", "n": [1, 2.5, null, true]}),
                class: ToolClass::Exec,
                verdict: Verdict::Ask,
                rule_id: Some("r1".into()),
            },
            EventBody::ApprovalRequest(Box::new(request_body())),
            EventBody::ApprovalResolved(resolution()),
            EventBody::ToolStarted {
                call_id: "c1".into(),
            },
            EventBody::ToolResult {
                call_id: "c1".into(),
                tool: "shell".into(),
                status: ToolStatus::Error,
                output: "exit 1".into(),
            },
            EventBody::TurnFinished {
                status: TurnStatus::Failed,
                error: Some("boom".into()),
            },
        ];
        let kinds: Vec<EventKind> = bodies.iter().map(EventBody::event_kind).collect();
        assert_eq!(kinds, EventKind::ALL, "one sample of every kind, in order");
        bodies
    }

    #[test]
    fn every_event_kind_reads_back_what_serialize_writes() {
        for body in bodies() {
            let event = Event {
                seq: Some(7),
                at: Timestamp::from("2026-01-01T00:00:00Z"),
                turn_id: Some("t1".into()),
                body,
            };
            let text = serde_json::to_string(&event).unwrap();
            let back: Event = serde_json::from_str(&text).unwrap();
            assert_eq!(back, event, "{text}");
            let back: Event = serde_json::from_slice(text.as_bytes()).unwrap();
            assert_eq!(back, event);
            let body: EventBody = serde_json::from_str(&text).unwrap();
            assert_eq!(body, event.body);
        }
    }

    #[test]
    fn key_order_unknown_keys_and_absent_options_are_as_with_the_derive() {
        let event: Event = serde_json::from_value(json!({
            "status": "completed",
            "extra": {"ignored": true},
            "at": "2026-01-01T00:00:00Z",
            "type": "turn_finished",
        }))
        .unwrap();
        assert_eq!(
            event,
            Event {
                seq: None,
                at: "2026-01-01T00:00:00Z".into(),
                turn_id: None,
                body: EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            }
        );
        // null is None too, and an old resolution without `actor` reads as an empty one.
        let event: Event = serde_json::from_value(json!({
            "type": "approval_resolved", "seq": null, "at": "t", "approval_id": "a",
            "decision": "deny", "answered_by": "timeout", "resolved_at": "t",
        }))
        .unwrap();
        let EventBody::ApprovalResolved(resolution) = &event.body else {
            panic!("not a resolution: {event:?}");
        };
        assert_eq!(resolution.actor, "");
        assert_eq!(event.seq, None);
    }

    #[test]
    fn bad_events_are_refused_with_the_reason() {
        let error = |value: Value| {
            serde_json::from_value::<Event>(value)
                .unwrap_err()
                .to_string()
        };
        assert!(
            error(json!({"type": "tool_started", "at": "t"})).contains("missing field `call_id`")
        );
        assert!(
            error(json!({"type": "tool_started", "call_id": "c"})).contains("missing field `at`")
        );
        assert!(error(json!({"at": "t", "call_id": "c"})).contains("missing field `type`"));
        assert!(error(json!({"type": "nope", "at": "t"})).contains("unknown event type `nope`"));
        assert!(
            error(
                json!({"type": "user_message", "at": "t", "text": "x", "approval_mode": "maybe"})
            )
            .contains("unknown variant `maybe`")
        );
        assert!(serde_json::from_str::<Event>("[1]").is_err());
    }

    #[test]
    fn approval_requests_keep_turn_id_beside_the_body() {
        let request = ApprovalRequest {
            turn_id: "t1".into(),
            body: request_body(),
        };
        let value = serde_json::to_value(&request).unwrap();
        assert_eq!(value["turn_id"], "t1");
        assert_eq!(value["approval_id"], "a1");
        let back: ApprovalRequest = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, request);
        let mut without = value;
        without.as_object_mut().unwrap().remove("turn_id");
        let error = serde_json::from_value::<ApprovalRequest>(without).unwrap_err();
        assert!(
            error.to_string().contains("missing field `turn_id`"),
            "{error}"
        );
    }

    #[test]
    fn decide_outcomes_read_back_by_their_tag() {
        for outcome in [
            DecideOutcome::Decided {
                resolution: resolution(),
            },
            DecideOutcome::Lost {
                resolution: resolution(),
            },
        ] {
            let text = serde_json::to_string(&outcome).unwrap();
            assert_eq!(
                serde_json::from_str::<DecideOutcome>(&text).unwrap(),
                outcome
            );
        }
        let error = serde_json::from_value::<DecideOutcome>(
            json!({"outcome": "maybe", "resolution": serde_json::to_value(resolution()).unwrap()}),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("unknown variant `maybe`"),
            "{error}"
        );
    }
}
