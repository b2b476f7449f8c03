//! Configuration you can see and change: the CLI on the file, hot reload on a running server
//! (the next gate follows a new timeout; an invalid file keeps the last good config), the
//! API's protected keys, and the agent's guarded config_set.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// How long a file edit may take to reach the running server.
const RELOAD: Duration = Duration::from_secs(10);

/// `countersign config --data-dir <dir> <args…>`: (success, stdout, stderr).
fn cli(data_dir: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = countersign(&["config", "--data-dir"]);
    cmd.arg(data_dir).args(args);
    let out = run(cmd, None);
    (out.status.success(), out.stdout, out.stderr)
}

#[test]
fn the_cli_reads_and_writes_the_file_and_names_bad_keys_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (ok, out, _) = cli(data, &["path"]);
    assert!(ok);
    assert_eq!(out.trim(), data.join("config.toml").display().to_string());
    let (ok, out, _) = cli(data, &["get", "approvals.timeout_secs"]);
    assert!(ok);
    assert_eq!(out.trim(), "1800", "the default before the file exists");
    let (ok, out, _) = cli(data, &["set", "approvals.timeout_secs", "90"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("set approvals.timeout_secs = 90 (was 1800)"),
        "{out}"
    );
    let text = std::fs::read_to_string(data.join("config.toml")).unwrap();
    assert!(text.contains("timeout_secs = 90"), "{text}");
    assert_eq!(cli(data, &["get", "approvals.timeout_secs"]).1.trim(), "90");
    let (ok, out, _) = cli(data, &["set", "safety.paths", "[\"**/secret*\"]"]);
    assert!(ok, "{out}");
    assert_eq!(
        cli(data, &["get", "safety.paths"]).1.trim(),
        "[\"**/secret*\"]"
    );

    let (ok, _, err) = cli(data, &["set", "approvals.timeout_sec", "3"]);
    assert!(!ok);
    assert!(
        err.contains("unknown config key `approvals.timeout_sec`"),
        "{err}"
    );
    let (ok, _, err) = cli(data, &["set", "approvals.timeout_secs", "soon"]);
    assert!(!ok);
    assert!(
        err.contains("`approvals.timeout_secs` expects an integer"),
        "{err}"
    );
    let (ok, _, err) = cli(data, &["set", "approvals.timeout_secs", "0"]);
    assert!(!ok);
    assert!(err.contains("approvals.timeout_secs"), "{err}");
    let (ok, _, err) = cli(data, &["get", "nope.key"]);
    assert!(!ok && err.contains("unknown config key"), "{err}");
    // Failed sets changed nothing.
    assert_eq!(cli(data, &["get", "approvals.timeout_secs"]).1.trim(), "90");

    let (ok, out, _) = cli(data, &["show"]);
    assert!(ok);
    assert!(
        out.lines().any(|l| l.starts_with("approvals.timeout_secs")
            && l.contains("90")
            && l.contains("(file)")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("budget.max_tool_calls") && l.contains("(default)")),
        "{out}"
    );
    let (ok, out, _) = cli(data, &["show", "--json"]);
    assert!(ok);
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["key"] == "storage.database_url")
    );
}

