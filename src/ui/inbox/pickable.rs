//! Which Inbox cards the bulk bar may answer, and why it leaves the others. A bulk answer is
//! given from the lines alone, so it may only reach a card whose line is the whole of what it
//! does; every place that asks (the bar's count, its targets, the row's tick box, the "Left for
//! you" line) asks [`left_reason`].

use crate::protocol::{ApprovalRequestBody, GateKind, GateReason, ToolClass};
use crate::shown;

/// The longest summary a row shows whole (`row.rs` cuts longer ones).
pub const WHOLE_SUMMARY_CHARS: usize = 400;

/// Why the bulk bar leaves a card for the person to answer on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftReason {
    /// A safety-floor card: always answered one by one, on its own buttons.
    Sensitive,
    /// Its line is not all it does (a file's content or diff, a proposal, a setting, a cut
    /// summary): the person opens it and reads it before answering.
    ReadInFull,
}

impl LeftReason {
    /// Why a card was left, for a card the bar did leave: a floor card is sensitive, any other
    /// is one to read in full.
    pub fn of(card: &ApprovalRequestBody) -> LeftReason {
        if card.reason == GateReason::SafetyFloor {
            LeftReason::Sensitive
        } else {
            LeftReason::ReadInFull
        }
    }

    /// The reason in a person's words: `sensitive`, `to read in full`.
    pub fn words(self) -> &'static str {
        match self {
            LeftReason::Sensitive => "sensitive",
            LeftReason::ReadInFull => "to read in full",
        }
    }

    /// The reason as a test hook (`data-left-reason`): `sensitive`, `read_in_full`.
    pub fn key(self) -> &'static str {
        match self {
            LeftReason::Sensitive => "sensitive",
            LeftReason::ReadInFull => "read_in_full",
        }
    }

    /// The row's tooltip where its tick box would be.
    pub fn tooltip(self) -> &'static str {
        match self {
            LeftReason::Sensitive => "Sensitive: answer it on its own",
            LeftReason::ReadInFull => "Open it and read it in full to answer it",
        }
    }
}

/// Why the bulk bar may not answer `card`, or `None` when it may.
///
/// The bar approves what the lines show, so a card is pickable only when its line *is* the
/// call: not a safety-floor card; a command, a read or a fetch (`exec`, `read`, `network`),
/// whose line is the call itself, from the agent or an outside one; no diff and no proposal
/// (which the line never shows); and a summary the line shows whole (a cut could hide the end
/// of a command: `echo … ; rm -rf ~`). A file write shows only its path on the line, a
/// decision or plan its title, a setting its key: approving those from the line would approve
/// content the person never saw. A routed card (issue 41) is opened too: it says who may
/// answer it and who approved it so far.
pub fn left_reason(card: &ApprovalRequestBody) -> Option<LeftReason> {
    let line_is_the_call = matches!(card.kind, GateKind::Tool | GateKind::External)
        && matches!(
            card.class,
            ToolClass::Exec | ToolClass::Read | ToolClass::Network
        )
        && card.decision_kind.is_none()
        && card.diff.is_none()
        && card.proposal_md.trim().is_empty()
        && card.route.is_none()
        && line_shows_whole(&card.summary);
    if card.reason == GateReason::SafetyFloor || !line_is_the_call {
        Some(LeftReason::of(card))
    } else {
        None
    }
}

/// Whether the bulk bar may answer `card`: [`left_reason`] has none.
pub fn can_pick(card: &ApprovalRequestBody) -> bool {
    left_reason(card).is_none()
}

/// Whether the row's line shows `summary` uncut (as `row.rs` shows it).
fn line_shows_whole(summary: &str) -> bool {
    shown::line_within(summary, WHOLE_SUMMARY_CHARS) == shown::line(summary)
}

/// How many of `cards` the bar leaves, by reason: (sensitive, to read in full).
pub fn left_counts<'a>(cards: impl IntoIterator<Item = &'a ApprovalRequestBody>) -> (usize, usize) {
    cards
        .into_iter()
        .filter_map(left_reason)
        .fold((0, 0), |(sensitive, to_read), reason| match reason {
            LeftReason::Sensitive => (sensitive + 1, to_read),
            LeftReason::ReadInFull => (sensitive, to_read + 1),
        })
}

