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

/// How an answer is sent: with a browser's cookie, or as a bearer.
enum Through<'a> {
    Cookie(&'a str),
    Bearer(&'a str),
}

/// A card waiting in a new session of its own, answered `body` through `who`: its id and the
/// resolution its session's log recorded.
async fn answer_a_card(ts: &TestServer, who: Through<'_>, body: Value) -> (String, Value) {
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo x > x.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    match who {
        Through::Cookie(cookie) => send(
            ts.anon(Method::POST, &route)
                .header("cookie", cookie)
                .json(&body),
        )
        .await
        .expect(200),
        Through::Bearer(secret) => Api::new(&ts.base)
            .with_token(secret)
            .post(&route, body)
            .await
            .expect(200),
    };
    let found: Vec<Value> = events(&ts.snapshot(&sid).await)
        .into_iter()
        .filter(|e| e["type"] == "approval_resolved" && e["approval_id"] == gate.as_str())
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    (gate, found[0].clone())
}

/// The `gate_resolved` audit entry of each gate, in order.
async fn audited(ts: &TestServer, gates: [&str; 3]) -> [Value; 3] {
    let audit = ts
        .get("/api/v1/audit?action=gate_resolved")
        .await
        .expect(200);
    let entries = audit.as_array().unwrap();
    gates.map(|gate| {
        entries
            .iter()
            .find(|e| e["subject"] == gate)
            .cloned()
            .unwrap_or_else(|| panic!("no entry for {gate}: {audit:#}"))
    })
}

/// The audit's entries for the desk's, the phone's and the bearer's answers: the same actor,
/// and the browser login in the detail where there was one; the chain still holds.
async fn audit_names_them(ts: &TestServer, gates: [&str; 3], desk_login: &Value) {
    let [desk_entry, phone_entry, bearer_entry] = audited(ts, gates).await;
    assert_eq!(desk_entry["actor"], "browser", "{desk_entry}");
    assert_eq!(desk_entry["detail"]["login"], *desk_login, "{desk_entry}");
    assert_eq!(phone_entry["actor"], "token:phone", "{phone_entry}");
    assert_eq!(
        phone_entry["detail"]["login"]["device"], "Chrome on Pixel 8",
        "{phone_entry}"
    );
    assert_eq!(bearer_entry["actor"], "token:phone", "{bearer_entry}");
    assert!(
        bearer_entry["detail"].get("login").is_none(),
        "{bearer_entry}"
    );
    let verdict = ts.get("/api/v1/audit/verify").await.expect(200);
    assert_eq!(verdict["ok"], true, "{verdict}");
}

/// The admin's browser, a phone logged in with its token, the same token as a bearer: each
/// answer's actor is the credential, `login` says which browser, and the audit says the same.
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

    let (by_desk, desk_said) = answer_a_card(&ts, Through::Cookie(&desk), approve.clone()).await;
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

    let (by_phone, phone_said) = answer_a_card(&ts, Through::Cookie(&phone), approve.clone()).await;
    assert_eq!(phone_said["actor"], "token:phone", "{phone_said}");
    assert_eq!(
        phone_said["login"]["device"], "Chrome on Pixel 8",
        "{phone_said}"
    );
    assert_ne!(phone_said["login"]["id"], desk_id.as_str(), "{phone_said}");

    // The same token as a bearer: no browser login to name.
    let (by_bearer, bearer_said) =
        answer_a_card(&ts, Through::Bearer(&phone_secret), approve).await;
    assert_eq!(bearer_said["actor"], "token:phone", "{bearer_said}");
    assert!(bearer_said.get("login").is_none(), "{bearer_said}");

    // The same browser login is the same id on its next answer.
    let (_, again) = answer_a_card(&ts, Through::Cookie(&desk), json!({"decision": "deny"})).await;
    assert_eq!(again["login"]["id"], desk_id.as_str(), "{again}");

    audit_names_them(&ts, [&by_desk, &by_phone, &by_bearer], &desk_said["login"]).await;
}

/// A `view` token (a dashboard, issue 41) logs a browser in to read: its page says `view`
/// and draws no answer control; its answers, by REST, by form and as a bearer, are refused
/// `403` and the card still waits.
#[tokio::test]
async fn a_view_token_logs_a_dashboard_in_that_reads_and_answers_nothing() {
    let ts = TestServer::start().await;
    let made = ts
        .post("/api/v1/tokens", json!({"name": "wall", "scope": "view"}))
        .await
        .expect(201);
    assert_eq!(made["owner"], "admin");
    let secret = made["token"].as_str().unwrap().to_owned();
    let cookie = browser_login(&ts, &secret, DESKTOP).await;
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "run: echo x > x.txt", None).await;
    let gate = aid(&ts.wait_gate(&sid).await);
    let page = send(
        ts.anon(Method::GET, &format!("/sessions/{sid}"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(page.status.as_u16(), 200, "{page:?}");
    assert!(page.body.contains(r#"data-scope="view""#), "{}", page.body);
    assert!(page.body.contains(r#"data-testid="card-read-only""#));
    assert!(!page.body.contains(r#"action="/forms/decide""#));
    assert!(
        !page.body.contains("data-person="),
        "the admin's token names no person"
    );
    let route = format!("/api/v1/sessions/{sid}/approvals/{gate}");
    let by_cookie = send(
        ts.anon(Method::POST, &route)
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"decision": "approve"})),
    )
    .await;
    assert_eq!(by_cookie.status.as_u16(), 403, "{by_cookie:?}");
    let by_form = send(
        ts.anon(Method::POST, "/forms/decide")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .form(&[
                ("session_id", sid.as_str()),
                ("approval_id", gate.as_str()),
                ("decision", "approve"),
            ]),
    )
    .await;
    assert_eq!(by_form.status.as_u16(), 403, "{by_form:?}");
    let by_bearer = Api::new(&ts.base)
        .with_token(&secret)
        .post(&route, json!({"decision": "approve"}))
        .await;
    assert_eq!(by_bearer.status.as_u16(), 403, "{by_bearer:?}");
    let pending = ts.get("/api/v1/approvals").await.expect(200);
    assert!(pending.to_string().contains(gate.as_str()), "{pending}");
}
