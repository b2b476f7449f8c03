//! `Deserialize` by hand for the wire types whose derive would be internally tagged or
//! flattened: [`Event`], [`EventBody`], [`ApprovalRequest`] and [`DecideOutcome`].
//!
//! For those, serde's derive buffers the object in its private `Content` tree and reads every
//! type inside from that: a second generic deserializer, instantiated for each of those types,
//! in the browser bundle. These impls read the object's fields (names, values as `Value`, which
//! the bundle has anyway) and take them out by name. The JSON does not change: serialization is
//! still derived, and these accept what the derives accepted (any key order, unknown keys
//! ignored, absent optional fields as `None`).

use std::borrow::Cow;
use std::fmt;

use serde::de::value::MapDeserializer;
use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error, MapAccess, Visitor};
use serde_json::Value;

use super::{
    ApprovalRequest, ApprovalRequestBody, DecideOutcome, Event, EventBody, EventKind, Resolution,
};

/// For a field a newer peer may fill in a shape this build cannot read: such a value reads as
/// absent instead of failing the whole answer (what the field is for says whether absent is
/// safe; see `GateState::rule`).
pub(super) fn or_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(value.and_then(|v| T::deserialize(v).ok()))
}

/// For a field where `null` says what leaving it out says (the default).
pub(super) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// An object's fields in their order: names borrowed from the input where it allows, values as
/// `Value`. (A `serde_json::Map` would allocate and hash every name: decoding took half again
/// as long as the derive; this takes about as long.)
struct Object<'de>(Vec<(Cow<'de, str>, Value)>);

impl<'de> Object<'de> {
    fn take(&mut self, name: &str) -> Option<Value> {
        let at = self.0.iter().position(|(key, _)| key == name)?;
        Some(self.0.swap_remove(at).1)
    }

    /// A field the type requires.
    fn required<T: DeserializeOwned, E: Error>(&mut self, name: &'static str) -> Result<T, E> {
        match self.take(name) {
            Some(value) => T::deserialize(value).map_err(E::custom),
            None => Err(E::missing_field(name)),
        }
    }

    /// An `Option` field (absent is `None`, as with the derive) or a `#[serde(default)]` one.
    fn optional<T: DeserializeOwned + Default, E: Error>(
        &mut self,
        name: &'static str,
    ) -> Result<T, E> {
        match self.take(name) {
            Some(value) => T::deserialize(value).map_err(E::custom),
            None => Ok(T::default()),
        }
    }

    /// The remaining fields as one struct (what `#[serde(flatten)]` or a newtype variant held).
    fn rest<T: DeserializeOwned, E: Error>(self) -> Result<T, E> {
        let fields = MapDeserializer::<_, serde_json::Error>::new(self.0.into_iter());
        T::deserialize(fields).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Object<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(Name(name)) = map.next_key()? {
            fields.push((name, map.next_value()?));
        }
        Ok(Object(fields))
    }
}

/// A field name, borrowed when the input has it unescaped.
struct Name<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl<'de> Visitor<'de> for NameVisitor {
    type Value = Name<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E: Error>(self, name: &'de str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Borrowed(name)))
    }

