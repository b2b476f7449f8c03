//! REST handlers for named tokens (`/api/v1/tokens`) and outside agents' gates
//! (`/api/v1/gates`).

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::response::IntoResponse;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use super::json::ApiJson;
use crate::protocol::ApprovalId;
use crate::server::core::{Error, MAX_WAIT_SECS, MAX_WATCH, MIN_WATCH};
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    name: Option<String>,
    scope: Option<String>,
}

pub async fn create_token(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<NewToken>,
) -> Result<impl IntoResponse, ApiError> {
    let created = state
        .core
        .create_token(body.name.as_deref(), body.scope.as_deref(), &who)
        .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

pub async fn list_tokens(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.list_tokens().await?))
}

pub async fn revoke_token(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    state.core.revoke_token(&name, &who).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/gates`: `201` for a new gate, `200` for the one this `Idempotency-Key`
/// already opened. The body is read here, not by a typed extractor, so every problem with it
/// is `invalid_gate` naming what is wrong.
pub async fn open(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| Error::InvalidGate(format!("the body is not JSON: {e}")))?;
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            Error::InvalidGate("the Idempotency-Key header must be plain text".into())
        })?),
    };
    let (created, gate) = state.core.open_gate(&who, body, key).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(gate)))
}

#[derive(Deserialize)]
pub struct WaitQuery {
    wait: Option<String>,
    /// Close the card when no poll like this one waits on it for this many seconds.
    watch: Option<String>,
}

/// `GET /api/v1/gates/{id}?wait=<0..60>&watch=<5..300>`: long-polls until the gate is
/// resolved. When the client's connection closes mid-wait (its process died: the kernel closes
/// the socket, hyper sees the end of the stream), this handler's future is dropped unanswered,
/// and with it the poll's watch: the card then closes unless a new poll comes within the
/// grace (`core/watch.rs`).
pub async fn wait(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let secs = match query.wait.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(raw) => raw
            .parse::<u64>()
            .ok()
            .filter(|s| *s <= MAX_WAIT_SECS)
            .ok_or_else(|| {
                ApiError::InvalidRequest(format!(
                    "wait must be a whole number of seconds from 0 to {MAX_WAIT_SECS}, got `{raw}`"
                ))
            })?,
    };
    let watch = match query.watch.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(raw) => Some(
            raw.parse::<u64>()
                .ok()
                .map(Duration::from_secs)
                .filter(|w| (MIN_WATCH..=MAX_WATCH).contains(w))
                .ok_or_else(|| {
                    ApiError::InvalidRequest(format!(
                        "watch must be a whole number of seconds from {} to {}, got `{raw}`",
                        MIN_WATCH.as_secs(),
                        MAX_WATCH.as_secs()
                    ))
                })?,
        ),
    };
    let gate = state
        .core
        .wait_gate(
            &who,
            &ApprovalId::from(id),
            Duration::from_secs(secs),
            watch,
        )
        .await?;
    Ok(Json(gate))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    why: Option<String>,
}

pub async fn cancel(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CancelBody>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(
        state
            .core
            .cancel_gate(&who, &ApprovalId::from(id), body.why.as_deref())
            .await?,
    ))
}
