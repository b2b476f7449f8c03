//! Answers sent by a plain HTML form: the card's Approve and Deny work before the page's
//! script has loaded, and without it (progressive enhancement). The form posts here, the
//! answer goes through the same `Core::decide` as every other answer (same checks, same
//! digest, same actor), and the browser is sent back to where it came from.

use axum::Form;
use axum::extract::{Extension, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::protocol::{ApprovalId, DecisionRequest};
use crate::server::core::Answer;
use crate::server::core::ids;
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

/// Where the form came from, and so where the browser goes back to: a closed set, so the
/// redirect can only land on one of this server's own pages.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Back {
    Session,
    Inbox,
}

/// The fields a card's form sends (unknown fields are refused like any other body's).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct DecideForm {
    session_id: String,
    approval_id: String,
    digest: String,
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    back: Back,
}

impl DecideForm {
    fn back_to(&self) -> String {
        match self.back {
            Back::Session => format!("/sessions/{}#gate-{}", self.session_id, self.approval_id),
            Back::Inbox => "/inbox".to_owned(),
        }
    }
}

/// `POST /forms/decide`: records the answer and goes back (`303`); an answer that cannot be
/// recorded gets a small page saying why, with the way back.
pub async fn decide(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Form(form): Form<DecideForm>,
) -> Response {
    // The ids go into the way back (a header and a link): only an id's characters.
    let is_id = |id: &str| {
        !id.is_empty()
            && id.len() <= 100
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !is_id(&form.session_id) || !is_id(&form.approval_id) {
        let err = ApiError::InvalidRequest("session_id and approval_id must be ids".into());
        return refused(&err, "/inbox");
    }
    let back = form.back_to();
    // A form can only approve or deny: Edit and Always allow need the page's script.
    if !matches!(form.decision.as_str(), "approve" | "deny") {
        let err = ApiError::InvalidRequest(format!(
            "a form answers `approve` or `deny`, not `{}`",
            form.decision
        ));
        return refused(&err, &back);
    }
    let request = DecisionRequest {
        decision: Some(form.decision.clone()),
        digest: Some(form.digest.clone()),
        // The reason field belongs to Deny: text left in it does not ride on an approval.
        reason: form
            .reason
            .clone()
            .filter(|r| form.decision == "deny" && !r.trim().is_empty()),
        ..DecisionRequest::default()
    };
    let answer = match Answer::try_from(request) {
        Ok(answer) => answer,
        Err(err) => return refused(&ApiError::Core(err), &back),
    };
    let session_id = match ids::session_id(&form.session_id) {
        Ok(id) => id,
        Err(err) => return refused(&ApiError::Core(err), &back),
    };
    let approval_id = ApprovalId::from(form.approval_id.as_str());
    match state
        .core
        .decide(&session_id, &approval_id, answer, &who)
        .await
    {
        Ok(_) => Redirect::to(&back).into_response(),
        Err(err) => refused(&ApiError::Core(err), &back),
    }
}

/// The page a refused form answer gets: the status, the reason in words, the way back
/// (`back` holds only checked ids).
fn refused(err: &ApiError, back: &str) -> Response {
    let message = ammonia::clean_text(&err.to_string());
    let code = err.code();
    let page = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not recorded · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Your answer was not recorded</h1>
<p class="login-error" role="alert" data-testid="form-error" data-code="{code}">{message}</p>
<p><a href="{back}" data-testid="form-back">Back to the card</a></p></main></body></html>"#
    );
    (err.status(), Html(page)).into_response()
}
