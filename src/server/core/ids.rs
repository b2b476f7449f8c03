//! A request's session id and mode, read once at the door (a route's path or body, a server
//! function's arguments, a form's fields), so every core operation takes them typed and never
//! reads text again. Whether a well-formed id names a session is the core's to say.

use crate::protocol::{Mode, SessionId};
use crate::server::core::Error;

/// A session id from a request, in its canonical spelling (the one the store keys on and the
/// hub's map holds: invariant 15), or `404 unknown_session`: text that is not a UUID names no
/// session, and never reaches the core.
pub fn session_id(raw: &str) -> Result<SessionId, Error> {
    uuid::Uuid::parse_str(raw)
        .map(|_| SessionId::new(raw))
        .map_err(|_| Error::UnknownSession(raw.chars().take(64).collect()))
}

/// A mode from a request, or `400 invalid_approval_mode`.
pub fn mode(raw: &str) -> Result<Mode, Error> {
    crate::server::core::parse_mode(raw)
}

/// A mode a request may leave out.
pub fn optional_mode(raw: Option<&str>) -> Result<Option<Mode>, Error> {
    raw.map(mode).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A malformed id is refused at the door exactly as the core refused it before: `404
    /// unknown_session`, naming (at most 64 characters of) what was sent.
    #[test]
    fn a_bad_session_id_gets_the_same_error_at_the_door() {
        for raw in [
            "not-a-uuid",
            "123",
            "",
            "%20",
            " 550e8400-e29b-41d4-a716-446655440000",
        ] {
            let err = session_id(raw).err();
            assert!(
                matches!(&err, Some(Error::UnknownSession(named)) if named == raw),
                "{raw}: {err:?}"
            );
            let api = err.unwrap_or(Error::InvalidApprovalMode);
            assert_eq!(api.status().as_u16(), 404, "{raw}");
            assert_eq!(api.code().as_str(), "unknown_session", "{raw}");
            assert_eq!(api.to_string(), format!("no session with id {raw}"));
        }
        let long = "x".repeat(100);
        assert!(
            matches!(session_id(&long), Err(Error::UnknownSession(named)) if named.len() == 64)
        );
    }

    /// Every spelling of a UUID is the one canonical id; a well-formed unknown one passes (the
    /// core says it is unknown).
    #[test]
    fn a_uuid_in_any_spelling_is_read_canonically() {
        let canonical = "550e8400-e29b-41d4-a716-446655440000";
        for spelling in [
            canonical,
            "550E8400-E29B-41D4-A716-446655440000",
            "{550e8400-e29b-41d4-a716-446655440000}",
        ] {
            assert_eq!(
                session_id(spelling).ok(),
                Some(SessionId::from(canonical)),
                "{spelling}"
            );
        }
    }

    #[test]
    fn a_bad_mode_gets_the_same_error_at_the_door() {
        assert_eq!(mode("auto_edit").ok(), Some(Mode::AutoEdit));
        for raw in ["YOLO", "root", ""] {
            let api = mode(raw).err().unwrap_or(Error::NoTurnRunning);
            assert_eq!(
                (api.status().as_u16(), api.code()),
                (400, crate::protocol::ErrorCode::InvalidApprovalMode)
            );
        }
        assert_eq!(optional_mode(None).ok(), Some(None));
        assert!(optional_mode(Some("plan ")).is_err());
    }
}
