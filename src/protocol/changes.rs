//! The server-wide change stream's notice (`GET /api/v1/changes`): a small word that what the
//! session list or the Inbox shows may have changed, never the change itself (the page
//! refetches what it shows).

use serde::{Deserialize, Serialize};

use super::SessionId;

/// What happened, as far as the session list and the Inbox care. Spelled once, by strum
/// (`spelled!` in `protocol/mod.rs`); an unknown kind reads as [`ChangeKind::Unknown`].
#[derive(
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
    strum::Display,
)]
#[strum(serialize_all = "snake_case")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    SessionCreated,
    SessionRenamed,
    SessionDeleted,
    ModeChanged,
    TurnStarted,
    TurnFinished,
    ApprovalOpened,
    ApprovalResolved,
    /// Notices may have been missed (a slow reader, another instance's lost signals): refetch
    /// everything.
    Resync,
    /// A kind a newer server sends that this build does not know: read as a resync.
    Unknown,
}

/// One notice: the kind, and the session it concerns (none for a resync).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
}

impl Change {
    pub fn of(kind: ChangeKind, session_id: &SessionId) -> Change {
        Change {
            kind,
            session_id: Some(session_id.clone()),
        }
    }

    pub fn resync() -> Change {
        Change {
            kind: ChangeKind::Resync,
            session_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_read_and_write_their_wire_spelling() {
        let change = Change::of(ChangeKind::ApprovalOpened, &"s1".into());
        let json = serde_json::to_string(&change).unwrap();
        assert_eq!(json, r#"{"kind":"approval_opened","session_id":"s1"}"#);
        assert_eq!(serde_json::from_str::<Change>(&json).unwrap(), change);
        assert_eq!(
            serde_json::to_string(&Change::resync()).unwrap(),
            r#"{"kind":"resync"}"#
        );
        let newer: Change = serde_json::from_str(r#"{"kind":"session_archived"}"#).unwrap();
        assert_eq!(newer.kind, ChangeKind::Unknown);
    }
}
