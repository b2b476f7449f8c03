//! Why a core operation refused or failed, with the stable code each has on the wire.
//!
//! A domain error: it knows nothing of HTTP. The REST layer (`http/error.rs`) and the server
//! functions (`api.rs`) give each its status, so a failure reads the same through every door.
//! Internal causes are logged, never sent: the client gets a code and a plain sentence.

use crate::protocol::{ErrorCode, Resolution};
use crate::server::live::change::ChangeError;
use crate::server::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("approval_mode must be one of plan, ask, auto_edit, yolo")]
    InvalidApprovalMode,
    #[error("{0}")]
    InvalidMessage(String),
    #[error("{0}")]
    InvalidTitle(String),
    #[error("no session with id {0}")]
    UnknownSession(String),
    #[error("a turn is already running in this session; wait for it or cancel it")]
    TurnInProgress,
    #[error("no turn is running in this session")]
    NoTurnRunning,
    #[error("no approval {0} in this session")]
    UnknownApproval(String),
    #[error("no standing rule {0}")]
    UnknownRule(String),
    #[error("{0}")]
    InvalidDecision(String),
    #[error(
        "this decision needs `edits`: replacement arguments (an object) or a revised proposal (text)"
    )]
    EditsRequired,
    #[error("{0}")]
    InvalidEdits(String),
    #[error("{0}")]
    NotAllowed(String),
    #[error("the card changed since you saw it (digest mismatch); reload it and decide again")]
    StaleDigest,
    #[error("this approval was already answered: {}", describe(.0))]
    AlreadyResolved(Box<Resolution>),
    #[error("this approval is no longer open: {}", describe(.0))]
    Gone(Box<Resolution>),
    #[error("{0}")]
    ProtectedKey(String),
    #[error("{0}")]
    InvalidValue(String),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("the database could not be written; nothing was changed, try again")]
    StorageUnavailable,
    #[error("{0}")]
    InvalidGate(String),
    /// An `Idempotency-Key` that names a gate of another call: its answer is not this one's.
    #[error("{0}")]
    KeyReused(String),
    /// An outside session has as many cards waiting as it may.
    #[error("{0}")]
    TooManyGates(String),
    /// An outside agent's name another credential claimed first: everything kept per agent
    /// (grants, the reviewer's trust) is that credential's.
    #[error("{0}")]
    SourceClaimed(String),
    #[error("{0}")]
    Forbidden(String),
    /// A routed card (`[[approvals.route]]`) answered by someone its route does not name: the
    /// message says who may answer it.
    #[error("{0}")]
    NotAnApprover(String),
    /// A credential that logs nobody in (a spent login link, a wrong token).
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    NameTaken(String),
    #[error("{0}")]
    InvalidScope(String),
    #[error("no token named {0}")]
    UnknownToken(String),
    #[error("no push subscription {0} of yours")]
    UnknownSubscription(String),
    #[error("{0}")]
    TooManySubscriptions(String),
    /// Not a capability this server made (or one altered): nothing is revealed about why.
    #[error("this is not a valid answer capability")]
    InvalidCapability,
    /// A genuine capability that can no longer answer: expired, its subscription or token gone.
    #[error("this answer capability has ended: {0}")]
    CapabilityEnded(String),
    /// The card (or the change to passkeys) needs a passkey assertion.
    #[error("{0}")]
    PasskeyRequired(String),
    /// A passkey assertion was given and did not verify.
    #[error("{0}")]
    PasskeyRefused(String),
    #[error("no passkey {0}")]
    UnknownPasskey(String),
    #[error("no person {0}")]
    UnknownPerson(String),
    #[error("{0}")]
    ReviewNotOn(String),
    #[error("{0}")]
    NotEligible(String),
    #[error("{0}")]
    NotAnsweredByReviewer(String),
    #[error("internal error; see the server log")]
    Internal(String),
}

