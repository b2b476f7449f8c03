//! The reviewer never approves a command soon after it approved a file edit — any agent's: a
//! trusted `edit` and a trusted `exec` together would let an agent run what it wrote (`cargo
//! test` after a new test file, `npm test` after a new script) with no person having read
//! either, and an edit is read by whichever agent runs next in that folder (one agent plants
//! a test, another's routine `npm test` runs it; one token may hold two agents' names). Such
//! a command goes to the person, with the reason on the card.

use crate::protocol::{Answered, Timestamp, ToolClass};
use crate::server::store::review::PredictionRow;

/// How long after the reviewer approved an edit it approves no command.
pub const WINDOW_MS: i64 = 24 * 3600 * 1000;

/// What the card says when a command the reviewer would approve goes to the person for it.
pub const CONCERN: &str = "The reviewer approved file edits in the last 24 hours (by this or \
     another agent), and this command may run what they wrote: it is yours to answer.";

/// Whether the reviewer approved an edit, of any agent, at or after `since`, reading `rows`
/// (answered predictions, newest answer first, at most `limit` of them). When every row
/// read is inside the window and there may be more, the window's start was not seen: that
/// counts as an edit (the safe side).
pub fn wrote_since(rows: &[PredictionRow], since: &Timestamp, limit: usize) -> bool {
    let inside = |row: &&PredictionRow| {
        row.answered_at
            .as_ref()
            .is_some_and(|at| at.as_str() >= since.as_str())
    };
    let recent: Vec<&PredictionRow> = rows.iter().take_while(inside).collect();
    let unseen_start = recent.len() >= limit;
    unseen_start
        || recent
            .iter()
            .any(|row| row.class == ToolClass::Edit && row.answered == Some(Answered::Reviewer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Predicted;

    fn row(source: &str, class: ToolClass, answered: Answered, at: &str) -> PredictionRow {
        PredictionRow {
            approval_id: "a".into(),
            session_id: "s".into(),
            class,
            source: source.into(),
            reviewer: "history".into(),
            predicted: Predicted::Approve,
            reason: String::new(),
            predicted_at: Timestamp::from(at.to_owned()),
            answered: Some(answered),
            answered_at: Some(Timestamp::from(at.to_owned())),
            disagreed_at: None,
        }
    }

    const SINCE: &str = "2026-12-05T12:00:00.000Z";

    /// The edits the reviewer itself approved inside the window count, any agent's; a
    /// person's approval of an edit, an older one or a command do not; a window read to its
    /// limit counts as written.
    #[test]
    fn only_the_reviewers_own_recent_edits_hold_commands_back() {
        let since = Timestamp::from(SINCE.to_owned());
        let fresh = "2026-12-06T08:00:00.000Z";
        let old = "2026-12-05T11:59:59.999Z";
        let held = |rows: &[PredictionRow]| wrote_since(rows, &since, 100);
        for edit in ["codex", "claude-code", "countersign"] {
            let rows = [row(edit, ToolClass::Edit, Answered::Reviewer, fresh)];
            assert!(held(&rows), "{edit}'s edit");
        }
        assert!(!held(&[]));
        for other in [
            row("codex", ToolClass::Edit, Answered::Approved, fresh),
            row("codex", ToolClass::Exec, Answered::Reviewer, fresh),
            row("codex", ToolClass::Read, Answered::Reviewer, fresh),
        ] {
            assert!(!held(std::slice::from_ref(&other)), "{other:?}");
        }
        let older = [
            row("codex", ToolClass::Exec, Answered::Approved, fresh),
            row("codex", ToolClass::Edit, Answered::Reviewer, old),
        ];
        assert!(!held(&older), "an edit before the window");
        let full: Vec<PredictionRow> = (0..3)
            .map(|_| row("other", ToolClass::Read, Answered::Approved, fresh))
            .collect();
        assert!(wrote_since(&full, &since, 3), "the window's start unseen");
        assert!(!wrote_since(&full, &since, 4));
    }

    /// The third red-team pass: an edit is read by the next command of any agent in that
    /// folder — claude-code (edit trusted) plants code in `tests/`, and codex's routine `npm
    /// test` (exec trusted) runs it — and one token may hold two agents' names. So an edit
    /// the reviewer approved holds back every agent's commands.
    #[test]
    fn another_agents_unread_edit_holds_commands_too() {
        let since = Timestamp::from(SINCE.to_owned());
        let fresh = "2026-12-06T08:00:00.000Z";
        let rows = [row(
            "claude-code",
            ToolClass::Edit,
            Answered::Reviewer,
            fresh,
        )];
        assert!(wrote_since(&rows, &since, 100));
    }
}
