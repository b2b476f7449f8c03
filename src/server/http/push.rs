//! `/api/v1/push/…`: the server's push key, a device's subscriptions, a test push, and the
//! one route a notification's capability answers through.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::IntoResponse;
use http::StatusCode;
use serde_json::json;

use super::json::ApiJson;
use crate::server::core::{CapabilityAnswer, Error};
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::push::Delivery;
use crate::server::push::subscription::SubscriptionJson;
use crate::server::state::AppState;
use crate::server::store::push::PushSubscriptionRow;

/// How a subscription is shown: never its keys, and its endpoint as the push service's host.
fn view(row: &PushSubscriptionRow) -> serde_json::Value {
    let host = url::Url::parse(&row.endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    json!({
        "id": row.id,
        "push_service": host,
        "credential": row.credential,
        "created_at": row.created_at,
    })
}

pub async fn key(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(json!({ "public_key": state.core.push_public_key()? })))
}

pub async fn subscribe(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Extension(presented): Extension<crate::server::logins::Presented>,
    ApiJson(body): ApiJson<SubscriptionJson>,
) -> Result<impl IntoResponse, ApiError> {
    let row = state.core.subscribe_push(body, &who, &presented).await?;
    Ok((StatusCode::CREATED, Json(view(&row))))
}

pub async fn list(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> Result<impl IntoResponse, ApiError> {
    let rows = state.core.push_subscriptions(&who).await?;
    Ok(Json(rows.iter().map(view).collect::<Vec<_>>()))
}

pub async fn unsubscribe(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    state.core.unsubscribe_push(&id, &who).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn test(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let delivery = state.core.test_push(&id, &who).await?;
    let (delivered, outcome) = match delivery {
        Delivery::Delivered => (true, "delivered"),
        Delivery::Gone => (
            false,
            "gone: the push service no longer knows this device; it was unsubscribed",
        ),
        Delivery::Failed => (
            false,
            "failed: the push service could not be reached or refused it",
        ),
    };
    Ok(Json(json!({ "delivered": delivered, "outcome": outcome })))
}

/// `POST /api/v1/push/answers/{capability}` `{"decision": "approve" | "deny"}`: no cookie or
/// bearer; the capability is the credential.
pub async fn answer(
    State(state): State<AppState>,
    Path(capability): Path<String>,
    ApiJson(body): ApiJson<CapabilityAnswer>,
) -> Result<impl IntoResponse, ApiError> {
    let resolution = match state.core.answer_with_capability(&capability, body).await {
        Ok(crate::server::core::Answered::Resolved(resolution)) => resolution,
        // One approval of several on a routed card: counted, the card waits for the others.
        Ok(crate::server::core::Answered::Counted { approvals, quorum }) => {
            return Ok(Json(json!({
                "status": "counted",
                "approvals": approvals.len(),
                "quorum": quorum,
                "outcome": "counted",
            })));
        }
        // Who answered and how, yes; the person's reason for it and the login (device) it
        // came from stay on the card (anyone reading an ntfy topic holds these capabilities).
        Err(Error::AlreadyResolved(mut r)) => {
            (r.reason, r.login) = (None, None);
            return Err(ApiError::Core(Error::AlreadyResolved(r)));
        }
        Err(Error::Gone(mut r)) => {
            (r.reason, r.login) = (None, None);
            return Err(ApiError::Core(Error::Gone(r)));
        }
        Err(other) => return Err(other.into()),
    };
    Ok(Json(json!({
        "approval_id": resolution.approval_id,
        "decision": resolution.decision,
        "actor": resolution.actor,
        "via": resolution.via,
        "resolved_at": resolution.resolved_at,
        "outcome": crate::server::push::payload::outcome(&resolution),
    })))
}