impl Error {
    /// The code the wire carries for this error (the same through every door).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidRequest(_) => ErrorCode::InvalidRequest,
            Error::InvalidApprovalMode => ErrorCode::InvalidApprovalMode,
            Error::InvalidMessage(_) => ErrorCode::InvalidMessage,
            Error::InvalidTitle(_) => ErrorCode::InvalidTitle,
            Error::UnknownSession(_) => ErrorCode::UnknownSession,
            Error::TurnInProgress => ErrorCode::TurnInProgress,
            Error::NoTurnRunning => ErrorCode::NoTurnRunning,
            Error::UnknownApproval(_) => ErrorCode::UnknownApproval,
            Error::UnknownRule(_) => ErrorCode::UnknownRule,
            Error::InvalidDecision(_) => ErrorCode::InvalidDecision,
            Error::EditsRequired => ErrorCode::EditsRequired,
            Error::InvalidEdits(_) => ErrorCode::InvalidEdits,
            Error::NotAllowed(_) => ErrorCode::NotAllowed,
            Error::StaleDigest => ErrorCode::StaleDigest,
            Error::AlreadyResolved(_) => ErrorCode::AlreadyResolved,
            Error::Gone(_) => ErrorCode::Gone,
            Error::ProtectedKey(_) => ErrorCode::ProtectedKey,
            Error::InvalidValue(_) => ErrorCode::InvalidValue,
            Error::ShuttingDown => ErrorCode::ShuttingDown,
            Error::StorageUnavailable => ErrorCode::StorageUnavailable,
            Error::InvalidGate(_) => ErrorCode::InvalidGate,
            Error::KeyReused(_) => ErrorCode::IdempotencyKeyReused,
            Error::TooManyGates(_) => ErrorCode::TooManyGates,
            Error::SourceClaimed(_) => ErrorCode::SourceClaimed,
            Error::Forbidden(_) => ErrorCode::Forbidden,
            Error::NotAnApprover(_) => ErrorCode::NotAnApprover,
            Error::Unauthorized(_) => ErrorCode::Unauthorized,
            Error::InvalidName(_) => ErrorCode::InvalidName,
            Error::NameTaken(_) => ErrorCode::NameTaken,
            Error::InvalidScope(_) => ErrorCode::InvalidScope,
            Error::UnknownToken(_) => ErrorCode::UnknownToken,
            Error::UnknownSubscription(_) => ErrorCode::UnknownSubscription,
            Error::TooManySubscriptions(_) => ErrorCode::TooManySubscriptions,
            Error::InvalidCapability => ErrorCode::InvalidCapability,
            Error::CapabilityEnded(_) => ErrorCode::CapabilityEnded,
            Error::PasskeyRequired(_) => ErrorCode::PasskeyRequired,
            Error::PasskeyRefused(_) => ErrorCode::PasskeyRefused,
            Error::UnknownPasskey(_) => ErrorCode::UnknownPasskey,
            Error::UnknownPerson(_) => ErrorCode::UnknownPerson,
            Error::ReviewNotOn(_) => ErrorCode::ReviewNotOn,
            Error::NotEligible(_) => ErrorCode::NotEligible,
            Error::NotAnsweredByReviewer(_) => ErrorCode::NotAnsweredByReviewer,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }
}

impl Error {
    /// The resolution that 409 `already_resolved` and 410 `gone` carry.
    pub fn resolution(&self) -> Option<&Resolution> {
        match self {
            Error::AlreadyResolved(r) | Error::Gone(r) => Some(r),
            _ => None,
        }
    }

    /// 410 when the gate ended without an answer (cancelled, expired), else 409.
    pub fn for_resolved(resolution: Resolution) -> Error {
        use crate::protocol::Decision;
        match resolution.decision {
            Decision::Cancelled | Decision::Timeout => Error::Gone(Box::new(resolution)),
            _ => Error::AlreadyResolved(Box::new(resolution)),
        }
    }
}

fn describe(resolution: &Resolution) -> String {
    use crate::protocol::{AnsweredBy, Decision};
    let what = match resolution.decision {
        Decision::Approve => "approved",
        Decision::Edit => "approved with edits",
        Decision::AllowAlways => "always allowed",
        Decision::Deny => "denied",
        Decision::Timeout => "timed out",
        Decision::Cancelled => "cancelled",
    };
    let person;
    let by = match resolution.answered_by {
        AnsweredBy::User if !resolution.actor.is_empty() => {
            person = format!(
                " by a person ({})",
                crate::server::audit::resolver_words(resolution)
            );
            person.as_str()
        }
        AnsweredBy::User => " by a person",
        AnsweredBy::Rule => " by a standing rule",
        AnsweredBy::Reviewer => " by the reviewer",
        AnsweredBy::Timeout | AnsweredBy::System => "",
    };
    format!("{what}{by} at {}", resolution.resolved_at)
}

