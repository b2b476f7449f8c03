//! REST handlers for people (`/api/v1/people`, admin only; issue 41).

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::response::IntoResponse;
use http::StatusCode;

use super::json::ApiJson;
use crate::protocol::{NewPerson, PersonChange};
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

/// `POST /api/v1/people`: `201` with the person invited.
pub async fn invite(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<NewPerson>,
) -> Result<impl IntoResponse, ApiError> {
    let person = state.core.invite_person(&body, &who).await?;
    Ok((StatusCode::CREATED, Json(person)))
}

pub async fn list(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.list_people().await?))
}

pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.person(&id).await?))
}

pub async fn change(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PersonChange>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(state.core.change_person(&id, &body, &who).await?))
}

/// `DELETE /api/v1/people/{id}`: `204`; their browser sessions end at once.
pub async fn remove(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    state.core.remove_person(&id, &who).await?;
    Ok(StatusCode::NO_CONTENT)
}
