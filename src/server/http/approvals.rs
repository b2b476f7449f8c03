//! REST handlers for decisions, the pending inbox and standing rules.

use axum::Json;
use axum::extract::{Extension, Path, Query, State};
use axum::response::IntoResponse;
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::json::ApiJson;
use crate::protocol::{ApprovalId, DecisionRequest, RuleId};
use crate::server::core::ids;
use crate::server::core::{Answered, Error};
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

pub async fn decide(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path((sid, aid)): Path<(String, String)>,
    ApiJson(body): ApiJson<DecisionRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let answer = crate::server::core::Answer::try_from(body)?;
    let (sid, aid) = (ids::session_id(&sid)?, ApprovalId::from(aid));
    crate::timeline::mark("decide: request read");
    match state.core.decide(&sid, &aid, answer, &who).await? {
        Answered::Resolved(resolution) => Ok((
            StatusCode::OK,
            Json(json!({
                "approval_id": resolution.approval_id,
                "decision": resolution.decision,
                "resolved_at": resolution.resolved_at,
                "rule_id": resolution.rule_id,
                "approved_by": resolution.approved_by,
            })),
        )),
        // A routed card that needs more approvals: this one counted, the card waits.
        Answered::Counted { approvals, quorum } => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "approval_id": aid,
                "status": "counted",
                "approvals": approvals,
                "quorum": quorum,
            })),
        )),
    }
}

/// What a pending floor write would change in its file, masked, for the person (admin): never
/// cached, never part of the card (`core::floor_view`).
pub async fn floor_diff(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path((sid, aid)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (sid, aid) = (ids::session_id(&sid)?, ApprovalId::from(aid));
    let view = state.core.floor_diff(&sid, &aid, &who).await?;
    Ok(([(http::header::CACHE_CONTROL, "no-store")], Json(view)))
}

#[derive(Deserialize)]
pub struct InboxQuery {
    status: Option<String>,
}

pub async fn pending(
    State(state): State<AppState>,
    Query(query): Query<InboxQuery>,
) -> Result<impl IntoResponse, ApiError> {
    match query.status.as_deref() {
        None | Some("pending") => Ok(Json(state.core.pending_approvals().await?)),
        Some(other) => Err(ApiError::InvalidRequest(format!(
            "status must be `pending`, not `{other}`"
        ))),
    }
}

pub async fn rules(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.list_rules().await?))
}

pub async fn revoke_rule(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<RuleId>,
) -> Result<impl IntoResponse, ApiError> {
    state.core.revoke_rule(&id, &who.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
pub struct AuditQuery {
    after: Option<String>,
    action: Option<String>,
    subject: Option<String>,
}

pub async fn audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let after = match query.after.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(raw) => raw.parse::<u64>().map_err(|_| {
            ApiError::InvalidRequest(format!("after must be a non-negative integer, got `{raw}`"))
        })?,
    };
    let entries = state
        .core
        .audit(after, query.action.as_deref(), query.subject.as_deref())
        .await?;
    Ok(Json(entries))
}

pub async fn verify_audit(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.verify_audit().await?))
}

/// `GET /api/v1/review`: the reviewer's standing with the person.
pub async fn review(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.review_state().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetTrust {
    trusted: bool,
}

/// `PUT /api/v1/review/classes/{class}/{source}`: trust the reviewer with a class, or not.
pub async fn review_trust(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path((class, source)): Path<(String, String)>,
    ApiJson(body): ApiJson<SetTrust>,
) -> Result<impl IntoResponse, ApiError> {
    let standing = state
        .core
        .set_review_trust(&class, &source, body.trusted, &who.actor())
        .await?;
    Ok(Json(standing))
}

/// `POST /api/v1/review/disagree/{approval_id}`: "I would not have approved this".
pub async fn review_disagree(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(approval_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let standing = state
        .core
        .disagree_with_reviewer(&approval_id, &who.actor())
        .await?;
    Ok(Json(standing))
}

pub async fn config(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.core.config_view())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetConfig {
    value: Option<serde_json::Value>,
}

pub async fn set_config(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(key): Path<String>,
    ApiJson(body): ApiJson<SetConfig>,
) -> Result<impl IntoResponse, ApiError> {
    let value = body
        .value
        .ok_or_else(|| Error::InvalidValue(format!("`{key}` needs a value")))?;
    let changes = state
        .core
        .set_config(&key, &value, &who.actor(), "api")
        .await?;
    let restart = crate::server::config::keys::needs_restart(&key);
    Ok(Json(json!({
        "key": key,
        "value": value,
        "changed": !changes.is_empty(),
        "restart_required": restart,
    })))
}
