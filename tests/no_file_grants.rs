//! A file an agent can read grants nothing (issue 37, point 1). An outside agent runs as the
//! same OS user as Countersign, so every file Countersign keeps is the agent's to read: here
//! the agent reads every byte of the data dir, the config and every cell of the database while
//! the admin token, a phone's token, a browser login, an unspent login link and a card's answer
//! capability are all alive, then tries every string it found (and the old seal made from the
//! VAPID key) as each kind of credential against its own card. Nothing answers it; the genuine
//! credentials, held only by their holders, still do.
//! Run with `cargo test --features ssr --test no_file_grants`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use reqwest::Method;
use serde_json::{Value, json};
use support::*;

/// A stand-in for an ntfy server: what it was sent.
async fn ntfy() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = axum::Router::new()
        .fallback(
            |State(seen): State<Arc<Mutex<Vec<Value>>>>, body: axum::body::Bytes| async move {
                if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                    seen.lock().unwrap().push(v);
                }
                "{}"
            },
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

/// Every file under `dir`, as bytes.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                found.push((path.display().to_string(), bytes));
            }
        }
    }
    found
}

/// Every text cell of every table of the database, read as any process of this user could.
fn database_cells(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut cells = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let width = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..width {
                if let Ok(text) = row.get::<_, String>(i) {
                    cells.push(text);
                }
            }
        }
    }
    cells
}

/// The strings a reader would try as secrets: every run of secret-like characters, 16 to 200
/// long, and (for JSON cells) every string value.
fn candidates(texts: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let secretish = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    for text in texts {
        for word in text.split(|c: char| !secretish(c)) {
            if (16..=200).contains(&word.len()) {
                found.insert(word.to_owned());
            }
        }
        if let Ok(json) = serde_json::from_str::<Value>(text) {
            strings_of(&json, &mut found);
        }
    }
    found
}

