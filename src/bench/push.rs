//! Figure 11, the human round trip through a notification: a gate opens → its push reaches a
//! push service (a local one on loopback, standing in for the browser's) → the notification's
//! Approve posts its capability → `tool_result` arrives on the session's feed. What a person
//! with a phone waits on, less their thumb.
//!
//! Each gate gets a subscription of its own: `ring` spends an ECDH key on one decryption.

use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::agreement::{ECDH_P256, EphemeralPrivateKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::harness::str_field;
use super::{BenchError, BenchServer, Figure, Result, common_conditions, ms, percentile};
use crate::protocol::Timestamp;
use crate::server::push::encrypt::decrypt_once;

/// The message that opens one gate a notification can answer: a command it shows whole (a
/// write card's notification only opens the card). `true` runs in a process of its own, so the
/// answer leg holds a process start.
const PUSHED_GATE: &str = "run: true";

/// A push as the local service received it.
struct Received {
    endpoint: usize,
    body: Bytes,
    at_ms: i64,
}

/// The local push service: takes every POST, tells the loop, answers 201.
async fn start_push_service() -> Result<(String, mpsc::UnboundedReceiver<Received>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new()
        .route(
            "/push/{n}",
            axum::routing::post(
                |State(tx): State<mpsc::UnboundedSender<Received>>,
                 Path(n): Path<usize>,
                 body: Bytes| async move {
                    let _ = tx.send(Received {
                        endpoint: n,
                        body,
                        at_ms: Timestamp::now_ms(),
                    });
                    http::StatusCode::CREATED
                },
            ),
        )
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{addr}"), rx))
}

struct Samples {
    total_ms: Vec<f64>,
    push_ms: Vec<f64>,
    answer_ms: Vec<f64>,
}

/// One device's push subscription: the key and secret its pushes are read with.
struct Device {
    id: String,
    key: EphemeralPrivateKey,
    public: Vec<u8>,
    auth: [u8; 16],
}

pub async fn run(server: &BenchServer, n: usize) -> Result<Figure> {
    let (service, mut pushes) = start_push_service().await?;
    let sid = server.create_session("ask").await?;
    let mut feed = server.events(&sid, 0).await?;
    let mut samples = Samples {
        total_ms: Vec::with_capacity(n),
        push_ms: Vec::with_capacity(n),
        answer_ms: Vec::with_capacity(n),
    };
    let mut previous: Option<String> = None;
    for i in 0..n {
        let device = subscribe(server, &service, i).await?;
        if let Some(old) = previous.replace(device.id.clone()) {
            server
                .http
                .delete(format!("{}/api/v1/push/subscriptions/{old}", server.base))
                .send()
                .await?
                .error_for_status()?;
        }
        server.send_message(&sid, PUSHED_GATE).await?;
        let (capability, push_leg) = read_push(&mut pushes, i, device).await?;
        let after_tap = tap_approve(server, &capability, &mut feed).await?;
        // The push leg on the wall clock (the gate's own timestamp is in ms), the answer leg
        // on the monotonic one; what the client spent between them (decrypting) is left out.
        samples.push_ms.push(push_leg);
        samples.answer_ms.push(ms(after_tap));
        samples.total_ms.push(push_leg + ms(after_tap));
    }
    Ok(figure(&samples, n))
}

/// A fresh device subscribed to pushes at the local service's endpoint `i`.
async fn subscribe(server: &BenchServer, service: &str, i: usize) -> Result<Device> {
    let rng = SystemRandom::new();
    let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng)
        .map_err(|_| BenchError::Protocol("no random key".into()))?;
    let public = key
        .compute_public_key()
        .map_err(|_| BenchError::Protocol("no public key".into()))?
        .as_ref()
        .to_vec();
    let mut auth = [0u8; 16];
    rng.fill(&mut auth)
        .map_err(|_| BenchError::Protocol("no random auth secret".into()))?;
    let subscribed = server
        .http
        .post(format!("{}/api/v1/push/subscriptions", server.base))
        .json(&json!({
            "endpoint": format!("{service}/push/{i}"),
            "keys": {"p256dh": URL_SAFE_NO_PAD.encode(&public), "auth": URL_SAFE_NO_PAD.encode(auth)},
        }))
        .send()
        .await?
        .error_for_status()?
        .json::<Value>()
        .await?;
    Ok(Device {
        id: str_field(&subscribed, "id")?,
        key,
        public,
        auth,
    })
}

/// The gate's push to endpoint `i` (a closing push of an earlier one may arrive in between),
/// decrypted: its capability, and ms from the gate opening to the push arriving.
async fn read_push(
    pushes: &mut mpsc::UnboundedReceiver<Received>,
    i: usize,
    device: Device,
) -> Result<(String, f64)> {
    let push = loop {
        let got = pushes
            .recv()
            .await
            .ok_or_else(|| BenchError::Protocol("the push service stopped".into()))?;
        if got.endpoint == i {
            break got;
        }
    };
    let plain = decrypt_once(&push.body, device.key, &device.public, &device.auth)
        .ok_or_else(|| BenchError::Protocol("a push did not decrypt".into()))?;
    let message: Value = serde_json::from_slice(&plain)?;
    let capability = str_field(&message, "capability")?;
    let opened_ms = message
        .get("opened_at")
        .and_then(Value::as_str)
        .and_then(|t| Timestamp::from(t.to_owned()).unix_ms())
        .ok_or_else(|| BenchError::Protocol("a push without opened_at".into()))?;
    Ok((capability, (push.at_ms - opened_ms) as f64))
}

/// The notification's Approve, timed from the tap to the tool's result on the feed.
async fn tap_approve(
    server: &BenchServer,
    capability: &str,
    feed: &mut super::sse::Sse,
) -> Result<std::time::Duration> {
    let tap = Instant::now();
    let answer = server
        .http
        .post(format!("{}/api/v1/push/answers/{capability}", server.base))
        .json(&json!({"decision": "approve"}));
    let (answered, result) = tokio::join!(answer.send(), async {
        let ev = feed.next_of("tool_result").await;
        (ev, tap.elapsed())
    });
    answered?.error_for_status()?;
    let (result, after_tap) = result;
    result?;
    feed.next_of("turn_finished").await?;
    Ok(after_tap)
}

fn figure(samples: &Samples, n: usize) -> Figure {
    let p = |v: &Vec<f64>, q: f64| percentile(v, q);
    Figure {
        id: 11,
        name: "human round trip via push",
        values: vec![
            ("p50", p(&samples.total_ms, 50.0), "ms"),
            ("p99", p(&samples.total_ms, 99.0), "ms"),
            ("push p50", p(&samples.push_ms, 50.0), "ms"),
            ("answer p50", p(&samples.answer_ms, 50.0), "ms"),
        ],
        target: "none (reported)",
        met: None,
        conditions: format!(
            "{n} gates (`{PUSHED_GATE}`) in sequence on one session: gate opened (its created_at, ms) -> encrypted \
             push (RFC 8291, VAPID) received by a push service on loopback -> the notification's \
             Approve (POST /api/v1/push/answers/<capability>, no credential) -> tool_result on \
             the open SSE feed; `push` is gate opened -> push received, `answer` the tap -> \
             tool_result; the decryption and the person's thumb are outside the figure; a fresh \
             subscription per gate; {}",
            common_conditions()
        ),
    }
}