    fn visit_str<E: Error>(self, name: &str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Owned(name.to_owned())))
    }

    fn visit_string<E: Error>(self, name: String) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Owned(name)))
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        Ok(Event {
            seq: object.optional("seq")?,
            at: object.required("at")?,
            turn_id: object.optional("turn_id")?,
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
    fn from_object<E: Error>(mut object: Object<'_>) -> Result<Self, E> {
        let tag: String = object.required("type")?;
        let Some(kind) = EventKind::ALL.into_iter().find(|k| k.as_str() == tag) else {
            return Err(E::custom(format_args!("unknown event type `{tag}`")));
        };
        let o = &mut object;
        Ok(match kind {
            EventKind::UserMessage => EventBody::UserMessage {
                text: o.required("text")?,
                approval_mode: o.required("approval_mode")?,
            },
            EventKind::ModeChanged => EventBody::ModeChanged {
                previous: o.required("previous")?,
                next: o.required("next")?,
                source: o.required("source")?,
                actor: o.optional("actor")?,
            },
            EventKind::AssistantDelta => EventBody::AssistantDelta {
                text: o.required("text")?,
            },
            EventKind::AssistantMessage => EventBody::AssistantMessage {
                text: o.required("text")?,
                html: o.required("html")?,
            },
            EventKind::ToolCall => EventBody::ToolCall {
                call_id: o.required("call_id")?,
                tool: o.required("tool")?,
                args: o.required("args")?,
                class: o.required("class")?,
                verdict: o.required("verdict")?,
                rule_id: o.optional("rule_id")?,
                rule_pattern: o.optional("rule_pattern")?,
            },
            EventKind::ApprovalRequest => {
                EventBody::ApprovalRequest(Box::new(object.rest::<ApprovalRequestBody, E>()?))
            }
            EventKind::ApprovalResolved => {
                EventBody::ApprovalResolved(object.rest::<Resolution, E>()?)
            }
            EventKind::ToolStarted => EventBody::ToolStarted {
                call_id: o.required("call_id")?,
            },
            EventKind::ToolResult => EventBody::ToolResult {
                call_id: o.required("call_id")?,
                tool: o.required("tool")?,
                status: o.required("status")?,
                output: o.required("output")?,
            },
            EventKind::TurnFinished => EventBody::TurnFinished {
                status: o.required("status")?,
                error: o.optional("error")?,
            },
            EventKind::ReviewConcern | EventKind::ApprovalGiven | EventKind::ApprovalEscalated => {
                EventBody::card_note(kind, o)?
            }
        })
    }

    /// What was said of a waiting card: the reviewer's concern, an approval toward its
    /// quorum, its escalation.
    fn card_note<E: Error>(kind: EventKind, o: &mut Object<'_>) -> Result<Self, E> {
        Ok(match kind {
            EventKind::ApprovalGiven => EventBody::ApprovalGiven {
                approval_id: o.required("approval_id")?,
                approval: o.required("approval")?,
                edit: o.optional("edit")?,
            },
            EventKind::ApprovalEscalated => EventBody::ApprovalEscalated {
                approval_id: o.required("approval_id")?,
                escalate_to: o.required("escalate_to")?,
            },
            _ => EventBody::ReviewConcern {
                approval_id: o.required("approval_id")?,
                reason: o.required("reason")?,
            },
        })
    }
}

impl<'de> Deserialize<'de> for ApprovalRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        Ok(ApprovalRequest {
            turn_id: object.required("turn_id")?,
            reviewer_concern: object.optional("reviewer_concern")?,
            route_state: object.optional("route_state")?,
            body: object.rest()?,
        })
    }
}

impl<'de> Deserialize<'de> for DecideOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Object::deserialize(deserializer)?;
        let outcome: String = object.required("outcome")?;
        match outcome.as_str() {
            "decided" => Ok(DecideOutcome::Decided {
                resolution: object.required("resolution")?,
            }),
            "lost" => Ok(DecideOutcome::Lost {
                resolution: object.required("resolution")?,
            }),
            "counted" => Ok(DecideOutcome::Counted {
                approval_id: object.required("approval_id")?,
                approvals: object.required("approvals")?,
                quorum: object.required("quorum")?,
            }),
            _ => Err(D::Error::unknown_variant(
                &outcome,
                &["decided", "lost", "counted"],
            )),
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
            route: None,
            cwd: None,
            source: None,
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
            agent_says: Some("I will write the notes".into()),
        }
    }

    fn resolution() -> Resolution {
        let mut resolution = Resolution::plain(
            &"a1".into(),
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
                rule_pattern: Some("ls *".into()),
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
            EventBody::ReviewConcern {
                approval_id: "a1".into(),
                reason: "npm publish never approved here".into(),
            },
            EventBody::ApprovalGiven {
                approval_id: "a1".into(),
                approval: crate::protocol::GivenApproval {
                    who: "alice@example.com".into(),
                    name: None,
                    at: "2026-01-01T00:00:00.000Z".into(),
                    digest: "d1".into(),
                },
                edit: None,
            },
            EventBody::ApprovalEscalated {
                approval_id: "a1".into(),
                escalate_to: vec![crate::protocol::Approver::Owner],
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
        // A name written with an escape cannot be borrowed from the input; it is read all the same.
        let event: Event =
            serde_json::from_str(r#"{"\u0074ype":"tool_started","at":"t","call_id":"c"}"#).unwrap();
        assert_eq!(
            event.body,
            EventBody::ToolStarted {
                call_id: "c".into()
            }
        );
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
            reviewer_concern: None,
            route_state: None,
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