fn strings_of(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::String(s) if (16..=200).contains(&s.len()) => {
            found.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, found)),
        Value::Object(fields) => fields.values().for_each(|v| strings_of(v, found)),
        _ => {}
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The capability an older build sealed, made from the VAPID key file (the attack that opened
/// this issue).
fn sealed_from_the_vapid_key(data: &Path, grant: &Value) -> String {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use hmac::Mac;
    use sha2::Digest;
    let pkcs8 = std::fs::read(data.join("vapid_private_key")).unwrap();
    let mut root = sha2::Sha256::new();
    root.update(b"countersign-seal-root\0");
    root.update(&pkcs8);
    let key = format!(
        "countersign-seal:answer-capability:{}",
        hex::encode(root.finalize())
    );
    let body = B64.encode(grant.to_string());
    let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    format!("cs1.{body}.{}", B64.encode(mac.finalize().into_bytes()))
}

/// Every way `candidate` could answer the card, tried; the statuses that were not a refusal.
async fn try_everything(ts: &TestServer, sid: &str, aid: &str, candidate: &str) -> Vec<String> {
    let decide = format!("/api/v1/sessions/{sid}/approvals/{aid}");
    let approve = json!({"decision": "approve"});
    let mut won = Vec::new();
    let bearer = send(
        ts.anon(Method::POST, &decide)
            .bearer_auth(candidate)
            .json(&approve),
    )
    .await;
    let cookie = send(
        ts.anon(Method::POST, &decide)
            .header("cookie", format!("countersign_session={candidate}"))
            .header("sec-fetch-site", "same-origin")
            .json(&approve),
    )
    .await;
    let capability = send(
        ts.anon(Method::POST, &format!("/api/v1/push/answers/{candidate}"))
            .json(&approve),
    )
    .await;
    let login = send(ts.anon(Method::GET, &format!("/login?code={candidate}"))).await;
    for (how, resp) in [
        ("bearer", &bearer),
        ("cookie", &cookie),
        ("capability", &capability),
        ("login code", &login),
    ] {
        if resp.status.is_success() || resp.status.is_redirection() {
            won.push(format!("{how} {candidate}: {}", resp.status));
        }
    }
    won
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_reads_every_file_cannot_answer_its_own_card() {
    let (ntfy_base, ntfy_seen) = ntfy().await;
    let ts = TestServer::configured(&format!(
        "[notify]\nwebhook_url = \"{ntfy_base}/topic\"\nformat = \"ntfy\"\npush_test_endpoints = true\n"
    ))
    .await;
    // The live credentials, each held only by its holder (this test's memory).
    let phone = ts
        .post(
            "/api/v1/tokens",
            json!({"name": "phone", "scope": "approve"}),
        )
        .await
        .expect(201);
    let phone_secret = str_of(&phone, "token").to_owned();
    let login = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    let cookie = login
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let unspent_code = ts.core().mint_login_code().await.unwrap();
    let agent = {
        let made = ts
            .post("/api/v1/tokens", json!({"name": "agent", "scope": "gates"}))
            .await
            .expect(201);
        Api::new(&ts.base).with_token(str_of(&made, "token"))
    };
    // The agent's own card: a command it wants to run (its ntfy message carries Approve).
    let card = agent
        .post(
            "/api/v1/gates",
            json!({"source": "claude-code", "external_session": "thief", "cwd": "/home/me/app",
                   "tool": {"name": "Bash", "input": {"command": "git push origin main"}}}),
        )
        .await
        .expect(201);
    assert_eq!(card["status"], "pending", "{card}");
    let (sid, aid) = (
        str_of(&card, "session_id").to_owned(),
        str_of(&card, "approval_id").to_owned(),
    );
    let message = poll_until("the card's ntfy message", SOON, async || {
        let seen = ntfy_seen.lock().unwrap().clone();
        seen.into_iter()
            .find(|m| m.to_string().contains(&aid) && m.to_string().contains("/push/answers/"))
            .ok_or("not yet")
    })
    .await;
    let capability = message.to_string();
    let capability = capability
        .split("/push/answers/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    assert!(capability.starts_with("cs2."), "{capability}");

    // Everything Countersign keeps, as the agent reads it.
    let mut texts: Vec<String> = Vec::new();
    let mut files = files_under(&ts.data_dir());
    files.extend(
        files_under(ts.root())
            .into_iter()
            .filter(|(p, _)| p.ends_with(".toml")),
    );
    let secrets = [
        ("the admin token", TOKEN.to_owned()),
        ("the phone's token", phone_secret.clone()),
        (
            "the browser's cookie",
            cookie.split_once('=').unwrap().1.to_owned(),
        ),
        ("an unspent login link", unspent_code.clone()),
        ("the card's capability", capability.clone()),
    ];
    for (path, bytes) in &files {
        for (what, secret) in &secrets {
            assert!(!contains(bytes, secret), "{path} holds {what}");
        }
        texts.push(String::from_utf8_lossy(bytes).into_owned());
    }
    assert!(
        files.iter().any(|(p, _)| p.ends_with("vapid_private_key")),
        "{files:?}"
    );
    texts.extend(database_cells(&ts.db()));
    let mut tried = candidates(&texts);
    tried.insert(sealed_from_the_vapid_key(
        &ts.data_dir(),
        &json!({"s": sid, "a": aid, "d": card_digest(&ts, &aid).await,
                "h": {"k": "ntfy", "v": "x"}, "e": i64::MAX}),
    ));
    assert!(
        tried.len() > 50,
        "the reader found little to try: {}",
        tried.len()
    );
    let mut won = Vec::new();
    for candidate in &tried {
        won.extend(try_everything(&ts, &sid, &aid, candidate).await);
    }
    assert!(won.is_empty(), "read from disk, these answered: {won:#?}");
    // Nor does its own gates token, which it holds.
    agent
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await
        .expect_error(403, "forbidden");
    let state = agent.get(&format!("/api/v1/gates/{aid}")).await.expect(200);
    assert_eq!(state["status"], "pending", "{state}");

    // The genuine ones, held by their holders, still work: the test could have seen a win.
    let via_cookie = send(
        ts.anon(Method::GET, "/api/v1/sessions")
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(via_cookie.status.as_u16(), 200);
    let link = send(ts.anon(Method::GET, &format!("/login?code={unspent_code}"))).await;
    assert_eq!(link.status.as_u16(), 303);
    Api::new(&ts.base)
        .with_token(&phone_secret)
        .get("/api/v1/approvals")
        .await
        .expect(200);
    let answered = send(
        ts.anon(Method::POST, &format!("/api/v1/push/answers/{capability}"))
            .json(&json!({"decision": "deny"})),
    )
    .await;
    assert_eq!(answered.status.as_u16(), 200, "{}", answered.body);
}

/// The card's digest, as the inbox shows it.
async fn card_digest(ts: &TestServer, aid: &str) -> String {
    ts.get("/api/v1/approvals")
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["approval_id"] == aid)
        .map(|c| str_of(c, "digest").to_owned())
        .unwrap()
}

/// Starts a server on `dir` with `token` as its admin token (`--token`).
async fn start_with_token(
    dir: &Path,
    token: &str,
) -> Result<countersign::server::Server, countersign::server::StartError> {
    let args = countersign::server::settings::ServeArgs {
        addr: "127.0.0.1:0".parse().unwrap(),
        data_dir: Some(dir.join("data")),
        workspace: Some(dir.join("ws")),
        token: Some(token.into()),
        config: None,
        database_url: None,
    };
    countersign::server::start(args.resolve().unwrap(), None).await
}

/// An agent that can start a server cannot make a token it holds the admin token: not its own
/// `gates` token (what `COUNTERSIGN_TOKEN` holds in its environment), and not any token while
/// the person's server runs on the data dir.
#[tokio::test]
async fn a_second_server_cannot_make_the_agent_s_token_the_admin_s() {
    let ts = TestServer::scripted([]).await;
    let made = ts
        .post("/api/v1/tokens", json!({"name": "agent", "scope": "gates"}))
        .await
        .expect(201);
    let gates = made["token"].as_str().unwrap().to_owned();
    let dir = ts.root().to_path_buf();

    // While the person's server runs, no other starts on its data dir, whatever its token.
    for token in [gates.as_str(), "a-token-the-agent-chose-1234"] {
        let second = start_with_token(&dir, token).await;
        let err = second
            .err()
            .expect("a second server on a running data dir is refused");
        assert!(err.to_string().contains("already runs"), "{err}");
    }
    let admin = send(ts.anon(Method::GET, "/api/v1/tokens").bearer_auth(TOKEN)).await;
    assert_eq!(
        admin.status.as_u16(),
        200,
        "the person's token still works: {admin:?}"
    );
    let as_gates = send(ts.anon(Method::GET, "/api/v1/tokens").bearer_auth(&gates)).await;
    assert_eq!(as_gates.status.as_u16(), 403, "{as_gates:?}");

    // Stopped, the data dir may be served again, but never with a named token as the admin's.
    let dir = ts.stop().await;
    let refused = start_with_token(dir.path(), &gates).await;
    let err = refused
        .err()
        .expect("a named token is never the admin token");
    assert!(err.to_string().contains("named token `agent`"), "{err}");
    let ts = TestServer::start_in(dir, None, None).await;
    let as_gates = send(ts.anon(Method::GET, "/api/v1/tokens").bearer_auth(&gates)).await;
    assert_eq!(as_gates.status.as_u16(), 403, "{as_gates:?}");
}
