//! `ApiError` → `{"error":{"code","message"}}` with its status. Internal causes stay in the log.

use axum::Json;
use axum::response::{IntoResponse, Response};

use crate::protocol::{ErrorBody, ErrorDetail};
use crate::server::error::ApiError;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            tracing::error!(%cause, "internal error answered 500");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code().to_owned(),
                message: self.to_string(),
            },
        };
        (self.status(), Json(body)).into_response()
    }
}
