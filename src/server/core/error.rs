//! Why a core operation refused or failed, with the stable code each has on the wire.
//!
//! A domain error: it knows nothing of HTTP. The REST layer (`http/error.rs`) and the server
//! functions (`api.rs`) give each its status, so a failure reads the same through every door.
//! Internal causes are logged, never sent: the client gets a code and a plain sentence.

use crate::protocol::Resolution;
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
    #[error("{0}")]
    Forbidden(String),
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
    #[error("internal error; see the server log")]
    Internal(String),
}

impl Error {
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidRequest(_) => "invalid_request",
            Error::InvalidApprovalMode => "invalid_approval_mode",
            Error::InvalidMessage(_) => "invalid_message",
            Error::InvalidTitle(_) => "invalid_title",
            Error::UnknownSession(_) => "unknown_session",
            Error::TurnInProgress => "turn_in_progress",
            Error::NoTurnRunning => "no_turn_running",
            Error::UnknownApproval(_) => "unknown_approval",
            Error::UnknownRule(_) => "unknown_rule",
            Error::InvalidDecision(_) => "invalid_decision",
            Error::EditsRequired => "edits_required",
            Error::InvalidEdits(_) => "invalid_edits",
            Error::NotAllowed(_) => "not_allowed",
            Error::StaleDigest => "stale_digest",
            Error::AlreadyResolved(_) => "already_resolved",
            Error::Gone(_) => "gone",
            Error::ProtectedKey(_) => "protected_key",
            Error::InvalidValue(_) => "invalid_value",
            Error::ShuttingDown => "shutting_down",
            Error::StorageUnavailable => "storage_unavailable",
            Error::InvalidGate(_) => "invalid_gate",
            Error::KeyReused(_) => "idempotency_key_reused",
            Error::TooManyGates(_) => "too_many_gates",
            Error::Forbidden(_) => "forbidden",
            Error::Unauthorized(_) => "unauthorized",
            Error::InvalidName(_) => "invalid_name",
            Error::NameTaken(_) => "name_taken",
            Error::InvalidScope(_) => "invalid_scope",
            Error::UnknownToken(_) => "unknown_token",
            Error::UnknownSubscription(_) => "unknown_subscription",
            Error::TooManySubscriptions(_) => "too_many_subscriptions",
            Error::InvalidCapability => "invalid_capability",
            Error::CapabilityEnded(_) => "capability_ended",
            Error::PasskeyRequired(_) => "passkey_required",
            Error::PasskeyRefused(_) => "passkey_refused",
            Error::UnknownPasskey(_) => "unknown_passkey",
            Error::Internal(_) => "internal",
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
            person = format!(" by a person ({})", resolution.actor);
            person.as_str()
        }
        AnsweredBy::User => " by a person",
        AnsweredBy::Rule => " by a standing rule",
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
