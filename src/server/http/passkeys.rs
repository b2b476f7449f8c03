//! `/api/v1/passkeys…` (an admin's) and a card's assertion options
//! (`POST …/approvals/{aid}/passkey`, a deciding credential's).

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::IntoResponse;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::json::ApiJson;
use crate::protocol::{ApprovalId, DecisionRequest, PasskeyAnswer};
use crate::server::core::ids;
use crate::server::core::{Answer, PasskeyChange};
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;
use crate::server::store::passkeys::PasskeyRow;

fn host(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::HOST).and_then(|v| v.to_str().ok())
}

/// How a passkey is shown: never its credential.
fn view(row: &PasskeyRow) -> Value {
    json!({
        "id": row.id,
        "name": row.name,
        "rp_id": row.rp_id,
        "created_at": row.created_at,
        "last_used_at": row.last_used_at,
    })
}

fn ceremony(options: Value, sealed: String) -> Json<Value> {
    Json(json!({ "options": options, "ceremony": sealed }))
}

pub async fn list(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let rows = state.core.list_passkeys().await?;
    Ok(Json(rows.iter().map(view).collect::<Vec<_>>()))
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct StartRegistration {
    name: Option<String>,
    /// With a passkey registered already: an assertion from it (`/passkeys/assertions`).
    passkey: Option<PasskeyAnswer>,
}

pub async fn start_registration(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StartRegistration>,
) -> Result<impl IntoResponse, ApiError> {
    let (options, sealed) = state
        .core
        .start_passkey_registration(
            host(&headers),
            body.name.as_deref().unwrap_or(""),
            body.passkey.as_ref(),
            &who,
        )
        .await?;
    Ok(ceremony(options, sealed))
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct FinishRegistration {
    ceremony: Option<String>,
    credential: Option<Value>,
}

pub async fn finish_registration(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<FinishRegistration>,
) -> Result<impl IntoResponse, ApiError> {
    let (Some(sealed), Some(credential)) = (body.ceremony, body.credential) else {
        return Err(ApiError::InvalidRequest(
            "`ceremony` and `credential` are required".into(),
        ));
    };
    let row = state
        .core
        .finish_passkey_registration(&sealed, &credential, &who)
        .await?;
    Ok((StatusCode::CREATED, Json(view(&row))))
}

/// An assertion that allows one change: `{"change": "add", "name"}` or
/// `{"change": "remove", "id"}`.
pub async fn start_manage_assertion(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    headers: HeaderMap,
    ApiJson(change): ApiJson<PasskeyChange>,
) -> Result<impl IntoResponse, ApiError> {
    let (options, sealed) = state
        .core
        .start_manage_assertion(host(&headers), &change, &who)
        .await?;
    Ok(ceremony(options, sealed))
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct Remove {
    passkey: Option<PasskeyAnswer>,
}

pub async fn remove(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Remove>,
) -> Result<impl IntoResponse, ApiError> {
    state
        .core
        .remove_passkey(&id, body.passkey.as_ref(), &who)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The assertion options for one answer to one card: the body is the answer as it will be
/// sent (`decision`, `edits`, `rule`, `execution_mode`), and the challenge is derived from it
/// and the card.
pub async fn start_gate_assertion(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((sid, aid)): Path<(String, String)>,
    ApiJson(body): ApiJson<DecisionRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let answer = Answer::try_from(body)?;
    let (sid, aid) = (ids::session_id(&sid)?, ApprovalId::from(aid));
    let (options, sealed) = state
        .core
        .start_gate_assertion(host(&headers), &sid, &aid, &answer)
        .await?;
    Ok(ceremony(options, sealed))
}
