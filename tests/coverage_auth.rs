//! Auth and CSRF on every route that tests/api/auth.rs leaves out — the decision, inbox,
//! rules, audit and config routes and every UI server function — and the protected config
//! keys refused over the API and the UI's `set_config`, leaving the file as it was.
//!
//! Build and run with `cargo test --features ssr --test coverage_auth`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use reqwest::Method;
use serde_json::{Value, json};
use support::*;

/// `/login?token=…` → the `Cookie` header value to send back.
async fn login_cookie(ts: &TestServer) -> String {
    let r = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    assert_eq!(r.status.as_u16(), 303, "{r:?}");
    let set = r.header("set-cookie").expect("Set-Cookie").to_owned();
    let pair = set.split(';').next().unwrap().trim().to_owned();
    assert!(pair.starts_with("countersign_session="), "{set}");
    pair
}

/// One route: method, path, JSON body (server functions always have one), and what the right
/// bearer token gets.
struct Route {
    method: Method,
    path: String,
    body: Option<Value>,
    ok: u16,
}

fn route(method: Method, path: &str, body: Option<Value>, ok: u16) -> Route {
    Route {
        method,
        path: path.to_owned(),
        body,
        ok,
    }
}

/// A server function: `POST /api/ui/<name>` with a JSON body; success is 200.
fn server_fn(name: &str, args: Value) -> Route {
    route(Method::POST, &format!("/api/ui/{name}"), Some(args), 200)
}

impl Route {
    fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    fn request(&self, ts: &TestServer) -> reqwest::RequestBuilder {
        let rb = ts.anon(self.method.clone(), &self.path);
        match &self.body {
            Some(body) => rb.json(body),
            None => rb,
        }
    }

    fn changes_state(&self) -> bool {
        !matches!(self.method, Method::GET | Method::HEAD | Method::OPTIONS)
    }
}

/// Everything the routes under test could change: sessions and their logs, pending gates,
/// rules, the audit chain, the config as served and the config file on disk.
async fn world(ts: &TestServer) -> Value {
    let config_file = std::fs::read_to_string(ts.root().join("config.toml")).ok();
    json!({
        "state": ts.state().await,
        "inbox": ts.inbox().await,
        "rules": ts.rules().await,
        "audit": ts.get("/api/v1/audit").await.expect(200),
        "config": ts.get("/api/v1/config").await.expect(200),
        "config_file": config_file,
    })
}

/// Sends a message in ask mode that opens a card; returns the card's approval id.
async fn pending_gate(ts: &TestServer, sid: &str, text: &str) -> String {
    ts.send_msg(sid, text, Some("ask")).await;
    aid(&ts.wait_gate(sid).await)
}

