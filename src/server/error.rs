//! The one error type of the core operations, with the wire code and HTTP status of each.
//!
//! REST handlers and server functions both return it, so a failure reads the same everywhere.
//! Internal causes are logged, never sent: the client gets a code and a plain sentence.

use http::StatusCode;

use super::store::StoreError;
use crate::protocol::Resolution;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(
        "not authenticated: open the login URL printed at startup, or send `Authorization: Bearer <token>`"
    )]
    Unauthorized,
    #[error("cross-origin request refused: state-changing requests must come from this site")]
    Csrf,
    #[error("the request body is larger than 1 MiB")]
    PayloadTooLarge,
    #[error("the request body is not valid JSON: {0}")]
    InvalidJson(String),
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
    #[error("no such route: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
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
    #[error("internal error; see the server log")]
    Internal(String),
}

impl ApiError {
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::Csrf => "csrf",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::InvalidJson(_) => "invalid_json",
            ApiError::InvalidRequest(_) => "invalid_request",
            ApiError::InvalidApprovalMode => "invalid_approval_mode",
            ApiError::InvalidMessage(_) => "invalid_message",
            ApiError::InvalidTitle(_) => "invalid_title",
            ApiError::UnknownSession(_) => "unknown_session",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::TurnInProgress => "turn_in_progress",
            ApiError::NoTurnRunning => "no_turn_running",
            ApiError::UnknownApproval(_) => "unknown_approval",
            ApiError::UnknownRule(_) => "unknown_rule",
            ApiError::InvalidDecision(_) => "invalid_decision",
            ApiError::EditsRequired => "edits_required",
            ApiError::InvalidEdits(_) => "invalid_edits",
            ApiError::NotAllowed(_) => "not_allowed",
            ApiError::StaleDigest => "stale_digest",
            ApiError::AlreadyResolved(_) => "already_resolved",
            ApiError::Gone(_) => "gone",
            ApiError::ProtectedKey(_) => "protected_key",
            ApiError::InvalidValue(_) => "invalid_value",
            ApiError::ShuttingDown => "shutting_down",
            ApiError::StorageUnavailable => "storage_unavailable",
            ApiError::Internal(_) => "internal",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Csrf => StatusCode::FORBIDDEN,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::InvalidJson(_)
            | ApiError::InvalidRequest(_)
            | ApiError::InvalidApprovalMode
            | ApiError::InvalidMessage(_)
            | ApiError::InvalidTitle(_)
            | ApiError::InvalidDecision(_)
            | ApiError::EditsRequired
            | ApiError::InvalidEdits(_)
            | ApiError::InvalidValue(_) => StatusCode::BAD_REQUEST,
            ApiError::NotAllowed(_) | ApiError::ProtectedKey(_) => StatusCode::FORBIDDEN,
            ApiError::UnknownSession(_)
            | ApiError::NotFound(_)
            | ApiError::UnknownApproval(_)
            | ApiError::UnknownRule(_) => StatusCode::NOT_FOUND,
            ApiError::StaleDigest | ApiError::AlreadyResolved(_) => StatusCode::CONFLICT,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TurnInProgress | ApiError::NoTurnRunning => StatusCode::CONFLICT,
            ApiError::ShuttingDown | ApiError::StorageUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl ApiError {
    /// The resolution that 409 `already_resolved` and 410 `gone` carry.
    pub fn resolution(&self) -> Option<&Resolution> {
        match self {
            ApiError::AlreadyResolved(r) | ApiError::Gone(r) => Some(r),
            _ => None,
        }
    }

    /// 410 when the gate ended without an answer (cancelled, expired), else 409.
    pub fn for_resolved(resolution: Resolution) -> ApiError {
        use crate::protocol::Decision;
        match resolution.decision {
            Decision::Cancelled | Decision::Timeout => ApiError::Gone(Box::new(resolution)),
            _ => ApiError::AlreadyResolved(Box::new(resolution)),
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

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::UnknownSession(id) => ApiError::UnknownSession(id),
            StoreError::UnknownApproval(id) => ApiError::UnknownApproval(id),
            StoreError::AlreadyResolved(resolution) => ApiError::for_resolved(*resolution),
            failure if failure.is_database_failure() => {
                tracing::error!(error = %failure, "database error");
                ApiError::StorageUnavailable
            }
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::Internal(other.to_string())
            }
        }
    }
}
