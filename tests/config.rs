//! Configuration you can see and change: the CLI on the file, hot reload on a running server
//! (the next gate follows a new timeout; an invalid file keeps the last good config), the
//! API's protected keys, and the agent's guarded config_set.
#![cfg(feature = "ssr")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use countersign::server::{self, Server, settings::ServeArgs};
use serde_json::{Value, json};

const TOKEN: &str = "config-token-123";

fn cli(data_dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_countersign"))
        .arg("config")
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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

struct Srv {
    dir: tempfile::TempDir,
    base: String,
    client: reqwest::Client,
    running: Server,
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.running.shutdown.cancel();
    }
}

impl Srv {
    async fn start() -> Srv {
        let dir = tempfile::tempdir().unwrap();
        let args = ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            data_dir: Some(dir.path().join("data")),
            workspace: Some(dir.path().join("ws")),
            token: Some(TOKEN.into()),
            config: None,
        };
        let running = server::start(args.resolve().unwrap(), None).await.unwrap();
        Srv {
            base: format!("http://{}/api/v1", running.addr),
            client: reqwest::Client::new(),
            running,
            dir,
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let r = req.send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn key(&self, key: &str) -> Value {
        let (_, view) = self.call(reqwest::Method::GET, "/config", None).await;
        view["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == key)
            .cloned()
            .unwrap()
    }

    async fn until(&self, what: &str, check: impl AsyncFn(&Srv) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !check(self).await {
            assert!(Instant::now() < deadline, "waited 10 s for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn session(&self) -> String {
        self.call(reqwest::Method::POST, "/sessions", Some(json!({})))
            .await
            .1["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn send(&self, sid: &str, text: &str, mode: &str) {
        let (status, _) = self
            .call(
                reqwest::Method::POST,
                &format!("/sessions/{sid}/messages"),
                Some(json!({"text": text, "approval_mode": mode})),
            )
            .await;
        assert_eq!(status, 202);
    }

    async fn events(&self, sid: &str, until_type: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, snap) = self
                .call(reqwest::Method::GET, &format!("/sessions/{sid}"), None)
                .await;
            let events = snap["events"].as_array().unwrap().clone();
            if events.iter().any(|e| e["type"] == until_type) {
                return events;
            }
            assert!(Instant::now() < deadline, "no {until_type}: {events:#?}");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }
}

fn millis(rfc3339: &str) -> i64 {
    chrono_like(rfc3339)
}

/// Milliseconds of an RFC 3339 UTC time with milliseconds (`…T12:34:56.789Z`), enough to
/// subtract two times of the same day.
fn chrono_like(t: &str) -> i64 {
    let time = &t[11..23];
    let h: i64 = time[0..2].parse().unwrap();
    let m: i64 = time[3..5].parse().unwrap();
    let s: i64 = time[6..8].parse().unwrap();
    let ms: i64 = time[9..12].parse().unwrap();
    ((h * 60 + m) * 60 + s) * 1000 + ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edit_on_a_running_server_sets_the_next_gates_deadline() {
    let srv = Srv::start().await;
    let (ok, out, err) = cli(&srv.data(), &["set", "approvals.timeout_secs", "42"]);
    assert!(ok, "{out}{err}");
    srv.until("the reload", async |s| {
        s.key("approvals.timeout_secs").await["value"] == 42
    })
    .await;
    assert_eq!(srv.key("approvals.timeout_secs").await["source"], "file");
    let sid = srv.session().await;
    srv.send(&sid, "run: echo x", "ask").await;
    let events = srv.events(&sid, "approval_request").await;
    let gate = events
        .iter()
        .find(|e| e["type"] == "approval_request")
        .unwrap();
    let window =
        millis(gate["expires_at"].as_str().unwrap()) - millis(gate["created_at"].as_str().unwrap());
    assert_eq!(window, 42_000, "{gate}");
    let (_, audit) = srv
        .call(reqwest::Method::GET, "/audit?action=config_changed", None)
        .await;
    assert_eq!(audit[0]["actor"], "file");
    assert_eq!(audit[0]["subject"], "approvals.timeout_secs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_file_keeps_the_last_good_config_and_says_why() {
    let srv = Srv::start().await;
    let path = srv.data().join("config.toml");
    std::fs::write(&path, "[approvals]\ntimeout_secs = 77\n").unwrap();
    srv.until("the reload", async |s| {
        s.key("approvals.timeout_secs").await["value"] == 77
    })
    .await;
    std::fs::write(&path, "[approvals]\ntimeout_secs = \"soon\"\n").unwrap();
    srv.until("the error", async |s| {
        s.call(reqwest::Method::GET, "/config", None).await.1["error"].is_string()
    })
    .await;
    let (_, view) = srv.call(reqwest::Method::GET, "/config", None).await;
    assert!(
        view["error"].as_str().unwrap().contains("timeout_secs"),
        "{view}"
    );
    assert_eq!(
        srv.key("approvals.timeout_secs").await["value"],
        77,
        "the last good value stays"
    );
    std::fs::write(&path, "[approvals]\ntimeout_secs = 78\n").unwrap();
    srv.until("recovery", async |s| {
        s.key("approvals.timeout_secs").await["value"] == 78
    })
    .await;
    assert!(srv.call(reqwest::Method::GET, "/config", None).await.1["error"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_refuses_protected_keys_and_bad_values_and_applies_the_rest() {
    let srv = Srv::start().await;
    let (status, body) = srv
        .call(
            reqwest::Method::PUT,
            "/config/safety.paths",
            Some(json!({"value": []})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("protected_key"))
    );
    let (status, body) = srv
        .call(
            reqwest::Method::PUT,
            "/config/approvals.timeout_secs",
            Some(json!({"value": 5})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("protected_key"))
    );
    let (status, body) = srv
        .call(
            reqwest::Method::PUT,
            "/config/tools.shell_timeout_secs",
            Some(json!({"value": "soon"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_value"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools.shell_timeout_secs")
    );
    let (status, body) = srv
        .call(
            reqwest::Method::PUT,
            "/config/no.such_key",
            Some(json!({"value": 1})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_value"))
    );
    assert!(
        !srv.data().join("config.toml").exists(),
        "refusals wrote nothing"
    );

    let (status, body) = srv
        .call(
            reqwest::Method::PUT,
            "/config/tools.shell_timeout_secs",
            Some(json!({"value": 33})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let key = srv.key("tools.shell_timeout_secs").await;
    assert_eq!(
        (key["value"].clone(), key["source"].clone()),
        (json!(33), json!("file"))
    );
    assert_eq!(srv.key("safety.paths").await["protected"], true);
    let text = std::fs::read_to_string(srv.data().join("config.toml")).unwrap();
    assert!(text.contains("shell_timeout_secs = 33"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_cannot_set_a_protected_key_even_in_yolo() {
    let srv = Srv::start().await;
    let sid = srv.session().await;
    srv.send(&sid, "set safety.paths = []", "yolo").await;
    let events = srv.events(&sid, "turn_finished").await;
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["tool"], "config_set");
    assert_eq!(result["status"], "refused");
    assert!(result["output"].as_str().unwrap().contains("protected"));
    assert!(!events.iter().any(|e| e["type"] == "approval_request"));
    assert_eq!(srv.key("safety.paths").await["source"], "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permitted_key_set_by_the_agent_goes_through_a_card_and_lands_in_the_file() {
    let srv = Srv::start().await;
    let sid = srv.session().await;
    srv.send(&sid, "set tools.shell_timeout_secs = 30", "yolo")
        .await;
    // yolo runs config-class calls: no card.
    let events = srv.events(&sid, "turn_finished").await;
    assert!(!events.iter().any(|e| e["type"] == "approval_request"));
    assert_eq!(srv.key("tools.shell_timeout_secs").await["value"], 30);

    srv.send(&sid, "set tools.output_limit_bytes = 4096", "ask")
        .await;
    let events = srv.events(&sid, "approval_request").await;
    let gate = events
        .iter()
        .rev()
        .find(|e| e["type"] == "approval_request")
        .unwrap()
        .clone();
    assert_eq!(gate["class"], "config");
    assert_eq!(
        gate["summary"],
        "config_set tools.output_limit_bytes = 4096"
    );
    assert_eq!(
        srv.key("tools.output_limit_bytes").await["value"],
        65536,
        "not before the answer"
    );
    // An edit onto a protected key is refused like the agent's own call would be.
    let aid = gate["approval_id"].as_str().unwrap();
    let (status, body) = srv
        .call(
            reqwest::Method::POST,
            &format!("/sessions/{sid}/approvals/{aid}"),
            Some(json!({"decision": "edit", "edits": {"key": "budget.max_tool_calls", "value": 1000}})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("not_allowed"))
    );
    let (status, _) = srv
        .call(
            reqwest::Method::POST,
            &format!("/sessions/{sid}/approvals/{aid}"),
            Some(json!({"decision": "approve"})),
        )
        .await;
    assert_eq!(status, 200);
    srv.until("the change", async |s| {
        s.key("tools.output_limit_bytes").await["value"] == 4096
    })
    .await;
    let text = std::fs::read_to_string(srv.data().join("config.toml")).unwrap();
    assert!(text.contains("output_limit_bytes = 4096"), "{text}");
    let (_, audit) = srv
        .call(reqwest::Method::GET, "/audit?action=config_changed", None)
        .await;
    let last = audit.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "agent");
    assert_eq!(last["subject"], "tools.output_limit_bytes");
}
