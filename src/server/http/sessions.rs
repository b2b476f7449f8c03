//! REST handlers for health, sessions, modes, messages and cancel. Each is a thin wrapper
//! over one `Core` operation.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::IntoResponse;
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::json::ApiJson;
use crate::protocol::ErrorCode;
use crate::server::core::Error;
use crate::server::core::ids;
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

/// `200 ok` while the store takes writes and answers reads; `503 storage_unavailable` with the
/// reason in words otherwise (a load balancer takes the instance out; a person reads why).
pub async fn health(State(state): State<AppState>) -> impl IntoResponse {
    match state.core.health().await {
        Ok(()) => (
            StatusCode::OK,
            Json(json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") })),
        ),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unavailable",
                "version": env!("CARGO_PKG_VERSION"),
                "error": {"code": ErrorCode::StorageUnavailable, "message": reason},
            })),
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    title: Option<String>,
    approval_mode: Option<String>,
}

pub async fn create(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<CreateSession>,
) -> Result<impl IntoResponse, ApiError> {
    let session = state
        .core
        .create_session(
            body.title,
            ids::optional_mode(body.approval_mode.as_deref())?,
            who.person_email(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(session)))
}

pub async fn list(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.list_sessions().await?))
}

pub async fn snapshot(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let sid = ids::session_id(&sid)?;
    Ok(Json(state.core.snapshot(&sid).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let sid = ids::session_id(&sid)?;
    state.core.delete_session(&sid).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    title: Option<String>,
}

/// `PATCH /sessions/{sid}` `{"title"}`: renames the session; `200` Session.
pub async fn rename(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<Rename>,
) -> Result<impl IntoResponse, ApiError> {
    let title = body
        .title
        .ok_or_else(|| Error::InvalidTitle("`title` is required".into()))?;
    let sid = ids::session_id(&sid)?;
    Ok(Json(state.core.rename_session(&sid, &title).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetMode {
    approval_mode: Option<String>,
}

pub async fn set_mode(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<SetMode>,
) -> Result<impl IntoResponse, ApiError> {
    let mode = ids::mode(&body.approval_mode.ok_or(Error::InvalidApprovalMode)?)?;
    let sid = ids::session_id(&sid)?;
    let (previous, current) = state.core.set_mode(&sid, mode, &who).await?;
    Ok(Json(
        json!({ "previous": previous, "approval_mode": current }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    text: Option<String>,
    approval_mode: Option<String>,
}

pub async fn send_message(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<SendMessage>,
) -> Result<impl IntoResponse, ApiError> {
    let text = body
        .text
        .ok_or_else(|| Error::InvalidMessage("text is required".into()))?;
    let mode = ids::optional_mode(body.approval_mode.as_deref())?;
    let sid = ids::session_id(&sid)?;
    let turn_id = state.core.send_message(&sid, &text, mode, &who).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "turn_id": turn_id }))))
}

pub async fn cancel(
    State(state): State<AppState>,
    Path(sid): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let sid = ids::session_id(&sid)?;
    let turn_id = state.core.cancel(&sid).await?;
    Ok(Json(json!({ "turn_id": turn_id })))
}
