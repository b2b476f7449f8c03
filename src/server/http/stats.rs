//! `GET /api/v1/stats/decisions`: the person's answering habits over a window (admin).

use axum::Json;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use serde::Deserialize;

use crate::server::http::error::ApiError;
use crate::server::state::AppState;

/// The window, both ends optional RFC 3339 times (`core::stats::window` reads them).
#[derive(Deserialize)]
pub struct StatsQuery {
    since: Option<String>,
    until: Option<String>,
}

pub async fn decisions(
    State(state): State<AppState>,
    Query(query): Query<StatsQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let stats = state
        .core
        .decision_stats(query.since.as_deref(), query.until.as_deref())
        .await?;
    Ok(([(http::header::CACHE_CONTROL, "no-store")], Json(stats)))
}
