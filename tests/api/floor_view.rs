//! The person's view of a floor write (issue 39.1, "a diff where the file exists"): what the
//! call would change in the file as it is now, made on demand for an admin credential, masked
//! on the server, and never in the card, the log or the audit. A phone's `approve` token and an
//! outside agent's `gates` token are refused; a symlink out of the workspace, a file too large,
//! an answered card and a card that is not a floor write each get their own answer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// What the file held before the agent asked, with a key the view must never send as it is.
const OLD_KEY: &str = "sk-proj-OLDSECRET0123456789zz";
const NEW_KEY: &str = "sk-proj-NEWSECRET9876543210qq";

fn view_route(sid: &str, aid: &str) -> String {
    format!("/api/v1/sessions/{sid}/approvals/{aid}/floor-diff")
}

/// A fresh session whose agent asks to write `.env` (a floor card): its id and the card.
async fn floor_write(ts: &TestServer, content: &str) -> (String, Value) {
    let sid = ts.session().await;
    ts.send_msg(&sid, &format!("write .env: {content}"), Some("yolo"))
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor", "{card}");
    (sid, card)
}

async fn made_token(ts: &TestServer, name: &str, scope: &str) -> String {
    let made = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

async fn cookie_of_a_browser(ts: &TestServer) -> String {
    let login = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    assert_eq!(login.status.as_u16(), 303, "{login:?}");
    login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_sees_what_changes_masked_and_nothing_of_it_is_kept() {
    let ts = TestServer::start().await;
    std::fs::write(
        ts.ws(".env"),
        format!("OPENAI_API_KEY={OLD_KEY}\nDEBUG=true\n"),
    )
    .unwrap();
    let (sid, card) = floor_write(&ts, &format!("OPENAI_API_KEY={NEW_KEY}\\nDEBUG=false")).await;
    let route = view_route(&sid, &aid(&card));

    // Neither a phone's token nor an outside agent's may look.
    for (name, scope) in [("phone", "approve"), ("hook", "gates")] {
        let secret = made_token(&ts, name, scope).await;
        let refused = Api::new(&ts.base).with_token(&secret).get(&route).await;
        let body = refused.expect_error(403, "forbidden").to_string();
        assert!(!body.contains("DEBUG"), "{scope}: {body}");
    }

    // The browser logged in as the person does, never cached, the old key masked.
    let cookie = cookie_of_a_browser(&ts).await;
    let seen = send(ts.anon(Method::GET, &route).header("cookie", &cookie)).await;
    assert_eq!(seen.header("cache-control"), Some("no-store"));
    let view = seen.expect(200);
    assert_eq!(view["applicable"], true);
    assert_eq!(view["exists"], true);
    assert_eq!(view["too_large"], false);
    let diff = view["diff"].as_str().expect("a diff");
    assert!(
        diff.contains("-DEBUG=true") && diff.contains("+DEBUG=false"),
        "{diff}"
    );
    assert!(diff.contains("-OPENAI_API_KEY=sk-p…9zz"), "{diff}");
    assert!(
        !seen.body.contains(OLD_KEY) && !seen.body.contains("OLDSECRET"),
        "{diff}"
    );

    // Once answered, the view is closed, and no record holds what the file held.
    ts.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);
    ts.get(&route).await.expect_error(409, "already_resolved");
    let log = ts.snapshot(&sid).await.to_string();
    let audit = ts.get("/api/v1/audit").await.expect(200);
    for (what, text) in [("log", log), ("audit", audit.to_string())] {
        assert!(!text.contains("OLDSECRET"), "the {what} holds the old key");
        assert!(
            !text.contains("DEBUG=true"),
            "the {what} holds the file's content"
        );
    }
    let viewed = ts
        .get("/api/v1/audit?action=floor_file_viewed")
        .await
        .expect(200);
    let viewed = viewed.as_array().expect("entries");
    assert_eq!(viewed.len(), 1, "{viewed:#?}");
    assert_eq!(viewed[0]["actor"], "browser");
    assert_eq!(viewed[0]["subject"], aid(&card));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_follows_no_link_out_and_reads_no_large_file() {
    let ts = TestServer::start().await;
    // A `.env` swapped, while the card waits, for a symlink to a file outside the workspace
    // (a call naming such a link is refused before any card): refused, its text unsent.
    std::fs::write(ts.ws(".env"), "A=0\n").unwrap();
    let (sid, card) = floor_write(&ts, "A=1").await;
    let away = tempfile::tempdir().unwrap();
    std::fs::write(away.path().join("real.env"), "ELSEWHERE=leaked\n").unwrap();
    std::fs::remove_file(ts.ws(".env")).unwrap();
    std::os::unix::fs::symlink(away.path().join("real.env"), ts.ws(".env")).unwrap();
    let refused = ts.get(&view_route(&sid, &aid(&card))).await;
    let body = refused.expect_error(403, "not_allowed").to_string();
    assert!(!body.contains("leaked"), "{body}");
    ts.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);

    // A 1 MiB file is not read: the view says it is too large.
    std::fs::remove_file(ts.ws(".env")).unwrap();
    std::fs::write(ts.ws(".env"), "X=1\n".repeat(256 * 1024)).unwrap();
    let (sid, card) = floor_write(&ts, "A=1").await;
    let view = ts.get(&view_route(&sid, &aid(&card))).await.expect(200);
    assert_eq!(
        view,
        json!({"applicable": true, "exists": true, "diff": null, "too_large": true})
    );
    ts.decide(&sid, &aid(&card), json!({"decision": "deny"}))
        .await
        .expect(200);

    // No file yet: a new one.
    std::fs::remove_file(ts.ws(".env")).unwrap();
    let (sid, card) = floor_write(&ts, "A=1").await;
    let view = ts.get(&view_route(&sid, &aid(&card))).await.expect(200);
    assert_eq!(
        view,
        json!({"applicable": true, "exists": false, "diff": null, "too_large": false})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_is_not_a_floor_write_has_no_view() {
    let ts = TestServer::start().await;
    std::fs::write(ts.ws("notes.md"), "hello\n").unwrap();
    let sid = ts.session().await;
    ts.send_msg(&sid, "write notes.md: bye", Some("ask")).await;
    let card = ts.wait_gate(&sid).await;
    assert_ne!(card["reason"], "safety_floor");
    let view = ts.get(&view_route(&sid, &aid(&card))).await.expect(200);
    assert_eq!(view["applicable"], false, "{view}");
    assert_eq!(view["diff"], Value::Null);
    ts.get(&view_route(&sid, "no-such-card"))
        .await
        .expect_error(404, "unknown_approval");
}

/// An edit's view: the lines around the change come from the file alone, and are masked too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edits_view_masks_the_lines_around_the_change() {
    let ts = TestServer::start().await;
    std::fs::write(
        ts.ws(".env"),
        format!("OPENAI_API_KEY={OLD_KEY}\nDEBUG=true\n"),
    )
    .unwrap();
    let sid = ts.session().await;
    ts.send_msg(&sid, "edit .env: DEBUG=true => DEBUG=false", Some("yolo"))
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["reason"], "safety_floor", "{card}");
    let seen = ts.get(&view_route(&sid, &aid(&card))).await;
    let view = seen.expect(200);
    let diff = view["diff"].as_str().expect("a diff");
    assert!(diff.contains(" OPENAI_API_KEY=sk-p…9zz"), "{diff}");
    assert!(
        diff.contains("-DEBUG=true") && diff.contains("+DEBUG=false"),
        "{diff}"
    );
    assert!(!seen.body.contains("OLDSECRET"), "{diff}");
}