/// One key's row of `GET /api/v1/config`.
async fn config_row(srv: &TestServer, key: &str) -> Value {
    let view = srv.get("/api/v1/config").await.expect(200);
    view["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == key)
        .cloned()
        .unwrap()
}

/// Waits (at most [`RELOAD`]) until `key` has `value`.
async fn until_value(srv: &TestServer, what: &str, name: &str, value: Value) {
    poll_until(what, RELOAD, async || {
        let row = config_row(srv, name).await;
        if row["value"] == value {
            Ok(())
        } else {
            Err(row)
        }
    })
    .await
}

/// The session's events once one of type `kind` is stored.
async fn events_until(srv: &TestServer, sid: &str, kind: &str) -> Vec<Value> {
    let snap = srv
        .wait_snapshot(sid, kind, |s| !of_type(&events(s), kind).is_empty())
        .await;
    events(&snap)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edit_on_a_running_server_sets_the_next_gates_deadline() {
    let srv = TestServer::start().await;
    let (ok, out, err) = cli(&srv.data_dir(), &["set", "approvals.timeout_secs", "42"]);
    assert!(ok, "{out}{err}");
    until_value(&srv, "the reload", "approvals.timeout_secs", json!(42)).await;
    assert_eq!(
        config_row(&srv, "approvals.timeout_secs").await["source"],
        "file"
    );
    let sid = srv.session().await;
    srv.send_msg(&sid, "run: echo x", Some("ask")).await;
    let events = events_until(&srv, &sid, "approval_request").await;
    let gate = events
        .iter()
        .find(|e| e["type"] == "approval_request")
        .unwrap();
    let window = (parse_time(gate["expires_at"].as_str().unwrap())
        - parse_time(gate["created_at"].as_str().unwrap()))
    .num_milliseconds();
    assert_eq!(window, 42_000, "{gate}");
    let audit = srv
        .get("/api/v1/audit?action=config_changed")
        .await
        .expect(200);
    assert_eq!(audit[0]["actor"], "file");
    assert_eq!(audit[0]["subject"], "approvals.timeout_secs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_file_keeps_the_last_good_config_and_says_why() {
    let srv = TestServer::start().await;
    let path = srv.data_dir().join("config.toml");
    std::fs::write(&path, "[approvals]\ntimeout_secs = 77\n").unwrap();
    until_value(&srv, "the reload", "approvals.timeout_secs", json!(77)).await;
    std::fs::write(&path, "[approvals]\ntimeout_secs = \"soon\"\n").unwrap();
    let view = poll_until("the error", RELOAD, async || {
        let view = srv.get("/api/v1/config").await.expect(200);
        if view["error"].is_string() {
            Ok(view)
        } else {
            Err(view)
        }
    })
    .await;
    assert!(
        view["error"].as_str().unwrap().contains("timeout_secs"),
        "{view}"
    );
    assert_eq!(
        config_row(&srv, "approvals.timeout_secs").await["value"],
        77,
        "the last good value stays"
    );
    std::fs::write(&path, "[approvals]\ntimeout_secs = 78\n").unwrap();
    until_value(&srv, "recovery", "approvals.timeout_secs", json!(78)).await;
    assert!(srv.get("/api/v1/config").await.expect(200)["error"].is_null());
}

/// The model's window is listed with what "auto" stands for, set as a number from the API,
/// refused when absurdly small, and set back to "auto".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_window_is_auto_or_a_number_and_says_what_auto_means() {
    let srv = TestServer::start().await;
    let key = "/api/v1/config/provider.context_tokens";
    let row = config_row(&srv, "provider.context_tokens").await;
    assert_eq!(
        (
            row["value"].clone(),
            row["default"].clone(),
            row["protected"].clone()
        ),
        (json!("auto"), json!("auto"), json!(false))
    );
    assert_eq!(
        row["note"],
        "auto: 128,000 tokens (the window of gpt-4o-mini); the demo provider does not use it"
    );
    srv.put(key, json!({"value": 65_536})).await.expect(200);
    let row = config_row(&srv, "provider.context_tokens").await;
    assert_eq!(
        (row["value"].clone(), row["source"].clone()),
        (json!(65_536), json!("file"))
    );
    assert!(
        row.get("note").is_none(),
        "a number says what it means: {row}"
    );
    for bad in [json!(0), json!(100), json!("big"), json!(true)] {
        let body = srv
            .put(key, json!({"value": bad}))
            .await
            .expect_error(400, "invalid_value");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("provider.context_tokens"),
            "{bad}: {message}"
        );
    }
    let body = srv
        .put(key, json!({"value": 100}))
        .await
        .expect_error(400, "invalid_value");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at least 4096"),
        "{body}"
    );
    assert_eq!(
        config_row(&srv, "provider.context_tokens").await["value"],
        65_536
    );
    srv.put(key, json!({"value": "auto"})).await.expect(200);
    assert_eq!(
        config_row(&srv, "provider.context_tokens").await["value"],
        "auto"
    );
    let (ok, out, _) = cli(&srv.data_dir(), &["get", "provider.context_tokens"]);
    assert!(ok);
    assert_eq!(out.trim(), "\"auto\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_refuses_protected_keys_and_bad_values_and_applies_the_rest() {
    let srv = TestServer::start().await;
    srv.put("/api/v1/config/safety.paths", json!({"value": []}))
        .await
        .expect_error(403, "protected_key");
    srv.put("/api/v1/config/approvals.timeout_secs", json!({"value": 5}))
        .await
        .expect_error(403, "protected_key");
    let body = srv
        .put(
            "/api/v1/config/tools.shell_timeout_secs",
            json!({"value": "soon"}),
        )
        .await
        .expect_error(400, "invalid_value");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools.shell_timeout_secs")
    );
    srv.put("/api/v1/config/no.such_key", json!({"value": 1}))
        .await
        .expect_error(400, "invalid_value");
    assert!(
        !srv.data_dir().join("config.toml").exists(),
        "refusals wrote nothing"
    );

    srv.put(
        "/api/v1/config/tools.shell_timeout_secs",
        json!({"value": 33}),
    )
    .await
    .expect(200);
    let key = config_row(&srv, "tools.shell_timeout_secs").await;
    assert_eq!(
        (key["value"].clone(), key["source"].clone()),
        (json!(33), json!("file"))
    );
    assert_eq!(config_row(&srv, "safety.paths").await["protected"], true);
    // Startup settings are listed read-only with their source; the token only masked.
    let addr = config_row(&srv, "server.addr").await;
    assert_eq!(
        (addr["protected"].clone(), addr["restart_required"].clone()),
        (json!(true), json!(true))
    );
    assert!(addr["value"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(config_row(&srv, "server.token").await["value"], "(masked)");
    let view = srv.get("/api/v1/config").await.expect(200);
    assert!(!view.to_string().contains(TOKEN), "the token never appears");
    let text = std::fs::read_to_string(srv.data_dir().join("config.toml")).unwrap();
    assert!(text.contains("shell_timeout_secs = 33"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_cannot_set_a_protected_key_even_in_yolo() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "set safety.paths = []", Some("yolo"))
        .await;
    let events = events_until(&srv, &sid, "turn_finished").await;
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["tool"], "config_set");
    assert_eq!(result["status"], "refused");
    assert!(result["output"].as_str().unwrap().contains("protected"));
    assert!(!events.iter().any(|e| e["type"] == "approval_request"));
    assert_eq!(config_row(&srv, "safety.paths").await["source"], "default");
}

/// `[review]` is the person's alone: neither the agent (even in yolo) nor the API may turn
/// the reviewer on or lower its thresholds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviewer_keys_are_the_persons_alone() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "set review.mode = \"on\"", Some("yolo"))
        .await;
    let events = events_until(&srv, &sid, "turn_finished").await;
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["tool"], "config_set");
    assert_eq!(result["status"], "refused");
    assert!(result["output"].as_str().unwrap().contains("protected"));
    for key in ["review.mode", "review.min_cards", "review.base_url"] {
        assert_eq!(config_row(&srv, key).await["protected"], true, "{key}");
    }
    srv.put("/api/v1/config/review.mode", json!({"value": "on"}))
        .await
        .expect_error(403, "protected_key");
    assert_eq!(config_row(&srv, "review.mode").await["value"], "off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permitted_key_set_by_the_agent_goes_through_a_card_and_lands_in_the_file() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    srv.send_msg(&sid, "set tools.shell_timeout_secs = 30", Some("yolo"))
        .await;
    // yolo runs config-class calls: no card.
    let events = events_until(&srv, &sid, "turn_finished").await;
    assert!(!events.iter().any(|e| e["type"] == "approval_request"));
    assert_eq!(
        config_row(&srv, "tools.shell_timeout_secs").await["value"],
        30
    );

    srv.send_msg(&sid, "set tools.output_limit_bytes = 4096", Some("ask"))
        .await;
    let events = events_until(&srv, &sid, "approval_request").await;
    let gate = events
        .iter()
        .rev()
        .find(|e| e["type"] == "approval_request")
        .unwrap()
        .clone();
    assert_eq!(gate["class"], "config");
    assert_eq!(
        gate["summary"],
        "config_set tools.output_limit_bytes: 65536 → 4096"
    );
    assert_eq!(
        config_row(&srv, "tools.output_limit_bytes").await["value"],
        65536,
        "not before the answer"
    );
    // An edit onto a protected key is refused like the agent's own call would be.
    let aid = gate["approval_id"].as_str().unwrap();
    srv.decide(
        &sid,
        aid,
        json!({"decision": "edit", "edits": {"key": "budget.max_tool_calls", "value": 1000}}),
    )
    .await
    .expect_error(403, "not_allowed");
    srv.decide(&sid, aid, json!({"decision": "approve"}))
        .await
        .expect(200);
    until_value(&srv, "the change", "tools.output_limit_bytes", json!(4096)).await;
    let text = std::fs::read_to_string(srv.data_dir().join("config.toml")).unwrap();
    assert!(text.contains("output_limit_bytes = 4096"), "{text}");
    let audit = srv
        .get("/api/v1/audit?action=config_changed")
        .await
        .expect(200);
    let last = audit.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "agent");
    assert_eq!(last["subject"], "tools.output_limit_bytes");
}
