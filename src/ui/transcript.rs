//! Events → the items the transcript shows. Pure, so it renders the same on the server and in
//! the browser, and tests can check it without a DOM.

use serde_json::Value;

use crate::protocol::{
    ApprovalId, ApprovalRequestBody, CallId, Decision, Event, EventBody, Mode, Resolution,
    RouteState, ToolClass, ToolStatus, TurnStatus, Verdict,
};

#[derive(Clone, Debug, PartialEq)]
pub struct ToolItem {
    pub call_id: CallId,
    pub tool: String,
    pub args: Value,
    pub class: ToolClass,
    pub verdict: Verdict,
    /// When `tool_started` was recorded (RFC 3339), if it was.
    pub started_at: Option<crate::protocol::Timestamp>,
    pub result: Option<(ToolStatus, String)>,
    /// Set when a person edited the call before it ran: `args` are then the edited ones.
    pub edited: Option<Box<EditedCall>>,
    /// The standing rule that let it run without a card, as its pattern read then.
    pub rule_pattern: Option<String>,
    /// The cards this call was put to, oldest first: one row holds the call's card and what
    /// ran, so the call is told once. Usually one; a card closed because what it showed
    /// changed is followed by a fresh one.
    pub cards: Vec<GateItem>,
}

impl ToolItem {
    /// The card still waiting for an answer, if the call has one: nothing has run yet.
    pub fn waiting_card(&self) -> Option<&GateItem> {
        self.cards.last().filter(|g| g.resolution.is_none())
    }
}

/// A call a person edited: what the agent proposed, and the answer that changed it (who, and
/// the diff, `Resolution::edit_diff`).
#[derive(Clone, Debug, PartialEq)]
pub struct EditedCall {
    pub proposed: Value,
    pub resolution: Resolution,
}

/// An approval card: the request and, once there is one, its resolution.
#[derive(Clone, Debug, PartialEq)]
pub struct GateItem {
    pub request: ApprovalRequestBody,
    pub resolution: Option<Resolution>,
    /// The reviewer's concern, raised while the card waited (`review_concern`).
    pub reviewer_concern: Option<String>,
    /// A routed card's approvals so far and whether it escalated (`approval_given`,
    /// `approval_escalated`).
    pub route_state: RouteState,
}

