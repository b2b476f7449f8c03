//! What the HTTP layer answers when a request fails: the core's refusals with their status,
//! plus what only HTTP can get wrong (credentials, CSRF, the body, the route) — always
//! `{"error":{"code","message"}}`. Internal causes stay in the log.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::protocol::{ErrorBody, ErrorCode};
use crate::server::core::Error;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A core operation's refusal or failure.
    #[error(transparent)]
    Core(#[from] Error),
    #[error(
        "not authenticated: open a login link (`countersign login` on the server's machine prints one), or send `Authorization: Bearer <token>`"
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
    #[error("no such route: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error(
        "this credential already holds {0} open streams: close a tab or a feed (streams end when their page closes)"
    )]
    TooManyStreams(usize),
}

impl From<crate::server::store::StoreError> for ApiError {
    fn from(err: crate::server::store::StoreError) -> Self {
        ApiError::Core(err.into())
    }
}

impl ApiError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Core(err) => err.code(),
            ApiError::Unauthorized => ErrorCode::Unauthorized,
            ApiError::Csrf => ErrorCode::Csrf,
            ApiError::PayloadTooLarge => ErrorCode::PayloadTooLarge,
            ApiError::InvalidJson(_) => ErrorCode::InvalidJson,
            ApiError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::MethodNotAllowed => ErrorCode::MethodNotAllowed,
            ApiError::TooManyStreams(_) => ErrorCode::TooManyStreams,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Core(err) => err.status(),
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Csrf => StatusCode::FORBIDDEN,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::InvalidJson(_) | ApiError::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooManyStreams(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Core(Error::Internal(cause)) = &self {
            tracing::error!(%cause, "internal error answered 500");
        }
        let body = ErrorBody::new(self.code(), self.to_string());
        let mut json = serde_json::to_value(body).unwrap_or_default();
        let resolution = match &self {
            ApiError::Core(err) => err.resolution(),
            _ => None,
        };
        if let (Some(resolution), Some(obj)) = (resolution, json.as_object_mut()) {
            let r = serde_json::json!({
                "approval_id": resolution.approval_id,
                "decision": resolution.decision,
                "answered_by": resolution.answered_by,
                "actor": resolution.actor,
                "resolved_at": resolution.resolved_at,
                "reason": resolution.reason,
            });
            obj.insert("resolution".into(), r.clone());
            if let Some(error) = obj.get_mut("error").and_then(|e| e.as_object_mut()) {
                error.insert("resolution".into(), r);
            }
        }
        (self.status(), Json(json)).into_response()
    }
}
