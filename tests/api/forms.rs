//! A card answered by its plain HTML form (`POST /forms/decide`), as a browser without the
//! page's script sends it: the same checks as every answer, then back to the page.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// A pending shell card in a fresh session.
async fn card(ts: &TestServer, command: &str) -> (String, Value) {
    let sid = ts.create_id(json!({})).await;
    ts.send_msg(&sid, &format!("run: {command}"), Some("ask"))
        .await;
    let card = ts.wait_gate(&sid).await;
    (sid, card)
}

fn fields(sid: &str, card: &Value, decision: &str, back: &str) -> Vec<(String, String)> {
    vec![
        ("session_id".into(), sid.into()),
        (
            "approval_id".into(),
            card["approval_id"].as_str().unwrap().into(),
        ),
        ("digest".into(), card["digest"].as_str().unwrap().into()),
        ("decision".into(), decision.into()),
        ("back".into(), back.into()),
    ]
}

async fn post_form(ts: &TestServer, form: &[(String, String)]) -> Resp {
    send(ts.req(Method::POST, "/forms/decide").form(form)).await
}

async fn resolution(ts: &TestServer, sid: &str, aid: &str) -> Value {
    ts.wait_event(sid, "the resolution", |e| {
        e["type"] == "approval_resolved" && e["approval_id"] == aid
    })
    .await
}

#[tokio::test]
async fn the_page_renders_each_card_as_a_form_that_answers_without_the_script() {
    let ts = TestServer::start().await;
    let (sid, c) = card(&ts, "echo from-the-form").await;
    let aid = c["approval_id"].as_str().unwrap().to_owned();
    // The server's page holds the form, whole (rendered in order, nothing left to a script).
    let page = send(ts.req(Method::GET, &format!("/sessions/{sid}"))).await;
    assert_eq!(page.status.as_u16(), 200);
    assert!(
        page.body.contains(r#"action="/forms/decide""#),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!(r#"name="approval_id" value="{aid}""#))
    );
    assert!(page.body.contains(r#"name="decision" value="approve""#));
    let inbox = send(ts.req(Method::GET, "/inbox")).await;
    assert!(
        inbox
            .body
            .contains(&format!(r#"name="approval_id" value="{aid}""#)),
        "the inbox lists it"
    );
    assert!(inbox.body.contains(r#"name="back" value="inbox""#));

    // Text left in the Deny field does not ride on an approval.
    let mut form = fields(&sid, &c, "approve", "session");
    form.push(("reason".into(), "typed, then changed my mind".into()));
    let answered = post_form(&ts, &form).await;
    assert_eq!(answered.status.as_u16(), 303, "{}", answered.body);
    assert_eq!(
        answered.header("location"),
        Some(format!("/sessions/{sid}#gate-{aid}").as_str())
    );
    let r = resolution(&ts, &sid, &aid).await;
    assert_eq!(r["decision"], "approve");
    assert_eq!(r["answered_by"], "user");
    assert!(r["reason"].is_null(), "{r}");

    // Deny, with the reason the agent reads; back to the Inbox when it came from there.
    let (sid, c) = card(&ts, "echo deny-me").await;
    let aid = c["approval_id"].as_str().unwrap().to_owned();
    let mut form = fields(&sid, &c, "deny", "inbox");
    form.push(("reason".into(), "not on a Friday".into()));
    let answered = post_form(&ts, &form).await;
    assert_eq!(answered.header("location"), Some("/inbox"));
    let r = resolution(&ts, &sid, &aid).await;
    assert_eq!(r["decision"], "deny");
    assert_eq!(r["reason"], "not on a Friday");

    // Already answered: a page that says so, with the way back; nothing changes.
    let again = post_form(&ts, &fields(&sid, &c, "approve", "inbox")).await;
    assert_eq!(again.status.as_u16(), 409);
    assert!(
        again.body.contains(r#"data-code="already_resolved""#),
        "{}",
        again.body
    );
    assert!(again.body.contains(r#"href="/inbox""#));
    assert_eq!(resolution(&ts, &sid, &aid).await["decision"], "deny");
}

#[tokio::test]
async fn a_form_answer_that_is_not_what_the_card_shows_or_allows_is_refused() {
    let ts = TestServer::start().await;
    let (sid, c) = card(&ts, "echo careful").await;
    let aid = c["approval_id"].as_str().unwrap().to_owned();
    // Another digest: the card changed since the page was drawn.
    let mut stale = fields(&sid, &c, "approve", "session");
    stale[2].1 = "0".repeat(64);
    let refused = post_form(&ts, &stale).await;
    assert_eq!(refused.status.as_u16(), 409, "{}", refused.body);
    assert!(
        refused.body.contains(r#"data-code="stale_digest""#),
        "{}",
        refused.body
    );
    // A form only approves or denies; an edit or a standing rule needs the page.
    for decision in ["allow_always", "edit", "yes"] {
        let refused = post_form(&ts, &fields(&sid, &c, decision, "session")).await;
        assert_eq!(refused.status.as_u16(), 400, "{decision}: {}", refused.body);
        assert!(refused.body.contains("Your answer was not recorded"));
    }
    // A way back that is not one of ours, or a field the form does not have.
    let refused = post_form(&ts, &fields(&sid, &c, "approve", "https://evil.example/")).await;
    assert!(refused.status.is_client_error(), "{}", refused.status);
    let mut odd = fields(&sid, &c, "approve", "session");
    odd[0].1 = "x\r\nSet-Cookie: a=b".into();
    let refused = post_form(&ts, &odd).await;
    assert_eq!(refused.status.as_u16(), 400, "{}", refused.body);
    assert!(refused.header("set-cookie").is_none());
    let mut extra = fields(&sid, &c, "approve", "session");
    extra.push(("rule".into(), "*".into()));
    assert!(post_form(&ts, &extra).await.status.is_client_error());
    // An agent's `gates` token may not answer, by form or otherwise.
    let made = ts
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&ts.base).with_token(made["token"].as_str().unwrap());
    let refused = send(
        agent
            .req(Method::POST, "/forms/decide")
            .form(&fields(&sid, &c, "approve", "session")),
    )
    .await;
    assert_eq!(refused.status.as_u16(), 403);
    ts.assert_still_pending(&sid, &aid).await;
}

#[tokio::test]
async fn a_form_posted_from_another_site_with_the_cookie_is_refused() {
    let ts = TestServer::start().await;
    let (sid, c) = card(&ts, "echo csrf").await;
    let aid = c["approval_id"].as_str().unwrap().to_owned();
    let login = send(ts.anon(Method::GET, &format!("/login?token={}", ts.token))).await;
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let from = |site: &str| {
        ts.anon(Method::POST, "/forms/decide")
            .header("cookie", &cookie)
            .header("sec-fetch-site", site)
            .form(&fields(&sid, &c, "approve", "session"))
    };
    let refused = send(from("cross-site")).await;
    assert_eq!(refused.status.as_u16(), 403);
    ts.assert_still_pending(&sid, &aid).await;
    let answered = send(from("same-origin")).await;
    assert_eq!(answered.status.as_u16(), 303, "{}", answered.body);
    let r = resolution(&ts, &sid, &aid).await;
    assert_eq!(r["actor"], "browser");
}

#[tokio::test]
async fn a_page_planted_in_the_bundle_folder_runs_sandboxed() {
    let ts = TestServer::start().await;
    let planted = send(ts.req(Method::GET, "/pkg/planted.html")).await;
    let csp = planted.header("content-security-policy").unwrap_or("");
    assert!(csp.starts_with("sandbox"), "{csp}");
    assert!(csp.contains("form-action 'none'"), "{csp}");
}