impl GateItem {
    /// The card's part of a key: its id and its state.
    fn key_part(&self) -> String {
        format!(
            ":{}:{}:{}:{}{}{}",
            self.request.approval_id,
            self.request.digest,
            self.route_state.approvals.len(),
            if self.route_state.escalated {
                "escalated"
            } else {
                ""
            },
            if self.reviewer_concern.is_some() {
                ":concern"
            } else {
                ""
            },
            self.resolution
                .as_ref()
                .map(|r| r.decision.as_str())
                .unwrap_or("pending")
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Gate(Box<GateItem>),
    User {
        seq: u64,
        text: String,
        mode: Mode,
    },
    Assistant {
        seq: u64,
        html: String,
    },
    Tool(ToolItem),
    ModeChange {
        seq: u64,
        previous: Mode,
        next: Mode,
    },
    TurnEnd {
        seq: u64,
        status: TurnStatus,
        error: Option<String>,
    },
}

impl Item {
    /// Stable while the item's content is unchanged; changes when a tool gets its result, so
    /// the keyed list re-renders exactly that row.
    pub fn key(&self) -> String {
        match self {
            Item::User { seq, .. }
            | Item::Assistant { seq, .. }
            | Item::ModeChange { seq, .. }
            | Item::TurnEnd { seq, .. } => format!("e{seq}"),
            Item::Gate(g) => format!("g{}", g.key_part()),
            Item::Tool(t) => format!(
                "t{}:{}:{}:{}{}",
                t.call_id,
                t.edited.is_some(),
                t.started_at.is_some(),
                t.result.as_ref().map(|r| r.0.as_str()).unwrap_or("pending"),
                t.cards.iter().map(GateItem::key_part).collect::<String>()
            ),
        }
    }
}

/// Builds the transcript from the durable events, oldest first.
pub fn build(events: &[Event]) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::with_capacity(events.len());
    for event in events {
        apply(&mut items, event);
    }
    items
}

/// Adds one event to the transcript built so far: a new row, or a change to the row or card
/// it belongs to.
pub fn apply(items: &mut Vec<Item>, event: &Event) {
    let seq = event.seq.unwrap_or(0);
    match &event.body {
        EventBody::UserMessage {
            text,
            approval_mode,
        } => items.push(Item::User {
            seq,
            text: text.clone(),
            mode: *approval_mode,
        }),
        EventBody::AssistantMessage { html, .. } => items.push(Item::Assistant {
            seq,
            html: html.clone(),
        }),
        EventBody::ModeChanged { previous, next, .. } => items.push(Item::ModeChange {
            seq,
            previous: *previous,
            next: *next,
        }),
        EventBody::ToolCall { .. } => items.extend(tool_row(&event.body).map(Item::Tool)),
        EventBody::ToolStarted { call_id } => {
            if let Some(tool) = find_tool(items, call_id) {
                tool.started_at = Some(event.at.clone());
            }
        }
        EventBody::ToolResult {
            call_id,
            status,
            output,
            ..
        } => {
            if let Some(tool) = find_tool(items, call_id) {
                tool.result = Some((*status, output.clone()));
            }
        }
        EventBody::TurnFinished { status, error } => items.push(Item::TurnEnd {
            seq,
            status: *status,
            error: error.clone(),
        }),
        EventBody::ApprovalRequest(request) => add_card(items, request),
        EventBody::ApprovalResolved(resolution) => resolve_card(items, resolution),
        EventBody::ReviewConcern {
            approval_id,
            reason,
        } => add_concern(items, approval_id, reason),
        EventBody::ApprovalGiven { .. } | EventBody::ApprovalEscalated { .. } => {
            add_route_note(items, &event.body);
        }
        EventBody::AssistantDelta { .. } => {}
    }
}

/// A routed card's approval so far (an edit changes the card: the others see it, and approve
/// it as edited) or its escalation, on the card while it waits.
fn add_route_note(items: &mut [Item], body: &EventBody) {
    match body {
        EventBody::ApprovalGiven {
            approval_id,
            approval,
            edit,
        } => {
            if let Some(gate) = find_card(items, approval_id).filter(|g| g.resolution.is_none()) {
                gate.route_state.approvals.push(approval.clone());
                if let Some(edit) = edit {
                    edit.apply(&mut gate.request);
                }
            }
        }
        EventBody::ApprovalEscalated { approval_id, .. } => {
            if let Some(gate) = find_card(items, approval_id).filter(|g| g.resolution.is_none()) {
                gate.route_state.escalated = true;
            }
        }
        _ => {}
    }
}

/// A tool call's row, as the call was recorded (no result yet).
fn tool_row(body: &EventBody) -> Option<ToolItem> {
    let EventBody::ToolCall {
        call_id,
        tool,
        args,
        class,
        verdict,
        rule_pattern,
        ..
    } = body
    else {
        return None;
    };
    Some(ToolItem {
        call_id: call_id.clone(),
        tool: tool.clone(),
        args: args.clone(),
        class: *class,
        verdict: *verdict,
        started_at: None,
        result: None,
        edited: None,
        rule_pattern: rule_pattern.clone(),
        cards: Vec::new(),
    })
}

/// A card goes into its call's row (the call is told once, in the order the calls were
/// made); a card with no call on the page (an outside agent's, a budget stop) is a row of its
/// own.
fn add_card(items: &mut Vec<Item>, request: &ApprovalRequestBody) {
    let gate = GateItem {
        request: request.clone(),
        resolution: None,
        reviewer_concern: None,
        route_state: RouteState::default(),
    };
    match find_tool(items, &request.call_id) {
        Some(tool) => tool.cards.push(gate),
        None => items.push(Item::Gate(Box::new(gate))),
    }
}

/// A card's answer. What runs is the edited call: its row shows that, and says who changed it.
fn resolve_card(items: &mut [Item], resolution: &Resolution) {
    let Some(gate) = find_card(items, &resolution.approval_id) else {
        return;
    };
    gate.resolution = Some(resolution.clone());
    let edited_call = gate
        .request
        .kind
        .is_our_tool_call()
        .then(|| gate.request.call_id.clone());
    if let (Some(call_id), Some(edits)) = (edited_call, edited_args(resolution))
        && let Some(tool) = find_tool(items, &call_id)
    {
        let proposed = std::mem::replace(&mut tool.args, edits.clone());
        tool.edited = Some(Box::new(EditedCall {
            proposed,
            resolution: resolution.clone(),
        }));
    }
}

/// The reviewer's concern on a card that still waits (one already answered keeps its answer).
fn add_concern(items: &mut [Item], approval_id: &ApprovalId, reason: &str) {
    if let Some(gate) = find_card(items, approval_id).filter(|g| g.resolution.is_none()) {
        gate.reviewer_concern = Some(reason.to_owned());
    }
}

/// The card with this id: a row of its own, or in its call's row.
fn find_card<'a>(items: &'a mut [Item], id: &ApprovalId) -> Option<&'a mut GateItem> {
    items.iter_mut().rev().find_map(|item| match item {
        Item::Gate(g) if &g.request.approval_id == id => Some(&mut **g),
        Item::Tool(t) => t.cards.iter_mut().find(|g| &g.request.approval_id == id),
        _ => None,
    })
}