/// The bar's note on what it leaves: `1 sensitive, 2 to read in full: answer them yourself`;
/// `None` when it leaves nothing.
pub fn left_note(sensitive: usize, to_read: usize) -> Option<String> {
    let parts: Vec<String> = [
        (sensitive, LeftReason::Sensitive),
        (to_read, LeftReason::ReadInFull),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, reason)| format!("{n} {}", reason.words()))
    .collect();
    let pronoun = if sensitive + to_read == 1 {
        "it"
    } else {
        "them"
    };
    (!parts.is_empty()).then(|| format!("{}: answer {pronoun} yourself", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DecisionKind;

    /// A card of `class` with `summary`, asked by the agent's mode.
    fn card(id: &str, class: &str, summary: &str) -> ApprovalRequestBody {
        serde_json::from_value(serde_json::json!({
            "approval_id": id, "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "t", "class": class, "args": {}, "title": "T", "summary": summary,
            "proposal_md": "", "proposal_html": "", "reason": "mode", "reason_detail": "",
            "allowed_decisions": ["approve"], "digest": "d", "timeout_outcome": "deny",
            "created_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T00:30:00.000Z"
        }))
        .unwrap()
    }

    #[test]
    fn a_command_a_read_and_a_fetch_are_pickable() {
        assert!(can_pick(&card("a", "exec", "shell: echo one")));
        assert!(can_pick(&card("b", "read", "read_file notes.md")));
        assert!(can_pick(&card(
            "c",
            "network",
            "WebFetch https://example.com"
        )));
        let mut outside = card("d", "exec", "Bash: ls");
        outside.kind = GateKind::External;
        assert!(can_pick(&outside));
    }

    #[test]
    fn a_card_whose_line_is_not_all_it_does_is_to_read_in_full() {
        let read_in_full = Some(LeftReason::ReadInFull);
        assert_eq!(
            left_reason(&card("w", "edit", "write_file list-1.txt")),
            read_in_full
        );
        assert_eq!(
            left_reason(&card("c", "config", "config_set ui.theme")),
            read_in_full
        );
        assert_eq!(
            left_reason(&card("q", "decision", "Which way?")),
            read_in_full
        );
        // Whatever its class says, a diff or a proposal is more than the line.
        let mut diffed = card("e", "exec", "edit_file a.rs");
        diffed.diff = Some("--- a.rs\n+++ a.rs\n".into());
        assert_eq!(left_reason(&diffed), read_in_full);
        let mut proposed = card("p", "exec", "shell: make");
        proposed.proposal_md = "Because the build is stale".into();
        assert_eq!(left_reason(&proposed), read_in_full);
        // A plan, a decision or a budget card is never answered from its title.
        for kind in [GateKind::Decision, GateKind::Budget] {
            let mut other = card("k", "exec", "Plan");
            other.kind = kind;
            assert_eq!(left_reason(&other), read_in_full);
        }
        let mut plan = card("pl", "exec", "Plan");
        plan.decision_kind = Some(DecisionKind::Plan);
        assert_eq!(left_reason(&plan), read_in_full);
    }

    /// A routed card is answered on its own card, which says who may answer it.
    #[test]
    fn a_routed_card_is_never_answered_in_bulk() {
        let mut routed = card("r", "exec", "shell: ls");
        assert!(can_pick(&routed));
        routed.route = Some(crate::protocol::CardRoute {
            approvers: vec![crate::protocol::Approver::Owner],
            quorum: 1,
            escalate_to: Vec::new(),
            escalate_at: None,
            owner: None,
            edit: None,
        });
        assert_eq!(left_reason(&routed), Some(LeftReason::ReadInFull));
    }

    #[test]
    fn a_floor_card_is_sensitive_whatever_its_class() {
        for class in ["exec", "edit"] {
            let mut floor = card("env", class, "Writes .env");
            floor.reason = GateReason::SafetyFloor;
            assert_eq!(left_reason(&floor), Some(LeftReason::Sensitive));
            assert_eq!(LeftReason::of(&floor), LeftReason::Sensitive);
        }
    }

    #[test]
    fn a_summary_the_line_cuts_is_to_read_in_full() {
        let long = format!("shell: echo {} ; rm -rf ~", "pad ".repeat(120));
        assert_eq!(
            left_reason(&card("l", "exec", &long)),
            Some(LeftReason::ReadInFull)
        );
        // Just within the line's length, a command is still whole.
        let whole = "x".repeat(WHOLE_SUMMARY_CHARS);
        assert!(can_pick(&card("x", "exec", &whole)));
    }

    #[test]
    fn the_note_counts_what_is_left_by_reason() {
        assert_eq!(left_note(0, 0), None);
        assert_eq!(
            left_note(1, 0).as_deref(),
            Some("1 sensitive: answer it yourself")
        );
        assert_eq!(
            left_note(0, 1).as_deref(),
            Some("1 to read in full: answer it yourself")
        );
        assert_eq!(
            left_note(1, 2).as_deref(),
            Some("1 sensitive, 2 to read in full: answer them yourself")
        );
        let mut env = card("env", "edit", "Writes .env");
        env.reason = GateReason::SafetyFloor;
        let cards = [
            card("a", "exec", "shell: ls"),
            card("w", "edit", "write_file a"),
            env,
        ];
        assert_eq!(left_counts(&cards), (1, 1));
    }
}
