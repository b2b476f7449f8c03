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
        let mut json = serde_json::to_value(body).unwrap_or_default();
        if let (Some(resolution), Some(obj)) = (self.resolution(), json.as_object_mut()) {
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