/// The arguments an edit replaced a call's with, if the answer was one.
pub fn edited_args(resolution: &Resolution) -> Option<&Value> {
    resolution
        .edits
        .as_ref()
        .filter(|e| resolution.decision == Decision::Edit && e.is_object())
}

fn find_tool<'a>(items: &'a mut [Item], call_id: &CallId) -> Option<&'a mut ToolItem> {
    items.iter_mut().rev().find_map(|item| match item {
        Item::Tool(t) if &t.call_id == call_id => Some(t),
        _ => None,
    })
}

/// The gates still waiting for an answer, in the page's order (a call's card sits in its
/// row, so a batch's cards are listed in the order of its calls, whatever order they were
/// asked or answered in).
pub fn pending_gates(items: &[Item]) -> Vec<ApprovalRequestBody> {
    items
        .iter()
        .flat_map(|item| match item {
            Item::Gate(g) => std::slice::from_ref(&**g),
            Item::Tool(t) => t.cards.as_slice(),
            _ => &[],
        })
        .filter(|g| g.resolution.is_none())
        .map(|g| g.request.clone())
        .collect()
}

/// One line saying what a tool call does: `write_file notes.md`, `shell: ls -la`.
pub fn summary(tool: &str, args: &Value) -> String {
    let field = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match tool {
        "shell" => format!("shell: {}", field("command")),
        // No quotation marks of the page's own around what the agent wrote (see `crate::shown`).
        "search" => format!("search: {}", field("pattern")),
        "list_files" => format!(
            "list_files {}",
            args.get("path").and_then(Value::as_str).unwrap_or(".")
        ),
        "request_approval" => format!("decision: {}", field("title")),
        "config_set" => format!("config_set {}", field("key")),
        "exit_plan" => "exit_plan".to_owned(),
        other => format!("{other} {}", field("path")).trim().to_owned(),
    }
}

/// How much of a tool's output its collapsed row shows.
const OUTCOME_CHARS: usize = 81;