/// A session-scoped rule made through Always allow on a shell card; returns its id.
async fn make_rule(ts: &TestServer, sid: &str, command: &str) -> String {
    let turn = ts
        .send_msg(sid, &format!("run: {command}"), Some("ask"))
        .await;
    let gate = aid(&ts.wait_gate(sid).await);
    let v = ts
        .decide(sid, &gate, json!({"decision": "allow_always"}))
        .await
        .expect(200);
    ts.wait_released(sid, &turn).await;
    str_of(&v, "rule_id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decision_rules_config_audit_and_every_server_function_check_the_credential() {
    let ts = TestServer::configured("[tools]\nshell_timeout_secs = 77\n").await;
    let cookie = login_cookie(&ts).await;

    // Sessions with something to act on: a rule each in A and B, a pending card in A and B
    // (one for the REST decision, one for the server function), E with a card to cancel,
    // C to delete, D idle for a message.
    let a = ts.session().await;
    let b = ts.session().await;
    let rule_a = make_rule(&ts, &a, "echo a").await;
    let rule_b = make_rule(&ts, &b, "echo b").await;
    let gate_a = pending_gate(&ts, &a, "write a.txt: a").await;
    let gate_b = pending_gate(&ts, &b, "write b.txt: b").await;
    let c = ts.session().await;
    let d = ts.session().await;
    let e = ts.session().await;
    pending_gate(&ts, &e, "write e.txt: e").await;

    let routes = vec![
        route(
            Method::POST,
            &format!("/api/v1/sessions/{a}/approvals/{gate_a}"),
            Some(json!({"decision": "deny", "reason": "no"})),
            200,
        ),
        route(Method::GET, "/api/v1/approvals", None, 200),
        route(Method::GET, "/api/v1/approvals?status=pending", None, 200),
        route(Method::GET, "/api/v1/rules", None, 200),
        route(
            Method::DELETE,
            &format!("/api/v1/rules/{rule_a}"),
            None,
            204,
        ),
        route(Method::GET, "/api/v1/audit", None, 200),
        route(
            Method::GET,
            "/api/v1/audit?after=1&action=rule_created",
            None,
            200,
        ),
        route(Method::GET, "/api/v1/audit/verify", None, 200),
        route(Method::GET, "/api/v1/config", None, 200),
        route(
            Method::PUT,
            "/api/v1/config/tools.shell_timeout_secs",
            Some(json!({"value": 33})),
            200,
        ),
        server_fn("snapshot", json!({"session_id": a})),
        server_fn("older_events", json!({"session_id": a, "before": 2})),
        server_fn("sessions", json!({})),
        server_fn("create_session", json!({})),
        server_fn("delete_session", json!({"session_id": c})),
        server_fn(
            "set_mode",
            json!({"session_id": d, "approval_mode": "plan"}),
        ),
        server_fn(
            "send_message",
            json!({"session_id": d, "text": "hello", "approval_mode": "ask"}),
        ),
        server_fn("cancel", json!({"session_id": e})),
        server_fn(
            "decide",
            json!({"session_id": b, "approval_id": gate_b, "input": {"decision": "deny"}}),
        ),
        server_fn("pending", json!({})),
        server_fn("rules", json!({})),
        server_fn(
            "revoke_rule",
            json!({"rule_id": rule_b, "client_id": "tab"}),
        ),
        server_fn(
            "audit",
            json!({"after": 0, "action": null, "subject": null}),
        ),
        server_fn("verify_audit", json!({})),
        server_fn("config", json!({})),
        server_fn(
            "set_config",
            json!({"key": "tools.shell_timeout_secs", "value": 34, "client_id": "tab"}),
        ),
    ];
    let before = world(&ts).await;

    // No credential, a wrong bearer, a cookie that login never handed out: 401.
    let wrong: [(&str, &str, String); 3] = [
        ("none", "", String::new()),
        (
            "wrong bearer",
            "authorization",
            "Bearer wrong-token-456".into(),
        ),
        (
            "forged cookie",
            "cookie",
            format!("countersign_session={TOKEN}"),
        ),
    ];
    for r in &routes {
        for (label, header, value) in &wrong {
            let mut rb = r.request(&ts);
            if !header.is_empty() {
                rb = rb.header(*header, value);
            }
            let resp = send(rb).await;
            assert_eq!(
                resp.status.as_u16(),
                401,
                "{} with {label}: {}",
                r.label(),
                resp.body
            );
            resp.expect_error(401, "unauthorized");
        }
    }
    assert_eq!(
        world(&ts).await,
        before,
        "a refused credential changed something"
    );

    // The real cookie from another site: every state-changing request is 403 csrf.
    let hostile: [(&str, String); 2] = [
        ("origin", "http://evil.example".into()),
        ("sec-fetch-site", "cross-site".into()),
    ];
    for r in routes.iter().filter(|r| r.changes_state()) {
        for (header, value) in &hostile {
            let resp = send(
                r.request(&ts)
                    .header("cookie", &cookie)
                    .header(*header, value),
            )
            .await;
            assert_eq!(
                resp.status.as_u16(),
                403,
                "{} with the cookie and {header}: {value}: {}",
                r.label(),
                resp.body
            );
            resp.expect_error(403, "csrf");
        }
    }
    assert_eq!(
        world(&ts).await,
        before,
        "a cross-site write changed something"
    );
    // Reads are not state-changing: the same cookie from another site may read.
    for r in routes.iter().filter(|r| !r.changes_state()) {
        let resp = send(
            r.request(&ts)
                .header("cookie", &cookie)
                .header("origin", "http://evil.example"),
        )
        .await;
        assert_eq!(resp.status.as_u16(), r.ok, "{}: {}", r.label(), resp.body);
    }

    // The right bearer gets through to each operation (even from another origin).
    for r in &routes {
        let resp = send(
            r.request(&ts)
                .bearer_auth(TOKEN)
                .header("sec-fetch-site", "cross-site"),
        )
        .await;
        assert_eq!(resp.status.as_u16(), r.ok, "{}: {}", r.label(), resp.body);
    }
    // And each did what it says.
    let rules = ts.rules().await;
    assert!(rules.is_empty(), "both rules revoked: {rules:?}");
    ts.get(&format!("/api/v1/sessions/{c}"))
        .await
        .expect_error(404, "unknown_session");
    let resolved = |sid: &str, gate: &str| {
        let (sid, gate) = (sid.to_owned(), gate.to_owned());
        let ts = &ts;
        async move {
            ts.wait_event(&sid, "the card's resolution", |e| {
                e["type"] == "approval_resolved" && e["approval_id"] == gate.as_str()
            })
            .await
        }
    };
    let res_a = resolved(&a, &gate_a).await;
    assert_eq!(
        (res_a["decision"].clone(), res_a["actor"].clone()),
        (json!("deny"), json!("token:admin"))
    );
    let res_b = resolved(&b, &gate_b).await;
    assert_eq!(res_b["decision"], "deny");
    let config = ts.get("/api/v1/config").await.expect(200);
    let timeout = config["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "tools.shell_timeout_secs")
        .unwrap()
        .clone();
    assert_eq!(timeout["value"], 34, "{timeout}");
}

/// Every protected key family, with a value of the right type (so only the protection can
/// refuse it): the API's `PUT /config/{key}` and the UI's `set_config` answer
/// `403 protected_key`, the file stays byte for byte what it was and nothing is audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protected_key_family_is_refused_over_the_api_and_the_file_is_unchanged() {
    let original = "# hand-written\n[tools]\nshell_timeout_secs = 77\n";
    let ts = TestServer::configured(original).await;
    let file = ts.root().join("config.toml");
    let protected: Vec<(&str, Value)> = vec![
        ("approvals.timeout_secs", json!(5)),
        ("approvals.decision_timeout", json!("deny")),
        ("approvals.default_mode", json!("yolo")),
        ("safety.paths", json!([])),
        ("safety.commands", json!([])),
        ("budget.max_tool_calls", json!(0)),
        ("budget.max_turn_secs", json!(0)),
        ("budget.max_tokens", json!(0)),
        ("storage.database_url", json!("sqlite:///tmp/elsewhere.db")),
        ("storage.synchronous", json!("normal")),
        ("provider.api_key_env", json!("COUNTERSIGN_TOKEN")),
        ("provider.base_url", json!("http://evil.example/v1")),
        ("tools.sandbox.mode", json!("off")),
        ("tools.sandbox.network", json!("off")),
        ("tools.sandbox.extra_read", json!(["/"])),
        ("tools.sandbox.extra_write", json!(["/"])),
        ("tools.env_passthrough", json!(["COUNTERSIGN_TOKEN"])),
    ];
    let view = ts.get("/api/v1/config").await.expect(200);
    let row = |view: &Value, key: &str| {
        view["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} is not listed: {view}"))
    };
    for (key, _) in &protected {
        let r = row(&view, key);
        assert_eq!(r["protected"], true, "{r}");
        assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }

    for (key, value) in &protected {
        let body = ts
            .put(&format!("/api/v1/config/{key}"), json!({"value": value}))
            .await
            .expect_error(403, "protected_key");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(key),
            "the refusal names {key}: {body}"
        );
        let r = send(
            ts.req(Method::POST, "/api/ui/set_config")
                .json(&json!({"key": key, "value": value, "client_id": "tab"})),
        )
        .await;
        r.expect_error(403, "protected_key");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            original,
            "refusing {key} touched the file"
        );
    }
    let after = ts.get("/api/v1/config").await.expect(200);
    for (key, _) in &protected {
        assert_eq!(row(&after, key), row(&view, key), "{key} changed");
    }
    let audit = ts
        .get("/api/v1/audit?action=config_changed")
        .await
        .expect(200);
    assert_eq!(audit, json!([]), "a refused change was audited");

    // Not vacuous: an ordinary key next to them is accepted and lands in the file.
    for key in ["tools.shell_timeout_secs", "provider.request_timeout_secs"] {
        ts.put(&format!("/api/v1/config/{key}"), json!({"value": 31}))
            .await
            .expect(200);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("shell_timeout_secs = 31"), "{text}");
}
