//! Who answered, as the record names it (issue 39.5): `approval_resolved.actor` stays the
//! credential protocol.md spells (`browser`, `token:<name>`), and `login` beside it says which
//! browser login and its device, from the credential; the audit's entry carries it, so it
//! never names a bare `browser`. A bearer's answer names its token and no login.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

const DESKTOP: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const PIXEL: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36";

/// Logs a browser in with `secret` from `user_agent`: the `Cookie` header to send back.
async fn browser_login(ts: &TestServer, secret: &str, user_agent: &str) -> String {
    let login = send(
        ts.anon(Method::GET, &format!("/login?token={secret}"))
            .header("user-agent", user_agent),
    )
    .await;
    assert_eq!(login.status.as_u16(), 303, "{login:?}");
    login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned()
}

/// A card waiting in a new session of its own; its route and id.
async fn waiting_card(ts: &TestServer, file: &str) -> (String, String, String) {
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, &format!("run: echo x > {file}"), None)
        .await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    (sid, gate, route)
}

/// The session's one resolution of `gate`, from its log.
async fn resolution_of(ts: &TestServer, sid: &str, gate: &str) -> Value {
    let found: Vec<Value> = events(&ts.snapshot(sid).await)
        .into_iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == gate)
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    found[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_names_its_browser_login_and_device_and_the_audit_says_so() {
    let ts = TestServer::start().await;
    let desk = browser_login(&ts, &ts.token, DESKTOP).await;
    let made = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    let phone_secret = made["token"].as_str().unwrap().to_owned();
    let phone = browser_login(&ts, &phone_secret, PIXEL).await;
    let approve = json!({"decision": "approve", "client_id": "tab-1"});

    // The admin's browser, from its tab.
    let (sid, by_desk, route) = waiting_card(&ts, "a.txt").await;
    send(
        ts.anon(Method::POST, &route)
            .header("cookie", &desk)
            .json(&approve),
    )
    .await
    .expect(200);
    let desk_said = resolution_of(&ts, &sid, &by_desk).await;
    assert_eq!(desk_said["actor"], "browser", "{desk_said}");
    assert_eq!(desk_said["client_id"], "tab-1", "{desk_said}");
    assert_eq!(
        desk_said["login"]["device"], "Firefox on Linux",
        "{desk_said}"
    );
    let desk_id = desk_said["login"]["id"].as_str().unwrap().to_owned();
    assert!(
        desk_id.len() == 12 && desk_id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{desk_said}"
    );
    assert!(!desk.contains(&desk_id), "the id is no part of the cookie");

    // The phone, logged in with its token.
    let (sid, by_phone, route) = waiting_card(&ts, "b.txt").await;
    send(
        ts.anon(Method::POST, &route)
            .header("cookie", &phone)
            .json(&approve),
    )
    .await
    .expect(200);
    let phone_said = resolution_of(&ts, &sid, &by_phone).await;
    assert_eq!(phone_said["actor"], "token:phone", "{phone_said}");
    assert_eq!(
        phone_said["login"]["device"], "Chrome on Pixel 8",
        "{phone_said}"
    );
    assert_ne!(phone_said["login"]["id"], desk_id.as_str(), "{phone_said}");

    // The same token as a bearer: no browser login to name.
    let (sid, by_bearer, route) = waiting_card(&ts, "c.txt").await;
    Api::new(&ts.base)
        .with_token(&phone_secret)
        .post(&route, approve.clone())
        .await
        .expect(200);
    let bearer_said = resolution_of(&ts, &sid, &by_bearer).await;
    assert_eq!(bearer_said["actor"], "token:phone", "{bearer_said}");
    assert!(bearer_said.get("login").is_none(), "{bearer_said}");

    // The same browser login is the same id on its next answer.
    let (sid, again, route) = waiting_card(&ts, "d.txt").await;
    send(
        ts.anon(Method::POST, &route)
            .header("cookie", &desk)
            .json(&json!({"decision": "deny"})),
    )
    .await
    .expect(200);
    assert_eq!(
        resolution_of(&ts, &sid, &again).await["login"]["id"],
        desk_id.as_str()
    );

    let audit = ts
        .get("/api/v1/audit?action=gate_resolved")
        .await
        .expect(200);
    let entry = |gate: &str| {
        audit
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["subject"] == gate)
            .cloned()
            .unwrap_or_else(|| panic!("no entry for {gate}: {audit:#}"))
    };
    let desk_entry = entry(&by_desk);
    assert_eq!(desk_entry["actor"], "browser", "{desk_entry}");
    assert_eq!(
        desk_entry["detail"]["login"]["device"], "Firefox on Linux",
        "{desk_entry}"
    );
    assert_eq!(
        desk_entry["detail"]["login"]["id"],
        desk_id.as_str(),
        "{desk_entry}"
    );
    let phone_entry = entry(&by_phone);
    assert_eq!(phone_entry["actor"], "token:phone", "{phone_entry}");
    assert_eq!(
        phone_entry["detail"]["login"]["device"], "Chrome on Pixel 8",
        "{phone_entry}"
    );
    let bearer_entry = entry(&by_bearer);
    assert_eq!(bearer_entry["actor"], "token:phone", "{bearer_entry}");
    assert!(
        bearer_entry["detail"].get("login").is_none(),
        "{bearer_entry}"
    );
    ts.get("/api/v1/audit/verify").await.expect(200)["ok"]
        .as_bool()
        .filter(|ok| *ok)
        .expect("the chain holds");
}