/// The short outcome shown on a collapsed tool row: the first line of output with words, as
/// `crate::shown` writes a line (nothing in it raw), clipped.
pub fn outcome_line(output: &str) -> String {
    let first = output
        .lines()
        .find(|l| !crate::shown::line(l).is_empty())
        .unwrap_or("");
    crate::shown::line_within(first, OUTCOME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, body: EventBody) -> Event {
        Event {
            seq: Some(seq),
            at: format!("t{seq}").into(),
            turn_id: Some("turn".into()),
            body,
        }
    }

    #[test]
    fn tool_events_merge_into_one_row_whose_key_changes_with_its_state() {
        let events = vec![
            ev(
                1,
                EventBody::UserMessage {
                    text: "write a: x".into(),
                    approval_mode: Mode::Ask,
                },
            ),
            ev(
                2,
                EventBody::ToolCall {
                    call_id: "c".into(),
                    tool: "write_file".into(),
                    args: json!({"path": "a", "content": "x"}),
                    class: ToolClass::Edit,
                    verdict: Verdict::Run,
                    rule_id: None,
                    rule_pattern: None,
                },
            ),
        ];
        let before = build(&events);
        assert_eq!(before.len(), 2);
        let mut events = events;
        events.push(ev(
            3,
            EventBody::ToolStarted {
                call_id: "c".into(),
            },
        ));
        events.push(ev(
            4,
            EventBody::ToolResult {
                call_id: "c".into(),
                tool: "write_file".into(),
                status: ToolStatus::Ok,
                output: "wrote".into(),
            },
        ));
        let after = build(&events);
        assert_eq!(after.len(), 2);
        match &after[1] {
            Item::Tool(t) => {
                assert_eq!(t.started_at.as_ref().map(|t| t.as_str()), Some("t3"));
                assert_eq!(t.result, Some((ToolStatus::Ok, "wrote".into())));
            }
            other => panic!("{other:?}"),
        }
        assert_ne!(before[1].key(), after[1].key());
        assert_eq!(before[0].key(), after[0].key());
    }

    #[test]
    fn applying_events_one_by_one_builds_the_same_and_leaves_earlier_items_alone() {
        let events = vec![
            ev(
                1,
                EventBody::UserMessage {
                    text: "run: ls".into(),
                    approval_mode: Mode::Ask,
                },
            ),
            ev(
                2,
                EventBody::ToolCall {
                    call_id: "c".into(),
                    tool: "shell".into(),
                    args: json!({"command": "ls"}),
                    class: ToolClass::Exec,
                    verdict: Verdict::Run,
                    rule_id: None,
                    rule_pattern: None,
                },
            ),
            ev(
                3,
                EventBody::ToolStarted {
                    call_id: "c".into(),
                },
            ),
            ev(
                4,
                EventBody::ToolResult {
                    call_id: "c".into(),
                    tool: "shell".into(),
                    status: ToolStatus::Ok,
                    output: "a\nb".into(),
                },
            ),
            ev(
                5,
                EventBody::AssistantMessage {
                    text: "done".into(),
                    html: "<p>done</p>".into(),
                },
            ),
            ev(
                6,
                EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            ),
        ];
        let mut items = Vec::new();
        apply(&mut items, &events[0]);
        let first = items[0].clone();
        let Item::User { text, .. } = &items[0] else {
            panic!("{items:?}")
        };
        let first_text_at = text.as_ptr();
        let mut keys = vec![items[0].key()];
        for event in &events[1..] {
            apply(&mut items, event);
            keys.push(items[0].key());
        }
        assert_eq!(items, build(&events));
        // The first row is the one its own event made: same value, same key all along, and
        // the same text in memory (a rebuild would have copied it anew).
        assert_eq!(items[0], first);
        assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
        let Item::User { text, .. } = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(text.as_ptr(), first_text_at, "the first item was rebuilt");
    }

    #[test]
    fn an_edited_call_shows_the_edited_arguments_and_keeps_the_proposal() {
        let request: ApprovalRequestBody = serde_json::from_value(json!({
            "approval_id": "g", "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "shell", "class": "exec", "args": {"command": "rm -r build"},
            "title": "Run command", "summary": "shell: rm -r build", "reason": "mode",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve", "edit"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .unwrap();
        let mut resolution = Resolution::plain(
            &"g".into(),
            Decision::Edit,
            crate::protocol::AnsweredBy::User,
            "browser",
            "2026-01-01T00:01:00Z".into(),
        );
        resolution.edits = Some(json!({"command": "rm -r build/tmp"}));
        let call = EventBody::ToolCall {
            call_id: "c".into(),
            tool: "shell".into(),
            args: json!({"command": "rm -r build"}),
            class: ToolClass::Exec,
            verdict: Verdict::Ask,
            rule_id: None,
            rule_pattern: None,
        };
        let mut events = vec![
            ev(1, call),
            ev(2, EventBody::ApprovalRequest(Box::new(request))),
        ];
        let before = build(&events);
        events.push(ev(3, EventBody::ApprovalResolved(resolution.clone())));
        let after = build(&events);
        // One row: the call's card, then what ran.
        assert_eq!(after.len(), 1, "{after:?}");
        let Item::Tool(tool) = &after[0] else {
            panic!("{after:?}")
        };
        assert_eq!(tool.cards.len(), 1);
        assert_eq!(tool.cards[0].resolution.as_ref(), Some(&resolution));
        assert!(tool.waiting_card().is_none());
        assert_eq!(tool.args, json!({"command": "rm -r build/tmp"}));
        assert_eq!(summary(&tool.tool, &tool.args), "shell: rm -r build/tmp");
        let edited = tool.edited.as_ref().expect("marked as edited");
        assert_eq!(edited.proposed, json!({"command": "rm -r build"}));
        assert_eq!(edited.resolution.actor, "browser");
        assert_ne!(before[0].key(), after[0].key(), "the row re-renders");

        // A plain approval leaves the row as proposed, unmarked.
        resolution.decision = Decision::Approve;
        resolution.edits = None;
        events[2] = ev(3, EventBody::ApprovalResolved(resolution));
        let Item::Tool(tool) = &build(&events)[0] else {
            panic!()
        };
        assert_eq!(tool.args, json!({"command": "rm -r build"}));
        assert!(tool.edited.is_none());
    }

    fn card(approval_id: &str, call_id: &str, kind: &str) -> ApprovalRequestBody {
        serde_json::from_value(json!({
            "approval_id": approval_id, "session_id": "s", "call_id": call_id, "kind": kind,
            "tool": "shell", "class": "exec", "args": {"command": format!("echo {call_id}")},
            "title": "Run command", "summary": "shell", "reason": "mode",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve", "edit"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .unwrap()
    }

    fn shell_call(call_id: &str) -> EventBody {
        EventBody::ToolCall {
            call_id: call_id.into(),
            tool: "shell".into(),
            args: json!({"command": format!("echo {call_id}")}),
            class: ToolClass::Exec,
            verdict: Verdict::Ask,
            rule_id: None,
            rule_pattern: None,
        }
    }

    fn answered(approval_id: &str, decision: Decision) -> EventBody {
        let mut r = Resolution::plain(
            &approval_id.into(),
            decision,
            crate::protocol::AnsweredBy::User,
            "browser",
            "2026-01-01T00:01:00Z".into(),
        );
        if decision == Decision::Edit {
            r.edits = Some(json!({"command": "echo edited"}));
        }
        EventBody::ApprovalResolved(r)
    }

    fn result(call_id: &str) -> EventBody {
        EventBody::ToolResult {
            call_id: call_id.into(),
            tool: "shell".into(),
            status: ToolStatus::Ok,
            output: call_id.into(),
        }
    }

    /// A batch of three calls whose cards were answered last to first: one row per call, in
    /// the order the calls were made, each holding its own card and result; the edited one
    /// marked once.
    #[test]
    fn a_batch_answered_out_of_order_keeps_one_row_per_call_in_call_order() {
        let bodies = vec![
            shell_call("c1"),
            EventBody::ApprovalRequest(Box::new(card("g1", "c1", "tool"))),
            shell_call("c2"),
            EventBody::ApprovalRequest(Box::new(card("g2", "c2", "tool"))),
            shell_call("c3"),
            EventBody::ApprovalRequest(Box::new(card("g3", "c3", "tool"))),
            answered("g3", Decision::Approve),
            EventBody::ToolStarted {
                call_id: "c3".into(),
            },
            result("c3"),
            answered("g1", Decision::Edit),
            result("c1"),
            answered("g2", Decision::Deny),
            EventBody::ToolResult {
                call_id: "c2".into(),
                tool: "shell".into(),
                status: ToolStatus::Denied,
                output: "denied".into(),
            },
        ];
        let events: Vec<Event> = bodies
            .into_iter()
            .zip(1..)
            .map(|(b, seq)| ev(seq, b))
            .collect();
        // While all three wait, the waiting cards are listed in call order.
        let waiting: Vec<String> = pending_gates(&build(&events[..6]))
            .iter()
            .map(|g| g.approval_id.to_string())
            .collect();
        assert_eq!(waiting, ["g1", "g2", "g3"]);
        let items = build(&events);
        let rows: Vec<(&str, &str, Option<&str>, bool)> = items
            .iter()
            .map(|item| match item {
                Item::Tool(t) => (
                    t.call_id.as_str(),
                    t.cards[0].request.approval_id.as_str(),
                    t.result.as_ref().map(|r| r.0.as_str()),
                    t.edited.is_some(),
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("c1", "g1", Some("ok"), true),
                ("c2", "g2", Some("denied"), false),
                ("c3", "g3", Some("ok"), false),
            ]
        );
        assert!(pending_gates(&items).is_empty());
        // Built one event at a time (the live feed) it is the same.
        let mut live = Vec::new();
        events.iter().for_each(|e| apply(&mut live, e));
        assert_eq!(live, items);
    }

    /// A question the agent asked (`request_approval`) is a call too: its card and its result
    /// share one row, as a tool call's do; a card with no call on the page stands alone.
    #[test]
    fn a_question_shares_its_calls_row_and_a_card_without_a_call_stands_alone() {
        let events = vec![
            ev(1, shell_call("q")),
            ev(
                2,
                EventBody::ApprovalRequest(Box::new(card("gq", "q", "decision"))),
            ),
            ev(
                3,
                EventBody::ApprovalRequest(Box::new(card("gx", "elsewhere", "external"))),
            ),
        ];
        let items = build(&events);
        assert_eq!(items.len(), 2, "{items:?}");
        let Item::Tool(row) = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(
            row.waiting_card().map(|g| g.request.approval_id.as_str()),
            Some("gq")
        );
        assert!(matches!(&items[1], Item::Gate(g) if g.request.approval_id.as_str() == "gx"));
    }

    /// The reviewer's concern lands on its waiting card (and changes its key, so the card is
    /// drawn again); one that comes after the answer changes nothing.
    #[test]
    fn a_concern_marks_only_a_waiting_card() {
        let concern = |id: &str| EventBody::ReviewConcern {
            approval_id: id.into(),
            reason: "npm publish never approved here".into(),
        };
        let mut events = vec![
            ev(1, shell_call("c1")),
            ev(
                2,
                EventBody::ApprovalRequest(Box::new(card("g1", "c1", "tool"))),
            ),
        ];
        let before = build(&events)[0].key();
        events.push(ev(3, concern("g1")));
        let items = build(&events);
        let Item::Tool(tool) = &items[0] else {
            panic!()
        };
        assert_eq!(
            tool.cards[0].reviewer_concern.as_deref(),
            Some("npm publish never approved here")
        );
        assert_ne!(items[0].key(), before);
        let answered_first = vec![
            ev(1, shell_call("c1")),
            ev(
                2,
                EventBody::ApprovalRequest(Box::new(card("g1", "c1", "tool"))),
            ),
            ev(3, answered("g1", Decision::Approve)),
            ev(4, concern("g1")),
        ];
        let items = build(&answered_first);
        let Item::Tool(tool) = &items[0] else {
            panic!()
        };
        assert_eq!(tool.cards[0].reviewer_concern, None);
    }

    #[test]
    fn summaries_name_what_happens() {
        assert_eq!(
            summary("write_file", &json!({"path": "notes.md"})),
            "write_file notes.md"
        );
        assert_eq!(
            summary("shell", &json!({"command": "ls -la"})),
            "shell: ls -la"
        );
        assert_eq!(outcome_line("\n first line \nsecond"), "first line");
        // A tool's output is the agent's to shape: nothing in the row's line is raw, padding
        // cannot hide the rest, and a line of nothing but hidden characters is shown.
        assert_eq!(
            outcome_line("ok \u{2067}\u{2066}done\u{2069}\u{2069}❞ Countersign: safe"),
            "ok ⟨U+2067⟩⟨U+2066⟩done⟨U+2069⟩⟨U+2069⟩⟨U+275E⟩ Countersign: safe"
        );
        assert_eq!(
            outcome_line(&format!("ok{}rm -rf ~", "\u{3000}".repeat(2))),
            "ok⟨U+3000⟩⟨U+3000⟩rm -rf ~"
        );
        assert_eq!(outcome_line("\u{200B}\nnext"), "⟨U+200B⟩");
        let long = outcome_line(&format!("{}\u{202E}tail", "a".repeat(78)));
        assert!(long.chars().count() <= 81 && long.ends_with('…'), "{long}");
        assert!(!long.contains('\u{202E}'), "{long}");
    }
}