impl From<StoreError> for Error {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::UnknownSession(id) => Error::UnknownSession(id),
            StoreError::UnknownApproval(id) => Error::UnknownApproval(id),
            StoreError::AlreadyResolved(resolution) => Error::for_resolved(*resolution),
            StoreError::TurnHeld(_) => Error::TurnInProgress,
            StoreError::Unstorable(why) => Error::InvalidRequest(why),
            StoreError::Gone(why) => Error::Unauthorized(why),
            // Logged here, where its cause is dropped: the answer (`503`) does not carry it.
            failure if failure.is_database_failure() => {
                tracing::error!(error = %failure, "database error");
                Error::StorageUnavailable
            }
            // Logged once, by the door that answers `500` with it.
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<ChangeError> for Error {
    fn from(err: ChangeError) -> Self {
        match err {
            ChangeError::Protected(why) => Error::ProtectedKey(why),
            ChangeError::Invalid(why) => Error::InvalidValue(why),
            ChangeError::Unwritable(_) => Error::StorageUnavailable,
        }
    }
}

impl Error {
    /// The HTTP status of this error: every door (routes, server functions, forms) answers
    /// with the same.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Error::InvalidRequest(_)
            | Error::InvalidApprovalMode
            | Error::InvalidMessage(_)
            | Error::InvalidTitle(_)
            | Error::InvalidDecision(_)
            | Error::EditsRequired
            | Error::InvalidEdits(_)
            | Error::InvalidValue(_)
            | Error::InvalidGate(_)
            | Error::InvalidName(_)
            | Error::InvalidScope(_) => http::StatusCode::BAD_REQUEST,
            Error::NotAllowed(_)
            | Error::ProtectedKey(_)
            | Error::Forbidden(_)
            | Error::NotAnApprover(_)
            | Error::SourceClaimed(_)
            | Error::InvalidCapability
            | Error::PasskeyRequired(_)
            | Error::PasskeyRefused(_) => http::StatusCode::FORBIDDEN,
            Error::UnknownSession(_)
            | Error::UnknownApproval(_)
            | Error::UnknownRule(_)
            | Error::UnknownToken(_)
            | Error::UnknownSubscription(_)
            | Error::UnknownPasskey(_)
            | Error::UnknownPerson(_) => http::StatusCode::NOT_FOUND,
            Error::NameTaken(_) | Error::KeyReused(_) => http::StatusCode::CONFLICT,
            Error::TooManyGates(_) | Error::TooManySubscriptions(_) => {
                http::StatusCode::TOO_MANY_REQUESTS
            }
            Error::StaleDigest | Error::AlreadyResolved(_) => http::StatusCode::CONFLICT,
            Error::Gone(_) | Error::CapabilityEnded(_) => http::StatusCode::GONE,
            Error::TurnInProgress | Error::NoTurnRunning => http::StatusCode::CONFLICT,
            Error::ReviewNotOn(_) | Error::NotEligible(_) | Error::NotAnsweredByReviewer(_) => {
                http::StatusCode::CONFLICT
            }
            Error::ShuttingDown | Error::StorageUnavailable => {
                http::StatusCode::SERVICE_UNAVAILABLE
            }
            Error::Unauthorized(_) => http::StatusCode::UNAUTHORIZED,
            Error::Internal(_) => http::StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AnsweredBy, ApprovalId, Decision, Timestamp};

    /// Each error keeps the code it had when codes were strings (the wire is pinned).
    #[test]
    fn every_error_keeps_its_wire_code() {
        let resolution = || {
            Box::new(Resolution::plain(
                &ApprovalId::from("a"),
                Decision::Approve,
                AnsweredBy::User,
                "browser",
                Timestamp::now(),
            ))
        };
        let s = String::new;
        let cases = [
            (Error::InvalidRequest(s()), "invalid_request"),
            (Error::InvalidApprovalMode, "invalid_approval_mode"),
            (Error::InvalidMessage(s()), "invalid_message"),
            (Error::InvalidTitle(s()), "invalid_title"),
            (Error::UnknownSession(s()), "unknown_session"),
            (Error::TurnInProgress, "turn_in_progress"),
            (Error::NoTurnRunning, "no_turn_running"),
            (Error::UnknownApproval(s()), "unknown_approval"),
            (Error::UnknownRule(s()), "unknown_rule"),
            (Error::InvalidDecision(s()), "invalid_decision"),
            (Error::EditsRequired, "edits_required"),
            (Error::InvalidEdits(s()), "invalid_edits"),
            (Error::NotAllowed(s()), "not_allowed"),
            (Error::StaleDigest, "stale_digest"),
            (Error::AlreadyResolved(resolution()), "already_resolved"),
            (Error::Gone(resolution()), "gone"),
            (Error::ProtectedKey(s()), "protected_key"),
            (Error::InvalidValue(s()), "invalid_value"),
            (Error::ShuttingDown, "shutting_down"),
            (Error::StorageUnavailable, "storage_unavailable"),
            (Error::InvalidGate(s()), "invalid_gate"),
            (Error::KeyReused(s()), "idempotency_key_reused"),
            (Error::TooManyGates(s()), "too_many_gates"),
            (Error::Forbidden(s()), "forbidden"),
            (Error::NotAnApprover(s()), "not_an_approver"),
            (Error::SourceClaimed(s()), "source_claimed"),
            (Error::Unauthorized(s()), "unauthorized"),
            (Error::InvalidName(s()), "invalid_name"),
            (Error::NameTaken(s()), "name_taken"),
            (Error::InvalidScope(s()), "invalid_scope"),
            (Error::UnknownToken(s()), "unknown_token"),
            (Error::UnknownSubscription(s()), "unknown_subscription"),
            (Error::TooManySubscriptions(s()), "too_many_subscriptions"),
            (Error::InvalidCapability, "invalid_capability"),
            (Error::CapabilityEnded(s()), "capability_ended"),
            (Error::PasskeyRequired(s()), "passkey_required"),
            (Error::PasskeyRefused(s()), "passkey_refused"),
            (Error::UnknownPasskey(s()), "unknown_passkey"),
            (Error::UnknownPerson(s()), "unknown_person"),
            (Error::Internal(s()), "internal"),
        ];
        for (err, spelling) in cases {
            assert_eq!(err.code().as_str(), spelling, "{err:?}");
            assert_ne!(err.code(), ErrorCode::Other(spelling.into()), "{err:?}");
        }
    }
}
