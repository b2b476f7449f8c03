//! The person's view of a pending floor write: what it would change in the file as it is now.
//!
//! A floor card never carries what the file holds (invariant 40: its content would be copied
//! into the log, which every `read` token — an outside agent's too — reads, and masking is
//! best-effort; a digest over it could be guessed back). So the diff is made here, on demand,
//! for an admin credential (the person at the console) while the card waits: the file is read
//! through `tools::read_floor_file_for_person`, off the async workers, and the diff masked on
//! both sides before it leaves. Its content is never logged; the audit records that the file
//! was viewed (who, which card, which path), never what it holds.

use serde_json::{Value, json};

use super::{Core, Error};
use crate::protocol::{
    ApprovalId, ApprovalRequestBody, FloorDiff, GateKind, GateReason, SessionId,
};
use crate::server::audit::AuditDraft;
use crate::server::principal::Principal;
use crate::server::tools::{self, PersonRead, ToolError};
use crate::shown::secrets;

/// The largest file the person's view reads; above it the view says it is too large.
pub const MAX_FLOOR_VIEW_BYTES: u64 = 256 * 1024;

/// The audit action of a person viewing a floor file (subject: the card's approval id).
pub const FLOOR_FILE_VIEWED: &str = "floor_file_viewed";

/// What a floor write would leave in the file, given what it holds now.
enum Change {
    Write { content: String },
    Edit { old: String, new: String },
}

impl Change {
    /// The file after the call, or `None` when an edit's text is not in it.
    fn applied_to(&self, before: &str) -> Option<String> {
        match self {
            Change::Write { content } => Some(content.clone()),
            Change::Edit { old, new } => (!old.is_empty() && before.contains(old.as_str()))
                .then(|| before.replacen(old.as_str(), new, 1)),
        }
    }
}

/// The path and change of a card this view is for: a built-in agent's floor write or edit.
fn floor_change(body: &ApprovalRequestBody) -> Option<(String, Change)> {
    if body.kind != GateKind::Tool || body.reason != GateReason::SafetyFloor {
        return None;
    }
    let text = |name: &str| {
        body.args
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let change = match body.tool.as_str() {
        "write_file" => Change::Write {
            content: text("content")?,
        },
        "edit_file" => Change::Edit {
            old: text("old")?,
            new: text("new")?,
        },
        _ => return None,
    };
    Some((text("path")?, change))
}

/// The masked view of `change` against what the file holds now.
fn view_of(shown: &str, now: PersonRead, change: &Change) -> FloorDiff {
    let applicable = true;
    match now {
        PersonRead::Absent => FloorDiff {
            applicable,
            ..FloorDiff::default()
        },
        PersonRead::TooLarge(_) => FloorDiff {
            applicable,
            exists: true,
            too_large: true,
            diff: None,
        },
        PersonRead::Text(before) => FloorDiff {
            applicable,
            exists: true,
            too_large: false,
            diff: change.applied_to(&before).map(|after| {
                let raw = tools::unified_diff(shown, &before, &after);
                secrets::mask_diff(&raw)
            }),
        },
    }
}

impl Core {
    /// What the pending floor write `approval_id` would change in its file, masked, for the
    /// person (the route and the server function ask an admin credential). A card that is
    /// not a pending floor write or edit of the built-in agent gets `applicable: false`.
    pub async fn floor_diff(
        &self,
        session: &SessionId,
        approval_id: &ApprovalId,
        who: &Principal,
    ) -> Result<FloorDiff, Error> {
        let Some(gate) = self.repos.gates.get_gate(session, approval_id).await? else {
            self.session_row(session).await?;
            return Err(Error::UnknownApproval(
                approval_id.as_str().chars().take(64).collect(),
            ));
        };
        if let Some(resolution) = gate.resolution {
            return Err(Error::for_resolved(resolution));
        }
        let Some((path, change)) = floor_change(&gate.request.body) else {
            return Ok(FloorDiff::not_applicable());
        };
        let shown = tools::display_form(&path);
        let workspace = self.workspace.clone();
        let raw = path.clone();
        let now = tools::reader::blocking(&shown, tools::reader::FS_LIMIT, None, move || {
            tools::read_floor_file_for_person(&workspace, &raw, MAX_FLOOR_VIEW_BYTES)
        })
        .await
        .map_err(|e| refused(&e))?;
        self.audit_view(who, approval_id, session, &shown).await?;
        Ok(view_of(&shown, now, &change))
    }

    /// Records who viewed which card's file (never what it holds); the view is given only once
    /// this is written.
    async fn audit_view(
        &self,
        who: &Principal,
        approval_id: &ApprovalId,
        session: &SessionId,
        path: &str,
    ) -> Result<(), Error> {
        let draft = AuditDraft {
            actor: who.actor(),
            action: FLOOR_FILE_VIEWED,
            subject: approval_id.as_str().to_owned(),
            detail: json!({ "session_id": session.as_str(), "path": path }),
        };
        Ok(self.repos.audit.append_audit(vec![draft]).await?)
    }
}

/// Why the file was not read, as the view's refusal: the reason in words, never its content
/// (a path outside the workspace, past a symlink, a file with other names, not a regular file
/// is refused; a file system that did not answer is the server's failure).
fn refused(err: &ToolError) -> Error {
    match err {
        ToolError::OutsideWorkspace(_)
        | ToolError::OnFloor { .. }
        | ToolError::NotRegular { .. }
        | ToolError::IsADirectory(_) => {
            Error::NotAllowed(format!("what the file holds now is not shown: {err}"))
        }
        other => Error::Internal(format!("the floor view could not read the file: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_masks_the_old_value_and_the_new_on_both_sides() {
        let change = Change::Write {
            content: "OPENAI_API_KEY=sk-new-0123456789abcdef\nDEBUG=false".into(),
        };
        let now = PersonRead::Text("OPENAI_API_KEY=sk-old-9876543210fedcba\nDEBUG=true\n".into());
        let view = view_of(".env", now, &change);
        let diff = view.diff.expect("a diff");
        assert!(view.exists && view.applicable && !view.too_large);
        assert!(
            diff.contains("-DEBUG=true") && diff.contains("+DEBUG=false"),
            "{diff}"
        );
        assert!(!diff.contains("sk-old-9876543210fedcba"), "{diff}");
        assert!(!diff.contains("sk-new-0123456789abcdef"), "{diff}");
    }

    #[test]
    fn an_absent_file_is_a_new_one_and_an_edit_that_finds_nothing_has_no_diff() {
        let write = Change::Write {
            content: "A=1".into(),
        };
        let view = view_of(".env", PersonRead::Absent, &write);
        assert!(view.applicable && !view.exists && view.diff.is_none());
        let edit = Change::Edit {
            old: "B=2".into(),
            new: "B=3".into(),
        };
        let view = view_of(".env", PersonRead::Text("A=1\n".into()), &edit);
        assert!(view.exists && view.diff.is_none());
    }
}
