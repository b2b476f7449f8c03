//! Storage faults: when the database cannot commit, a decision answers 503 with the JSON
//! error, the gate stays pending, nothing is half-applied, and reads keep working.
//!
//! The fault is real: a second connection holds SQLite's write lock (as another process
//! would), so the server's own commit fails after its busy timeout.
#![cfg(feature = "ssr")]

use std::time::Duration;

use countersign::server::{self, settings::ServeArgs};
use serde_json::{Value, json};
use sqlx::Connection;

const TOKEN: &str = "fault-token-123";

async fn get(client: &reqwest::Client, url: String) -> (u16, Value) {
    let r = client.get(url).bearer_auth(TOKEN).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let r = client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_that_cannot_commit_is_503_and_the_gate_stays_pending() {
    let dir = tempfile::tempdir().unwrap();
    let args = ServeArgs {
        addr: "127.0.0.1:0".parse().unwrap(),
        data_dir: Some(dir.path().join("data")),
        workspace: Some(dir.path().join("ws")),
        token: Some(TOKEN.into()),
        config: None,
    };
    let running = server::start(args.resolve().unwrap(), None).await.unwrap();
    let base = format!("http://{}/api/v1", running.addr);
    let client = reqwest::Client::new();

    let (_, session) = post(&client, format!("{base}/sessions"), json!({})).await;
    let sid = session["id"].as_str().unwrap().to_owned();
    post(
        &client,
        format!("{base}/sessions/{sid}/messages"),
        json!({"text": "write fault.txt: x"}),
    )
    .await;
    let mut pending = Value::Null;
    for _ in 0..100 {
        pending = get(&client, format!("{base}/approvals?status=pending"))
            .await
            .1;
        if pending.as_array().is_some_and(|a| a.len() == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let aid = pending[0]["approval_id"].as_str().unwrap().to_owned();
    let (_, before) = get(&client, format!("{base}/sessions/{sid}")).await;

    // Another connection takes the write lock and keeps it.
    let db = dir.path().join("data/countersign.db");
    let mut blocker = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut blocker)
        .await
        .unwrap();

    let (status, body) = post(
        &client,
        format!("{base}/sessions/{sid}/approvals/{aid}"),
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "storage_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was changed")
    );

    // Reads still work while writes cannot, and nothing moved.
    let (status, during) = get(&client, format!("{base}/sessions/{sid}")).await;
    assert_eq!(status, 200);
    assert_eq!(during["events"], before["events"]);
    assert_eq!(during["pending"][0]["approval_id"], aid.as_str());
    assert!(!dir.path().join("ws/fault.txt").exists());

    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    drop(blocker);

    // The same gate is still decidable, and the tool runs once.
    let (status, body) = post(
        &client,
        format!("{base}/sessions/{sid}/approvals/{aid}"),
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for _ in 0..100 {
        if dir.path().join("ws/fault.txt").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/fault.txt")).unwrap(),
        "x"
    );
    running.shutdown.cancel();
}
