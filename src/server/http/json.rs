//! A JSON body extractor whose every failure is the protocol's JSON error.
//!
//! It reads the bytes itself (so the 1 MiB limit answers `413 payload_too_large`), accepts any
//! content type (scripts forget headers; the body is what matters), treats an empty body as
//! `{}` where the request type allows it, and maps serde errors: syntax → `invalid_json`,
//! shape (missing or unknown fields, wrong types) → `invalid_request`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use http::StatusCode;
use serde::de::DeserializeOwned;

use crate::server::http::error::ApiError;

pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::InvalidRequest(format!("the request body could not be read: {rejection}"))
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        // Syntax first, then shape: a body that is not JSON at all is `invalid_json` even when
        // a typed parse would have stumbled on an unknown field before reaching the bad byte.
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        serde_json::from_value(value)
            .map(ApiJson)
            .map_err(|e| ApiError::InvalidRequest(format!("invalid request body: {e}")))
    }
}
