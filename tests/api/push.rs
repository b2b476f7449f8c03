//! Web Push (docs/api.md "Push"): the server tells a person's subscribed devices that a card
//! waits, and a notification's Approve or Deny answers it through a one-time capability.
//!
//! The tests play both outside parties with code of their own, independent of the server's
//! `ring`: a push service on loopback ([`PushService`], recording every request and answering
//! a scripted status per device) and a browser ([`Device`], a P-256 key pair and an auth
//! secret) that decrypts each push as RFC 8291 says and checks its VAPID signature (RFC 8292).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aes_gcm::aead::Aead;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::support::*;

/// The push service here is on loopback, which only this setting allows.
const PUSH_TEST: &str = "[notify]\npush_test_endpoints = true\n";

// ---------------------------------------------------------------------------------------------
// A push service on loopback
// ---------------------------------------------------------------------------------------------

/// One request the push service received.
#[derive(Clone, Debug)]
struct Received {
    /// The device's name: the last part of its endpoint's path.
    device: String,
    method: String,
    headers: HeaderMap,
    body: Vec<u8>,
    at: Instant,
}

impl Received {
    #[track_caller]
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers))
            .to_str()
            .unwrap()
    }
}

#[derive(Clone, Default)]
struct ServiceState {
    received: Arc<Mutex<Vec<Received>>>,
    /// Statuses to answer, per device, in order; 201 once none is left.
    script: Arc<Mutex<HashMap<String, VecDeque<u16>>>>,
}

/// A stand-in for a browser vendor's push service: every device's endpoint is
/// `http://127.0.0.1:<port>/push/<device>`.
struct PushService {
    addr: SocketAddr,
    state: ServiceState,
}

impl PushService {
    async fn start() -> PushService {
        async fn record(
            State(state): State<ServiceState>,
            method: Method,
            uri: Uri,
            headers: HeaderMap,
            body: Bytes,
        ) -> StatusCode {
            let device = uri.path().rsplit('/').next().unwrap_or("").to_owned();
            let status = state
                .script
                .lock()
                .unwrap()
                .get_mut(&device)
                .and_then(VecDeque::pop_front)
                .unwrap_or(201);
            state.received.lock().unwrap().push(Received {
                device,
                method: method.to_string(),
                headers,
                body: body.to_vec(),
                at: Instant::now(),
            });
            StatusCode::from_u16(status).unwrap()
        }
        let state = ServiceState::default();
        let app = axum::Router::new()
            .fallback(record)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        PushService { addr, state }
    }

    /// What a VAPID JWT's `aud` must name: the endpoints' origin.
    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn endpoint(&self, device: &str) -> String {
        format!("{}/push/{device}", self.origin())
    }

    /// The next requests for `device` are answered with these statuses, in order.
    fn script(&self, device: &str, statuses: &[u16]) {
        self.state
            .script
            .lock()
            .unwrap()
            .insert(device.to_owned(), statuses.iter().copied().collect());
    }

    fn received(&self, device: &str) -> Vec<Received> {
        self.state
            .received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.device == device)
            .cloned()
            .collect()
    }

    fn all_received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Waits until `device` has been sent at least `n` requests; returns them all.
    async fn wait_received(&self, device: &str, n: usize) -> Vec<Received> {
        poll_until(&format!("{n} push(es) to {device}"), SOON, async || {
            let got = self.received(device);
            if got.len() >= n {
                Ok(got)
            } else {
                Err(format!("{} so far", got.len()))
            }
        })
        .await
    }
}

// ---------------------------------------------------------------------------------------------
// A browser's side of a subscription
// ---------------------------------------------------------------------------------------------

/// What a browser holds for one subscription: its P-256 key pair and auth secret.
struct Device {
    name: String,
    endpoint: String,
    secret: p256::SecretKey,
    /// The uncompressed public key (65 bytes): `keys.p256dh`.
    public: Vec<u8>,
    auth: [u8; 16],
}

impl Device {
    fn new(service: &PushService, name: &str) -> Device {
        let secret = loop {
            if let Ok(key) = p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
                break key;
            }
        };
        let public = secret
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec();
        assert_eq!((public.len(), public[0]), (65, 0x04));
        Device {
            name: name.to_owned(),
            endpoint: service.endpoint(name),
            secret,
            public,
            auth: rand::random(),
        }
    }

    /// What `PushSubscription.toJSON()` gives the page.
    fn subscription(&self) -> Value {
        json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {"p256dh": B64.encode(&self.public), "auth": B64.encode(self.auth)},
        })
    }

    /// RFC 8291 decryption of an `aes128gcm` body (RFC 8188, one record); returns the
    /// plaintext with its padding delimiter checked and removed, or why it is not a push for
    /// this device.
    fn try_decrypt(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        if body.len() < 21 + 65 + 16 {
            return Err(format!("a body shorter than a header and a tag: {body:?}"));
        }
        let salt = &body[..16];
        let record_size = u32::from_be_bytes(body[16..20].try_into().unwrap());
        let id_len = body[20] as usize;
        if id_len != 65 {
            return Err(format!(
                "keyid of {id_len} bytes, not the sender's 65-byte key"
            ));
        }
        let as_public = &body[21..21 + id_len];
        let ciphertext = &body[21 + id_len..];
        if ciphertext.len() > record_size as usize {
            return Err(format!(
                "a record of {} bytes in a record size of {record_size}",
                ciphertext.len()
            ));
        }
        let sender = p256::PublicKey::from_sec1_bytes(as_public)
            .map_err(|e| format!("as_public is not on P-256: {e}"))?;
        let shared =
            p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), sender.as_affine());
        // IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" 0x00 ua_public as_public, 32)
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public);
        info.extend_from_slice(as_public);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes())
            .expand(&info, &mut ikm)
            .unwrap();
        let keys = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let mut cek = [0u8; 16];
        keys.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
            .unwrap();
        let mut nonce = [0u8; 12];
        keys.expand(b"Content-Encoding: nonce\0", &mut nonce)
            .unwrap();
        let mut plain = Aes128Gcm::new_from_slice(&cek)
            .unwrap()
            .decrypt(Nonce::from_slice(&nonce), ciphertext)
            .map_err(|_| "it does not decrypt with this device's keys".to_owned())?;
        // The last record: optional zero padding after a 0x02 delimiter.
        while plain.last() == Some(&0) {
            plain.pop();
        }
        if plain.pop() != Some(0x02) {
            return Err("the last record's 0x02 delimiter is missing".to_owned());
        }
        Ok(plain)
    }

    fn try_read(&self, push: &Received) -> Result<Value, String> {
        let plain = self.try_decrypt(&push.body)?;
        serde_json::from_slice(&plain)
            .map_err(|e| format!("the plaintext is not JSON ({e}): {plain:?}"))
    }

    /// The push's JSON, decrypted; panics if it is not a push for this device.
    #[track_caller]
    fn read(&self, push: &Received) -> Value {
        self.try_read(push)
            .unwrap_or_else(|e| panic!("push to {}: {e}", self.name))
    }

    /// Waits for a push to this device whose plaintext satisfies `pred`; returns it with
    /// its decrypted JSON.
    async fn wait_message(
        &self,
        service: &PushService,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> (Received, Value) {
        poll_until(
            &format!("{what} pushed to {}", self.name),
            SOON,
            async || {
                // Pushes for other keys at the same endpoint (a replaced subscription) are skipped.
                let got: Vec<(Received, Value)> = service
                    .received(&self.name)
                    .into_iter()
                    .filter_map(|r| {
                        let v = self.try_read(&r).ok()?;
                        Some((r, v))
                    })
                    .collect();
                match got.iter().find(|(_, v)| pred(v)) {
                    Some(found) => Ok(found.clone()),
                    None => Err(format!(
                        "{:#?}",
                        got.iter().map(|(_, v)| v).collect::<Vec<_>>()
                    )),
                }
            },
        )
        .await
    }

    /// The push announcing the gate `aid`.
    async fn gate_message(&self, service: &PushService, aid: &str) -> (Received, Value) {
        self.wait_message(service, &format!("gate {aid}"), |v| {
            v["type"] == "gate" && v["approval_id"] == aid
        })
        .await
    }

    /// The push closing the gate `aid`.
    async fn closing_message(&self, service: &PushService, aid: &str) -> (Received, Value) {
        self.wait_message(service, &format!("the close of {aid}"), |v| {
            v["type"] == "resolved" && v["approval_id"] == aid
        })
        .await
    }
}

// ---------------------------------------------------------------------------------------------
// Checks of what was sent
// ---------------------------------------------------------------------------------------------

/// Checks the RFC 8030 headers of a push; returns its TTL.
#[track_caller]
fn check_push_headers(push: &Received) -> u64 {
    assert_eq!(push.method, "POST");
    assert_eq!(push.header("content-encoding"), "aes128gcm");
    assert_eq!(push.header("content-type"), "application/octet-stream");
    assert_eq!(push.header("urgency"), "high");
    let topic = push.header("topic");
    assert!(
        !topic.is_empty()
            && topic.len() <= 32
            && topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "Topic must be ≤ 32 base64url characters: {topic:?}"
    );
    assert!(
        push.body.len() <= 4096,
        "a push body is one 4096-byte record at most: {}",
        push.body.len()
    );
    push.header("ttl")
        .parse()
        .unwrap_or_else(|e| panic!("TTL is not a number of seconds ({e})"))
}

/// Checks the RFC 8292 `Authorization: vapid t=<JWT>, k=<key>` of a push: the ES256 signature
/// verifies with `k`, `k` is the key `/push/key` gave, the audience is the push service's
/// origin, and it expires within 24 hours.
#[track_caller]
fn check_vapid(push: &Received, origin: &str, public_key: &str) {
    let authorization = push.header("authorization");
    let (jwt, k) = authorization
        .strip_prefix("vapid t=")
        .and_then(|rest| rest.split_once(", k="))
        .unwrap_or_else(|| panic!("not a vapid Authorization: {authorization:?}"));
    assert_eq!(k, public_key, "k is the key pages subscribe with");
    let (signing_input, signature) = jwt.rsplit_once('.').expect("a JWS has a signature");
    let (header, claims) = signing_input.split_once('.').expect("header.claims");
    let header: Value = serde_json::from_slice(&B64.decode(header).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256", "{header}");
    let claims: Value = serde_json::from_slice(&B64.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["aud"], origin, "{claims}");
    let sub = claims["sub"].as_str().unwrap_or("");
    assert!(
        sub.starts_with("mailto:") || sub.starts_with("https://"),
        "{claims}"
    );
    let now = chrono::Utc::now().timestamp();
    let exp = claims["exp"].as_i64().expect("exp");
    assert!(
        exp > now && exp <= now + 24 * 3600,
        "exp {exp} must be within 24 h of {now}"
    );
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&B64.decode(k).unwrap())
        .expect("k is a P-256 public key");
    let signature = p256::ecdsa::Signature::from_slice(&B64.decode(signature).unwrap())
        .expect("an ES256 signature is r || s, 64 bytes");
    key.verify(signing_input.as_bytes(), &signature)
        .expect("the JWT's signature verifies with k");
}

/// No credential is anywhere in a push: not in its plaintext, not in its headers.
#[track_caller]
fn check_no_secrets(push: &Received, plaintext: &Value, secrets: &[&str]) {
    let text = plaintext.to_string();
    let headers = format!("{:?}", push.headers);
    for secret in secrets.iter().chain(&[TOKEN, "countersign_session"]) {
        assert!(!text.contains(secret), "{secret:?} in the push: {text}");
        assert!(
            !headers.contains(secret),
            "{secret:?} in the push's headers"
        );
    }
    assert!(!text.to_lowercase().contains("bearer"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Setting the scene
// ---------------------------------------------------------------------------------------------

/// A named token of `scope`: a client holding it, and its secret.
async fn named_token(ts: &TestServer, name: &str, scope: &str) -> (Api, String) {
    let created = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    let secret = str_of(&created, "token").to_owned();
    (Api::new(&ts.base).with_token(&secret), secret)
}

/// Subscribes `device` as `api`'s credential, expecting 201; returns the subscription.
async fn subscribe(api: &Api, device: &Device) -> Value {
    api.post("/api/v1/push/subscriptions", device.subscription())
        .await
        .expect(201)
}

/// The ids of the subscriptions `api` sees.
/// A phone holding an `approve` token named `phone`, subscribed as the device `phone`.
async fn subscribed_phone(ts: &TestServer, service: &PushService) -> Device {
    let (phone, _) = named_token(ts, "phone", "approve").await;
    let device = Device::new(service, "phone");
    subscribe(&phone, &device).await;
    device
}

async fn subscription_ids(api: &Api) -> Vec<String> {
    api.get("/api/v1/push/subscriptions")
        .await
        .expect(200)
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| id_of(s, "id"))
        .collect()
}

/// The server's VAPID public key, as `api` reads it.
async fn push_key(api: &Api) -> String {
    let v = api.get("/api/v1/push/key").await.expect(200);
    assert_eq!(keys(&v), vec!["public_key"], "{v}");
    id_of(&v, "public_key")
}

/// A new session in ask mode whose demo agent asks to write `path`; returns the session id
/// and the card. A write's notification does not show what it would write, so it carries no
/// capability: it only opens the card.
async fn ask_to_write(ts: &TestServer, path: &str) -> (String, Value) {
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, &format!("write {path}: hello"), None)
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["tool"], "write_file", "{card}");
    (sid, card)
}

/// What the command [`ask_to_run`] asks to run leaves in its file once it has run.
const RAN: &str = "hello\n";

/// A new session in ask mode whose demo agent asks to run `echo hello > {path}` (a command
/// card, shown whole by its notification, which may answer it); returns the session id and
/// the card.
async fn ask_to_run(ts: &TestServer, path: &str) -> (String, Value) {
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, &format!("run: echo hello > {path}"), None)
        .await;
    let card = ts.wait_gate(&sid).await;
    assert_eq!(card["tool"], "shell", "{card}");
    assert_eq!(card["reason"], "mode", "{card}");
    (sid, card)
}

/// A notification's answer: no cookie, no bearer, only the capability.
async fn answer_with(ts: &TestServer, capability: &str, body: Value) -> Resp {
    send(
        ts.anon(Method::POST, &format!("/api/v1/push/answers/{capability}"))
            .json(&body),
    )
    .await
}

async fn answer(ts: &TestServer, capability: &str, decision: &str) -> Resp {
    answer_with(ts, capability, json!({ "decision": decision })).await
}

/// The capability a gate push carries.
#[track_caller]
fn capability_of(message: &Value) -> String {
    let cap = str_of(message, "capability");
    assert!(cap.starts_with("cs2."), "{cap}");
    cap.to_owned()
}

/// The server's database file, opened as any process with the data dir could.
fn database(ts: &TestServer) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(ts.data_dir().join("countersign.db")).expect("database");
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The grant a capability carries, as the server keeps it: under the capability's hash (the
/// capability itself is kept nowhere).
fn grant_of(ts: &TestServer, capability: &str) -> Value {
    let body: String = database(ts)
        .query_row(
            "SELECT body FROM hashed_secrets WHERE kind = 'capability' AND hash = ?1",
            [sha256_hex(capability)],
            |row| row.get(0),
        )
        .expect("the capability's grant is kept under its hash");
    assert!(!body.contains(capability), "{body}");
    serde_json::from_str(&body).expect("the grant is JSON")
}

/// A capability for `grant`, made by writing its hash and grant into the server's database
/// (what whoever can write the database could do). Used only to reach checks no pushed
/// capability can reach (one for a floor card or a write card, which the server never makes;
/// one whose deadline has passed; one for another digest).
fn mint(ts: &TestServer, grant: &Value) -> String {
    let capability = format!("cs2.{}", uuid::Uuid::new_v4().simple());
    database(ts)
        .execute(
            "INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms) VALUES (?1, 'capability', ?2, 0, NULL)",
            rusqlite::params![sha256_hex(&capability), grant.to_string()],
        )
        .expect("insert");
    capability
}

/// A capability sealed the way an older build sealed them, from what the data dir holds: an
/// HMAC keyed from the VAPID key's file. The attack of issue 37: an agent that reads the data
/// dir must not be able to make an answer from it.
fn sealed_from_the_data_dir(ts: &TestServer, grant: &Value) -> String {
    use hmac::Mac;
    let pkcs8 = std::fs::read(ts.data_dir().join("vapid_private_key")).expect("vapid key");
    let root = {
        use sha2::Digest;
        let mut hash = Sha256::new();
        hash.update(b"countersign-seal-root\0");
        hash.update(&pkcs8);
        hex::encode(hash.finalize())
    };
    let key = format!("countersign-seal:answer-capability:{root}");
    let body = B64.encode(grant.to_string());
    let mut mac = <hmac::Hmac<Sha256> as Mac>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let tag = B64.encode(mac.finalize().into_bytes());
    format!("cs1.{body}.{tag}")
}

/// A card's approval id (the support helper's, under a name tests do not shadow).
fn gate_id(card: &Value) -> String {
    aid(card)
}

/// The pending card `aid`, as the inbox lists it.
async fn pending_card(ts: &TestServer, aid: &str) -> Value {
    ts.inbox()
        .await
        .into_iter()
        .find(|card| card["approval_id"] == aid)
        .unwrap_or_else(|| panic!("{aid} is not pending"))
}

/// The gate's `approval_resolved` events.
async fn resolutions_of(ts: &TestServer, sid: &str, aid: &str) -> Vec<Value> {
    resolutions(&ts.events(sid).await, aid)
}

/// Waits for the gate's one `approval_resolved`; returns it.
async fn wait_resolution(ts: &TestServer, sid: &str, aid: &str) -> Value {
    ts.wait_event(sid, &format!("{aid} resolved"), |e| {
        e["type"] == "approval_resolved" && e["approval_id"] == aid
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// 1. The whole path: a push that decrypts, a capability that answers, a push that closes
// ---------------------------------------------------------------------------------------------

/// The feature's promise end to end, checked by an independent receiver: a phone holding an
/// `approve` token subscribes; a card that waits reaches its push service encrypted for it
/// alone, signed by the server's VAPID key, saying what the card says and carrying no
/// credential; the notification's Approve answers as the phone's token, via push; and a
/// closing push replaces the notification with the outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_push_decrypts_answers_the_card_and_is_closed_with_the_outcome() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, phone_secret) = named_token(&ts, "phone", "approve").await;
    let key = push_key(&phone).await;
    assert_eq!(key, push_key(&ts).await, "one key, whoever asks");
    let raw = B64.decode(&key).expect("base64url");
    assert_eq!(
        (raw.len(), raw[0]),
        (65, 0x04),
        "an uncompressed P-256 point"
    );
    p256::PublicKey::from_sec1_bytes(&raw).expect("on the curve");

    let device = Device::new(&service, "phone-1");
    let sub = subscribe(&phone, &device).await;
    assert_eq!(
        keys(&sub),
        vec!["created_at", "credential", "id", "push_service"],
        "never the keys or the endpoint's path: {sub}"
    );
    assert_uuid_v4(str_of(&sub, "id"));
    assert_rfc3339_utc(str_of(&sub, "created_at"));
    assert_eq!(sub["credential"], "token:phone");
    assert_eq!(sub["push_service"], "127.0.0.1");
    assert_eq!(subscription_ids(&phone).await, vec![id_of(&sub, "id")]);

    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let (push, msg) = device.gate_message(&service, &aid).await;

    // The request, as a push service sees it.
    let ttl = check_push_headers(&push);
    assert!(
        (60..=1800).contains(&ttl),
        "TTL {ttl}: at most until the gate's deadline"
    );
    check_vapid(&push, &service.origin(), &key);

    // What the notification says (at least these; never a credential, checked below).
    for key in [
        "actions",
        "approval_id",
        "body",
        "capability",
        "expires_at",
        "headline",
        "sensitive",
        "session_id",
        "session_title",
        "summary",
        "tag",
        "title",
        "tool",
        "type",
        "url",
    ] {
        assert!(msg.get(key).is_some(), "no {key} in {msg:#}");
    }
    assert_eq!(msg["type"], "gate");
    assert_eq!(msg["tag"], format!("gate-{aid}"));
    assert_eq!(msg["session_id"], sid.as_str());
    assert_eq!(msg["url"], format!("/sessions/{sid}#gate-{aid}"));
    assert_eq!(msg["tool"], "shell");
    assert_eq!(msg["sensitive"], false);
    assert_eq!(msg["actions"], json!(["approve", "deny"]));
    assert_eq!(msg["headline"], card["title"]);
    assert_eq!(msg["summary"], card["summary"]);
    assert!(
        str_of(&msg, "summary").contains("echo hello > notes.md"),
        "the notification shows the whole command: {msg}"
    );
    assert_eq!(msg["expires_at"], card["expires_at"]);
    assert!(
        str_of(&msg, "title").contains(str_of(&card, "title")),
        "{msg}"
    );
    assert!(str_of(&msg, "body").contains("shell"), "{msg}");
    assert!(
        str_of(&msg, "body").contains("echo hello > notes.md"),
        "{msg}"
    );
    let cap = capability_of(&msg);
    check_no_secrets(&push, &msg, &[&phone_secret]);
    let grant = grant_of(&ts, &cap);
    assert_eq!(grant["a"], aid.as_str(), "{grant}");
    assert_eq!(grant["s"], sid.as_str(), "{grant}");
    assert_eq!(grant["d"], card["digest"], "{grant}");
    ts.assert_still_pending(&sid, &aid).await;

    // The notification's Approve: no cookie, no bearer.
    let answered = answer(&ts, &cap, "approve").await.expect(200);
    assert_eq!(
        keys(&answered),
        vec![
            "actor",
            "approval_id",
            "decision",
            "outcome",
            "resolved_at",
            "via"
        ],
        "{answered}"
    );
    assert_eq!(answered["approval_id"], aid.as_str());
    assert_eq!(answered["decision"], "approve");
    assert_eq!(answered["actor"], "token:phone");
    assert_eq!(answered["via"], "push");
    assert_eq!(answered["outcome"], "Approved by token phone via push");
    assert_rfc3339_utc(str_of(&answered, "resolved_at"));

    // The card is answered as if the phone had tapped it, and the call ran.
    let resolved = wait_resolution(&ts, &sid, &aid).await;
    assert_eq!(resolved["decision"], "approve", "{resolved}");
    assert_eq!(resolved["actor"], "token:phone", "{resolved}");
    assert_eq!(resolved["via"], "push", "{resolved}");
    wait_file(&ts.ws("notes.md"), RAN).await;
    let audit = ts
        .get("/api/v1/audit?action=gate_resolved")
        .await
        .expect(200);
    let entry = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["detail"]["decision"] == "approve")
        .unwrap_or_else(|| panic!("no gate_resolved entry: {audit:#}"));
    assert_eq!(entry["actor"], "token:phone", "{entry}");
    assert_eq!(entry["detail"]["via"], "push", "{entry}");

    // The closing push replaces the notification (same tag, same Topic) with the outcome.
    let (closing, done) = device.closing_message(&service, &aid).await;
    check_push_headers(&closing);
    check_vapid(&closing, &service.origin(), &key);
    assert_eq!(closing.header("topic"), push.header("topic"));
    assert_eq!(done["tag"], msg["tag"]);
    assert_eq!(done["session_id"], sid.as_str());
    assert_eq!(done["url"], msg["url"]);
    assert_eq!(done["body"], "Approved by token phone via push");
    assert_eq!(done["decision"], "approve");
    assert_eq!(done["actor"], "token:phone");
    assert_eq!(done["via"], "push");
    assert!(done.get("capability").is_none(), "{done}");
    check_no_secrets(&closing, &done, &[&phone_secret]);
    // One push to open, one to close: nothing else went to the device.
    assert_eq!(service.received("phone-1").len(), 2);
}

/// The startup token is the person's own credential: a device it subscribes must hear of
/// every card, and its Approve must answer as `token:admin`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_subscribed_with_the_startup_token_is_told_and_answers_as_it() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = Device::new(&service, "laptop");
    let sub = subscribe(&ts, &device).await;
    assert_eq!(sub["credential"], "token:admin");

    let (sid, card) = ask_to_run(&ts, "admin.md").await;
    let aid = gate_id(&card);
    let (_, msg) = device.gate_message(&service, &aid).await;
    let answered = answer(&ts, &capability_of(&msg), "deny").await.expect(200);
    assert_eq!(answered["actor"], "token:admin");
    let resolved = wait_resolution(&ts, &sid, &aid).await;
    assert_eq!(resolved["actor"], "token:admin", "{resolved}");
    assert_eq!(resolved["via"], "push", "{resolved}");
    assert_eq!(resolved["decision"], "deny", "{resolved}");
    assert!(!ts.ws("admin.md").exists(), "a denied command ran");
}

/// A browser logged in with the startup token subscribes through its cookie: its
/// subscription is `browser`'s, and its notification answers as `browser`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_subscribed_with_its_cookie_answers_as_browser() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let login = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    assert_eq!(login.status.as_u16(), 303, "{login:?}");
    let cookie = login
        .header("set-cookie")
        .expect("Set-Cookie")
        .split(';')
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let device = Device::new(&service, "browser");
    let sub = send(
        ts.anon(Method::POST, "/api/v1/push/subscriptions")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&device.subscription()),
    )
    .await
    .expect(201);
    assert_eq!(sub["credential"], "browser");

    let (sid, card) = ask_to_run(&ts, "browser.md").await;
    let aid = gate_id(&card);
    let (push, msg) = device.gate_message(&service, &aid).await;
    check_no_secrets(&push, &msg, &[cookie.split('=').nth(1).unwrap()]);
    let answered = answer(&ts, &capability_of(&msg), "approve")
        .await
        .expect(200);
    assert_eq!(answered["actor"], "browser");
    let resolved = wait_resolution(&ts, &sid, &aid).await;
    assert_eq!(resolved["actor"], "browser", "{resolved}");
    assert_eq!(resolved["via"], "push", "{resolved}");
    wait_file(&ts.ws("browser.md"), RAN).await;
    let (_, done) = device.closing_message(&service, &aid).await;
    assert_eq!(
        done["body"],
        "Approved by browser login · A browser via push"
    );
}

/// A card on the safety floor is answered on the card only: its push says it is sensitive,
/// offers no action and carries no capability; and even a genuine capability for it (which
/// the server never makes) is refused, leaving the card pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_card_is_pushed_as_sensitive_and_cannot_be_answered_from_a_notification() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, phone_secret) = named_token(&ts, "phone", "approve").await;
    let device = Device::new(&service, "phone");
    let sub = subscribe(&phone, &device).await;

    let (floor_sid, floor_card) = ask_to_write(&ts, ".env").await;
    assert_eq!(floor_card["reason"], "safety_floor", "{floor_card}");
    let floor_aid = gate_id(&floor_card);
    let (push, msg) = device.gate_message(&service, &floor_aid).await;
    assert_eq!(msg["sensitive"], true, "{msg}");
    assert!(msg["capability"].is_null(), "{msg}");
    assert_eq!(msg["actions"], json!([]), "{msg}");
    assert!(str_of(&msg, "title").starts_with("SENSITIVE"), "{msg}");
    assert_eq!(
        msg["url"],
        format!("/sessions/{floor_sid}#gate-{floor_aid}")
    );
    check_no_secrets(&push, &msg, &[&phone_secret]);

    // An ordinary card's capability, re-made by the test, proves the test's minting right…
    let (sid, card) = ask_to_run(&ts, "plain.md").await;
    let (_, plain) = device.gate_message(&service, &gate_id(&card)).await;
    let grant = grant_of(&ts, &capability_of(&plain));
    assert_eq!(
        answer(&ts, &mint(&ts, &grant), "deny").await.expect(200)["actor"],
        "token:phone"
    );
    wait_resolution(&ts, &sid, &gate_id(&card)).await;
    // A genuine grant whose deadline is past has ended, whatever its card says.
    let (late_sid, late) = ask_to_run(&ts, "late.md").await;
    let mut past = grant.clone();
    past["s"] = json!(late_sid);
    past["a"] = late["approval_id"].clone();
    past["d"] = late["digest"].clone();
    past["e"] = json!(chrono::Utc::now().timestamp_millis() - 1);
    answer(&ts, &mint(&ts, &past), "approve")
        .await
        .expect_error(410, "capability_ended");
    ts.assert_still_pending(&late_sid, &gate_id(&late)).await;
    assert!(!ts.ws("late.md").exists());
    // …and a genuine one for the floor card is refused.
    let floor_grant = json!({
        "s": floor_sid, "a": floor_aid, "d": floor_card["digest"],
        "h": {"k": "subscription", "v": sub["id"]}, "e": grant["e"],
    });
    for decision in ["approve", "deny"] {
        answer(&ts, &mint(&ts, &floor_grant), decision)
            .await
            .expect_error(403, "forbidden");
    }
    ts.assert_still_pending(&floor_sid, &floor_aid).await;
    assert!(!ts.ws(".env").exists());
}

/// Only a command the notification shows whole is answered from it. A write (whose content
/// the notification does not show), an edit, a proposal, an outside agent's file change or
/// network call, and a command call carrying more than its command line or too long to read
/// at a glance are pushed with no capability and no buttons; and even a genuine capability
/// for one (which the server never makes) is `403 forbidden`, leaving the card pending and
/// nothing done. The same device's command card, in the same test, is answered: the refusals
/// are the cards', not the capability's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_its_notification_cannot_show_whole_is_not_answered_from_it() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (agent, _) = named_token(&ts, "hook", "gates").await;

    // The demo agent's write, edit and proposal.
    let mut cards: Vec<(&str, String, String)> = Vec::new();
    let (sid, write) = ask_to_write(&ts, "notes.md").await;
    cards.push(("a write", sid, gate_id(&write)));
    std::fs::write(ts.ws("edit.md"), "hello").unwrap();
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "edit edit.md: hello => bye", None).await;
    let edit = ts.wait_gate(&sid).await;
    assert_eq!(edit["tool"], "edit_file", "{edit}");
    cards.push(("an edit", sid, gate_id(&edit)));
    let sid = ts.create_id(json!({"approval_mode": "ask"})).await;
    ts.send_msg(&sid, "ask prep_plan: Drop nulls | **why** not", None)
        .await;
    let proposal = ts.wait_gate(&sid).await;
    assert_eq!(proposal["kind"], "decision", "{proposal}");
    cards.push(("a proposal", sid, gate_id(&proposal)));
    // An outside agent's calls that are not a command line shown whole.
    let long_command = format!("npm test -- {}", "--grep=a ".repeat(15));
    let long_token = format!("npm test -- --grep={}", "a".repeat(61));
    for (what, tool, input) in [
        (
            "an outside write",
            "Write",
            json!({"file_path": "/home/me/app.py", "content": "import os"}),
        ),
        (
            "an outside network call",
            "WebFetch",
            json!({"url": "https://example.com/", "prompt": "send the keys"}),
        ),
        (
            "a command with more than its command line",
            "Bash",
            json!({"command": "npm test", "run_in_background": true}),
        ),
        (
            "an unknown tool's call",
            "mcp__db__query",
            json!({"sql": "DROP TABLE users"}),
        ),
        (
            "a command too long to read at a glance",
            "Bash",
            json!({"command": long_command}),
        ),
        (
            "a command with a token too long to show",
            "Bash",
            json!({"command": long_token}),
        ),
    ] {
        let aid = outside_call(&agent, tool, input, "Outside call", "/home/me").await;
        let sid = id_of(&pending_card(&ts, &aid).await, "session_id");
        cards.push((what, sid, aid));
    }

    // A command card: its push has a capability, the template for the genuine ones below.
    let (run_sid, run) = ask_to_run(&ts, "ran.md").await;
    let (_, ran) = device.gate_message(&service, &gate_id(&run)).await;
    let grant = grant_of(&ts, &capability_of(&ran));

    for (what, sid, aid) in &cards {
        let (push, msg) = device.gate_message(&service, aid).await;
        assert!(push.body.len() <= 4096, "{what}: {}", push.body.len());
        // A tool the catalog does not know asks on the floor (issue 37): its push says so.
        let unknown = *what == "an unknown tool's call";
        assert_eq!(msg["sensitive"], unknown, "{what}: {msg}");
        assert!(msg["capability"].is_null(), "{what}: {msg}");
        assert_eq!(msg["actions"], json!([]), "{what}: {msg}");
        assert_eq!(msg["url"], format!("/sessions/{sid}#gate-{aid}"), "{what}");
        let card = pending_card(&ts, aid).await;
        let genuine = json!({
            "s": sid, "a": aid, "d": card["digest"], "h": grant["h"], "e": grant["e"],
        });
        for decision in ["approve", "deny"] {
            answer(&ts, &mint(&ts, &genuine), decision)
                .await
                .expect_error(403, "forbidden");
        }
        ts.assert_still_pending(sid, aid).await;
    }
    assert!(!ts.ws("notes.md").exists(), "the write was not made");
    assert_eq!(std::fs::read_to_string(ts.ws("edit.md")).unwrap(), "hello");

    // The command card, answered with a capability minted the same way.
    let mut genuine = grant.clone();
    genuine["d"] = run["digest"].clone();
    answer(&ts, &mint(&ts, &genuine), "approve")
        .await
        .expect(200);
    wait_file(&ts.ws("ran.md"), RAN).await;
    wait_resolution(&ts, &run_sid, &gate_id(&run)).await;
}

// ---------------------------------------------------------------------------------------------
// 2. A capability answers one card, once, while its holder stands
// ---------------------------------------------------------------------------------------------

/// A capability is a random secret bound to its gate where the server keeps it (by hash): a
/// copy with a character changed, cut or lengthened, its hash, the old sealed format made from
/// the data dir's key, or junk, is `403 invalid_capability` and answers nothing. The genuine one answers its own card only,
/// and only once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_answers_its_own_card_once_and_cannot_be_altered() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (sid_a, card_a) = ask_to_run(&ts, "a.md").await;
    let (sid_b, card_b) = ask_to_run(&ts, "b.md").await;
    let (aid_a, aid_b) = (gate_id(&card_a), gate_id(&card_b));
    let cap_a = capability_of(&device.gate_message(&service, &aid_a).await.1);
    let cap_b = capability_of(&device.gate_message(&service, &aid_b).await.1);
    assert_ne!(cap_a, cap_b);

    // A capability is a random secret, kept only by its hash: no spelling of one is another,
    // and nothing the data dir or the database holds makes one.
    let grant = grant_of(&ts, &cap_a);
    let mut forged = Vec::new();
    let mut flipped = cap_a.clone().into_bytes();
    let inside = flipped.len() - 10;
    flipped[inside] = if flipped[inside] == b'A' { b'B' } else { b'A' };
    forged.push(String::from_utf8(flipped).unwrap());
    forged.push(cap_a[..cap_a.len() - 4].to_owned());
    forged.push(format!("{cap_a}A"));
    forged.push(cap_a.to_uppercase());
    forged.push(cap_a.replacen("cs2.", "cs1.", 1));
    forged.push(cap_a.replacen("cs2.", "", 1));
    forged.push(sha256_hex(&cap_a));
    forged.push(format!("cs2.{}", sha256_hex(&cap_a)));
    forged.push(sealed_from_the_data_dir(&ts, &grant));
    forged.push(format!("cs2.{}", "A".repeat(2000)));
    forged.push("cs2.x".to_owned());
    forged.push("approve".to_owned());
    for cap in &forged {
        answer(&ts, cap, "approve")
            .await
            .expect_error(403, "invalid_capability");
    }
    ts.assert_still_pending(&sid_a, &aid_a).await;
    ts.assert_still_pending(&sid_b, &aid_b).await;

    // The genuine one: its own card, once, even when both buttons are tapped at once.
    let (approved, denied) =
        tokio::join!(answer(&ts, &cap_a, "approve"), answer(&ts, &cap_a, "deny"));
    let statuses = [approved.status.as_u16(), denied.status.as_u16()];
    assert!(
        statuses == [200, 409] || statuses == [409, 200],
        "one answer wins, the other finds it answered: {approved:?} {denied:?}"
    );
    let winner = if statuses[0] == 200 {
        "approve"
    } else {
        "deny"
    };
    let loser = if statuses[0] == 200 {
        &denied
    } else {
        &approved
    };
    loser.expect_error(409, "already_resolved");
    ts.assert_still_pending(&sid_b, &aid_b).await;
    for again in ["deny", "approve"] {
        answer(&ts, &cap_a, again)
            .await
            .expect_error(409, "already_resolved");
    }
    let only = resolutions_of(&ts, &sid_a, &aid_a).await;
    assert_eq!(only.len(), 1, "{only:#?}");
    assert_eq!(only[0]["decision"], winner);

    // Answered on the page instead: the capability finds it answered, and the closing push
    // names the page's credential (no `via`).
    ts.decide(&sid_b, &aid_b, json!({"decision": "approve"}))
        .await
        .expect(200);
    answer(&ts, &cap_b, "deny")
        .await
        .expect_error(409, "already_resolved");
    let (_, done) = device.closing_message(&service, &aid_b).await;
    assert_eq!(done["body"], "Approved by token admin");
    assert!(done["via"].is_null(), "{done}");
    assert_eq!(
        resolutions_of(&ts, &sid_b, &aid_b).await[0]["decision"],
        "approve"
    );
    wait_file(&ts.ws("b.md"), RAN).await;
}

/// A notification answers `approve` or `deny`, spelled so; anything else (an edit, a
/// standing rule, another case, extra fields that would smuggle an edit in) is a 400 and the
/// card stays pending — and the capability still works afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_approve_and_deny_are_answered_and_a_refused_answer_changes_nothing() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let cap = capability_of(&device.gate_message(&service, &aid).await.1);

    for decision in [
        "edit",
        "allow_always",
        "APPROVE",
        "Approve",
        " approve",
        "approve ",
        "deny\u{0}",
        "timeout",
        "cancelled",
        "",
    ] {
        answer(&ts, &cap, decision)
            .await
            .expect_error(400, "invalid_decision");
    }
    for body in [
        json!({}),
        json!({"decision": null}),
        json!({"decision": 1}),
        json!({"decision": ["approve"]}),
        json!({"decision": "approve", "edits": {"content": "pwned"}}),
        json!({"decision": "approve", "rule": {"scope": "workspace"}}),
        json!({"decision": "approve", "reason": "x"}),
    ] {
        let resp = answer_with(&ts, &cap, body.clone()).await;
        assert_eq!(resp.status.as_u16(), 400, "{body}: {}", resp.body);
    }
    let not_json = send(
        ts.anon(Method::POST, &format!("/api/v1/push/answers/{cap}"))
            .header("content-type", "application/json")
            .body("decision=approve"),
    )
    .await;
    assert_eq!(not_json.status.as_u16(), 400, "{}", not_json.body);
    ts.assert_still_pending(&sid, &aid).await;
    assert_eq!(ts.get("/api/v1/rules").await.expect(200), json!([]));
    assert!(
        !ts.ws("notes.md").exists(),
        "a refused answer ran the command"
    );

    answer(&ts, &cap, "approve").await.expect(200);
    wait_file(&ts.ws("notes.md"), RAN).await;
}

/// Unsubscribing a device ends the capabilities it was sent: `410 capability_ended`, the
/// card still pending, and the next card is not pushed to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsubscribed_device_can_no_longer_answer() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let (tablet, _) = named_token(&ts, "tablet", "approve").await;
    let device = Device::new(&service, "phone");
    let witness = Device::new(&service, "tablet");
    let sub_id = id_of(&subscribe(&phone, &device).await, "id");
    let tablet_id = id_of(&subscribe(&tablet, &witness).await, "id");
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let cap = capability_of(&device.gate_message(&service, &aid).await.1);

    let gone = phone
        .delete(&format!("/api/v1/push/subscriptions/{sub_id}"))
        .await;
    assert_eq!(gone.status.as_u16(), 204, "{}", gone.body);
    assert!(gone.body.is_empty());
    phone
        .delete(&format!("/api/v1/push/subscriptions/{sub_id}"))
        .await
        .expect_error(404, "unknown_subscription");
    assert_eq!(subscription_ids(&ts).await, vec![tablet_id]);
    for decision in ["approve", "deny"] {
        answer(&ts, &cap, decision)
            .await
            .expect_error(410, "capability_ended");
    }
    ts.assert_still_pending(&sid, &aid).await;

    // The next card reaches the device still subscribed, and not this one.
    let (_, next) = ask_to_write(&ts, "next.md").await;
    witness.gate_message(&service, &gate_id(&next)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        service.received("phone").len(),
        1,
        "an unsubscribed device was told of a new card"
    );
}

/// Revoking the token a phone subscribed with removes its subscriptions and ends their
/// capabilities (`410`), and the phone hears of no further card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_token_ends_its_devices_subscriptions_and_capabilities() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let (tablet, _) = named_token(&ts, "tablet", "approve").await;
    let phone_device = Device::new(&service, "phone");
    let tablet_device = Device::new(&service, "tablet");
    subscribe(&phone, &phone_device).await;
    let tablet_sub = id_of(&subscribe(&tablet, &tablet_device).await, "id");
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let cap = capability_of(&phone_device.gate_message(&service, &aid).await.1);

    assert_eq!(ts.delete("/api/v1/tokens/phone").await.status.as_u16(), 204);
    assert_eq!(
        subscription_ids(&ts).await,
        vec![tablet_sub],
        "only the revoked token's subscription goes"
    );
    answer(&ts, &cap, "approve")
        .await
        .expect_error(410, "capability_ended");
    ts.assert_still_pending(&sid, &aid).await;

    let (_, next) = ask_to_write(&ts, "next.md").await;
    tablet_device.gate_message(&service, &gate_id(&next)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        service.received("phone").len(),
        1,
        "a revoked token's device was told of a new card"
    );
}

/// The same browser subscribing again (the same endpoint) replaces its old subscription:
/// one row, a new id, and the old row's capabilities are ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribing_the_same_endpoint_again_replaces_the_old_subscription() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let device = Device::new(&service, "phone");
    let first = id_of(&subscribe(&phone, &device).await, "id");
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let old_cap = capability_of(&device.gate_message(&service, &aid).await.1);

    // New keys at the same endpoint (a browser that renewed its subscription).
    let renewed = Device::new(&service, "phone");
    assert_eq!(renewed.endpoint, device.endpoint);
    let second = id_of(&subscribe(&phone, &renewed).await, "id");
    assert_ne!(first, second);
    assert_eq!(subscription_ids(&ts).await, vec![second.clone()]);
    answer(&ts, &old_cap, "approve")
        .await
        .expect_error(410, "capability_ended");
    ts.assert_still_pending(&sid, &aid).await;
    phone
        .delete(&format!("/api/v1/push/subscriptions/{first}"))
        .await
        .expect_error(404, "unknown_subscription");

    // The next card goes to the new keys, once.
    let (_, next) = ask_to_write(&ts, "next.md").await;
    let (push, _) = renewed.gate_message(&service, &gate_id(&next)).await;
    assert!(device.try_read(&push).is_err(), "not to the old keys");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(service.received("phone").len(), 2);
}

/// A capability lives no longer than its card: once the deadline passes it is `410
/// capability_ended`, and the closing push says the card timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_ends_with_its_cards_deadline() {
    let ts = TestServer::configured(&format!("{PUSH_TEST}[approvals]\ntimeout_secs = 2\n")).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let (_, msg) = device.gate_message(&service, &aid).await;
    let cap = capability_of(&msg);

    let deadline = parse_time(str_of(&card, "expires_at"));
    let left = (deadline.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(300)).await;
    answer(&ts, &cap, "approve")
        .await
        .expect_error(410, "capability_ended");
    let resolved = wait_resolution(&ts, &sid, &aid).await;
    assert_eq!(resolved["decision"], "timeout", "{resolved}");
    let (_, done) = device.closing_message(&service, &aid).await;
    assert_eq!(done["decision"], "timeout", "{done}");
    assert!(!ts.ws("notes.md").exists());
}

/// A capability approves the card it was made for, and nothing else: a genuine capability
/// (made under the server's own key, so its MAC holds) whose digest is not the card's is
/// `409 stale_digest` for either answer, the card stays pending and nothing runs; the same
/// grant with the card's own digest answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_for_another_digest_cannot_answer_the_card() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let cap = capability_of(&device.gate_message(&service, &aid).await.1);
    let grant = grant_of(&ts, &cap);
    assert_eq!(grant["d"], card["digest"], "{grant}");

    // What another command card showed: a real digest, not this card's.
    let (other_sid, other) = ask_to_run(&ts, "other.md").await;
    assert_ne!(other["digest"], card["digest"]);
    let mut stale = grant.clone();
    stale["d"] = other["digest"].clone();
    let stale = mint(&ts, &stale);
    assert_ne!(stale, cap);
    for decision in ["approve", "deny"] {
        answer(&ts, &stale, decision)
            .await
            .expect_error(409, "stale_digest");
    }
    ts.assert_still_pending(&sid, &aid).await;
    ts.assert_still_pending(&other_sid, &gate_id(&other)).await;
    assert!(resolutions_of(&ts, &sid, &aid).await.is_empty());
    assert!(!ts.ws("notes.md").exists(), "the command ran");

    // The same grant with the card's own digest, minted the same way, answers it.
    answer(&ts, &mint(&ts, &grant), "approve").await.expect(200);
    wait_file(&ts.ws("notes.md"), RAN).await;
    assert_eq!(
        wait_resolution(&ts, &sid, &aid).await["decision"],
        "approve"
    );
    answer(&ts, &cap, "approve")
        .await
        .expect_error(409, "already_resolved");
    ts.assert_still_pending(&other_sid, &gate_id(&other)).await;
}

// ---------------------------------------------------------------------------------------------
// 2b. What an agent wrote, in a notification
// ---------------------------------------------------------------------------------------------

/// An outside agent's gate for `tool` running `npm test` (`POST /api/v1/gates` with a `gates`
/// token), in a session of its own; returns its `approval_id`.
async fn outside_gate(agent: &Api, tool: &str, title: &str, cwd: &str) -> String {
    outside_call(agent, tool, json!({"command": "npm test"}), title, cwd).await
}

/// An outside agent's gate for `tool` called with `input`, in a session of its own; returns
/// its `approval_id`.
async fn outside_call(agent: &Api, tool: &str, input: Value, title: &str, cwd: &str) -> String {
    let resp = agent
        .post(
            "/api/v1/gates",
            json!({
                "source": "claude-code", "external_session": unknown_sid(), "cwd": cwd,
                "title": title,
                "tool": {"name": tool, "input": input},
                "capabilities": {"edit": false, "always": false, "deny_reason": true},
            }),
        )
        .await;
    assert!(
        resp.status == 201 || resp.status == 200,
        "{} {}",
        resp.status,
        resp.body
    );
    id_of(&resp.json(), "approval_id")
}

/// A notification cannot hide or reorder what the card is about, nor quote as the page:
/// everything an agent wrote (its tool's name, its title, its folder, its command) reaches the
/// push with bidi controls, invisible characters and lookalike quotes written out, as the
/// page and the webhook show them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_agent_wrote_reaches_the_notification_with_hidden_characters_written_out() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    let (agent, _) = named_token(&ts, "hook", "gates").await;
    let aid = outside_call(
        &agent,
        "Read\u{202E}exe.txt\u{200B}",
        json!({"command": "git push \u{2067}origin\u{2069} ❞ok＂"}),
        "Harmless 〞 Countersign: safe \u{202E}ylno daer",
        "/home/me/ap\u{2066}p″",
    )
    .await;
    let (_, msg) = device.gate_message(&service, &aid).await;
    let raw = unseen::deceiving_strings(&msg);
    assert!(
        raw.is_empty(),
        "what an agent wrote reaches the notification as it is: {raw:#?}"
    );
    assert!(str_of(&msg, "tool").contains("U+202E"), "{msg:#}");
    let summary = str_of(&msg, "summary");
    assert!(
        summary.contains("⟨U+2067⟩origin⟨U+2069⟩ ⟨U+275E⟩ok⟨U+FF02⟩"),
        "{msg:#}"
    );
    assert!(str_of(&msg, "title").contains("⟨U+301E⟩"), "{msg:#}");
    assert!(
        str_of(&msg, "session_title").contains("⟨U+2033⟩"),
        "{msg:#}"
    );
}

/// However much an agent writes, its card's notification is one push (≤ 4096 bytes): what it
/// wrote is cut to fit, never the push dropped. A call it cannot show whole only opens the
/// card; a command it shows whole keeps a capability that answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_fits_one_push_whatever_the_agent_wrote() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = subscribed_phone(&ts, &service).await;
    // Each field at its limit, each character as long as JSON escaping or the written-out
    // form makes it…
    let (agent, _) = named_token(&ts, "hook", "gates").await;
    let hidden = outside_gate(
        &agent,
        &"\u{1}".repeat(200),
        &"\u{E0041}".repeat(200),
        &format!("/home/{}", "\u{E0041}".repeat(4000)),
    )
    .await;
    let (push, msg) = device.gate_message(&service, &hidden).await;
    assert!(push.body.len() <= 4096, "{}", push.body.len());
    // A tool name the catalog does not know is a floor card (issue 37).
    assert_eq!(msg["sensitive"], true, "{msg}");
    // A tool name the notification cannot show whole: it only opens the card.
    assert!(msg["capability"].is_null(), "{msg}");
    assert_eq!(msg["actions"], json!([]), "{msg}");
    // …and in four-byte characters a reader sees.
    let wide = "\u{1F600}";
    let ordinary = outside_gate(
        &agent,
        &wide.repeat(200),
        &wide.repeat(200),
        &format!("/home/{}", wide.repeat(4000)),
    )
    .await;
    let (push, msg) = device.gate_message(&service, &ordinary).await;
    assert!(push.body.len() <= 4096, "{}", push.body.len());
    // Its tool name is not one the catalog knows: a floor card (issue 37).
    assert_eq!(msg["sensitive"], true, "{msg}");
    assert!(msg["capability"].is_null(), "{msg}");
    // A call it can show whole, however wide its characters, keeps its buttons.
    let short = outside_gate(&agent, "Bash", &wide.repeat(20), "/home/me").await;
    let (push, msg) = device.gate_message(&service, &short).await;
    assert!(push.body.len() <= 4096, "{}", push.body.len());
    assert_eq!(msg["summary"], "npm test", "{msg}");
    assert_eq!(msg["actions"], json!(["approve", "deny"]), "{msg}");
    answer(&ts, &capability_of(&msg), "deny").await.expect(200);
}

/// A push never delays a gate: with a push service that accepts the connection and never
/// answers, the card still opens, is answered on the page, and the call goes on at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_that_never_answers_delays_no_gate() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    tokio::spawn(async move {
        while let Ok((conn, _)) = silent.accept().await {
            holder.lock().unwrap().push(conn);
        }
    });
    let service = PushService::start().await;
    let mut device = Device::new(&service, "silent");
    device.endpoint = format!("http://{silent_addr}/push/silent");
    subscribe(&ts, &device).await;

    let started = Instant::now();
    let (sid, card) = ask_to_write(&ts, "notes.md").await;
    poll_until("the push service to be called", SOON, async || {
        let n = held.lock().unwrap().len();
        if n > 0 {
            Ok(())
        } else {
            Err("no connection yet")
        }
    })
    .await;
    ts.decide(&sid, &gate_id(&card), json!({"decision": "approve"}))
        .await
        .expect(200);
    wait_file(&ts.ws("notes.md"), "hello").await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the gate waited on the push: {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. What the push service answers
// ---------------------------------------------------------------------------------------------

/// A push service that no longer knows a device (404 or 410) means the subscription is dead:
/// it is dropped at once, with no retry, and the other devices are still told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_the_push_service_forgot_is_unsubscribed() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let forgotten = Device::new(&service, "forgotten");
    let expired = Device::new(&service, "expired");
    let alive = Device::new(&service, "alive");
    service.script("forgotten", &[404]);
    service.script("expired", &[410]);
    subscribe(&phone, &forgotten).await;
    subscribe(&phone, &expired).await;
    let alive_id = id_of(&subscribe(&phone, &alive).await, "id");

    let (_, card) = ask_to_write(&ts, "notes.md").await;
    alive.gate_message(&service, &gate_id(&card)).await;
    service.wait_received("forgotten", 1).await;
    service.wait_received("expired", 1).await;
    poll_until("the gone subscriptions dropped", SOON, async || {
        let ids = subscription_ids(&ts).await;
        if ids == vec![alive_id.clone()] {
            Ok(())
        } else {
            Err(format!("{ids:?}"))
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        service.received("forgotten").len(),
        1,
        "a 404 is not retried"
    );
    assert_eq!(service.received("expired").len(), 1, "a 410 is not retried");

    // The test push tells the same: gone, and unsubscribed.
    let retired = Device::new(&service, "retired");
    service.script("retired", &[410]);
    let retired_id = id_of(&subscribe(&phone, &retired).await, "id");
    let tested = phone
        .post(
            &format!("/api/v1/push/subscriptions/{retired_id}/test"),
            json!({}),
        )
        .await
        .expect(200);
    assert_eq!(tested["delivered"], false, "{tested}");
    assert!(str_of(&tested, "outcome").starts_with("gone"), "{tested}");
    assert_eq!(subscription_ids(&ts).await, vec![alive_id]);
}

/// A push service that fails for now (5xx, 429) is tried again after 1 and 4 s, with the same
/// message; one that refuses the request itself (400) is not, and keeps the subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_push_service_is_retried_with_pauses() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let key = push_key(&phone).await;
    let flaky = Device::new(&service, "flaky");
    let picky = Device::new(&service, "picky");
    service.script("flaky", &[500, 429]);
    service.script("picky", &[400]);
    let flaky_id = id_of(&subscribe(&phone, &flaky).await, "id");
    let picky_id = id_of(&subscribe(&phone, &picky).await, "id");

    let (sid, card) = ask_to_run(&ts, "notes.md").await;
    let aid = gate_id(&card);
    let tries = service.wait_received("flaky", 3).await;
    let first_gap = tries[1].at - tries[0].at;
    let second_gap = tries[2].at - tries[1].at;
    assert!(
        first_gap >= Duration::from_millis(900),
        "the first retry after ~1 s, not {first_gap:?}"
    );
    assert!(
        second_gap >= Duration::from_millis(3900),
        "the second retry after ~4 s, not {second_gap:?}"
    );
    let messages: Vec<Value> = tries.iter().map(|t| flaky.read(t)).collect();
    assert!(messages.iter().all(|m| m == &messages[0]), "{messages:#?}");
    assert_eq!(messages[0]["approval_id"], aid.as_str());
    for t in &tries {
        check_push_headers(t);
        check_vapid(t, &service.origin(), &key);
    }
    assert_eq!(service.received("picky").len(), 1, "a 400 is not retried");
    let mut ids = subscription_ids(&ts).await;
    ids.sort();
    let mut want = vec![flaky_id, picky_id];
    want.sort();
    assert_eq!(ids, want, "only 404 and 410 drop a subscription");

    // The delivered push's capability answers.
    answer(&ts, &capability_of(&messages[0]), "approve")
        .await
        .expect(200);
    wait_file(&ts.ws("notes.md"), RAN).await;
    wait_resolution(&ts, &sid, &aid).await;
}

/// "Send a test" pushes a test message the device can read, and says it was delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_push_reaches_the_device() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, secret) = named_token(&ts, "phone", "approve").await;
    let key = push_key(&phone).await;
    let device = Device::new(&service, "phone");
    let id = id_of(&subscribe(&phone, &device).await, "id");
    let tested = phone
        .post(&format!("/api/v1/push/subscriptions/{id}/test"), json!({}))
        .await
        .expect(200);
    assert_eq!(tested, json!({"delivered": true, "outcome": "delivered"}));
    let (push, msg) = device
        .wait_message(&service, "the test push", |v| v["type"] == "test")
        .await;
    check_push_headers(&push);
    check_vapid(&push, &service.origin(), &key);
    check_no_secrets(&push, &msg, &[&secret]);
    assert!(msg.get("capability").is_none(), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// 4. Who may subscribe, and what a subscription must be
// ---------------------------------------------------------------------------------------------

/// An agent's `gates` token can never answer a card, so it can neither subscribe a device
/// nor read the key; nothing is stored.
#[tokio::test]
async fn a_gates_token_cannot_subscribe_or_read_the_key() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (agent, _) = named_token(&ts, "hook", "gates").await;
    let device = Device::new(&service, "agent");
    agent
        .get("/api/v1/push/key")
        .await
        .expect_error(403, "forbidden");
    agent
        .post("/api/v1/push/subscriptions", device.subscription())
        .await
        .expect_error(403, "forbidden");
    agent
        .get("/api/v1/push/subscriptions")
        .await
        .expect_error(403, "forbidden");
    // Nor can anyone without a credential.
    for (method, path) in [
        (Method::GET, "/api/v1/push/key"),
        (Method::GET, "/api/v1/push/subscriptions"),
        (Method::POST, "/api/v1/push/subscriptions"),
    ] {
        send(ts.anon(method, path).json(&device.subscription()))
            .await
            .expect_error(401, "unauthorized");
    }
    assert!(subscription_ids(&ts).await.is_empty());
    assert!(service.all_received().is_empty(), "nothing was pushed");
}

/// Each credential sees and removes its own subscriptions only (another's is `404
/// unknown_subscription`, as if it did not exist); the admin sees every one.
#[tokio::test]
async fn a_credential_manages_only_its_own_subscriptions() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let (phone, _) = named_token(&ts, "phone", "approve").await;
    let (tablet, _) = named_token(&ts, "tablet", "approve").await;
    let phone_id = id_of(
        &subscribe(&phone, &Device::new(&service, "phone")).await,
        "id",
    );
    let tablet_id = id_of(
        &subscribe(&tablet, &Device::new(&service, "tablet")).await,
        "id",
    );
    assert_eq!(subscription_ids(&phone).await, vec![phone_id.clone()]);
    assert_eq!(subscription_ids(&tablet).await, vec![tablet_id.clone()]);
    let mut all = subscription_ids(&ts).await;
    all.sort();
    let mut want = vec![phone_id.clone(), tablet_id.clone()];
    want.sort();
    assert_eq!(all, want, "the admin sees every subscription");

    phone
        .delete(&format!("/api/v1/push/subscriptions/{tablet_id}"))
        .await
        .expect_error(404, "unknown_subscription");
    phone
        .post(
            &format!("/api/v1/push/subscriptions/{tablet_id}/test"),
            json!({}),
        )
        .await
        .expect_error(404, "unknown_subscription");
    assert!(
        service.received("tablet").is_empty(),
        "no test push was sent"
    );
    assert_eq!(subscription_ids(&tablet).await, vec![tablet_id.clone()]);
    let unknown = uuid::Uuid::new_v4();
    phone
        .delete(&format!("/api/v1/push/subscriptions/{unknown}"))
        .await
        .expect_error(404, "unknown_subscription");

    assert_eq!(
        ts.delete(&format!("/api/v1/push/subscriptions/{phone_id}"))
            .await
            .status
            .as_u16(),
        204,
        "the admin may remove any"
    );
    assert!(subscription_ids(&phone).await.is_empty());
    assert_eq!(subscription_ids(&ts).await, vec![tablet_id]);
}

/// A subscription is outside input: an endpoint that is not https (or http to this machine),
/// keys that are not a P-256 point and a 16-byte secret, unknown fields or missing ones are
/// `400` and nothing is stored — so a push is never sent somewhere it should not go.
#[tokio::test]
async fn a_bad_subscription_is_refused_and_nothing_is_stored() {
    let ts = TestServer::configured(PUSH_TEST).await;
    let service = PushService::start().await;
    let device = Device::new(&service, "good");
    let good = device.subscription();
    let with = |pointer: &str, value: Value| {
        let mut body = good.clone();
        *body.pointer_mut(pointer).unwrap() = value;
        body
    };
    let p256dh = device.public.clone();
    let mut off_curve = p256dh.clone();
    off_curve[64] ^= 1;
    let mut compressed = vec![0x02 | (p256dh[64] & 1)];
    compressed.extend_from_slice(&p256dh[1..33]);
    let mut bad = vec![
        with("/endpoint", json!("http://push.example/x")),
        with("/endpoint", json!("http://10.0.0.1/x")),
        with("/endpoint", json!("http://localhost.evil.example/x")),
        with("/endpoint", json!("http://127.0.0.1.nip.io/x")),
        with("/endpoint", json!("ftp://127.0.0.1/x")),
        with("/endpoint", json!("file:///etc/passwd")),
        with("/endpoint", json!("https://user:pw@push.example/x")),
        with("/endpoint", json!("not a url")),
        with("/endpoint", json!("")),
        with(
            "/endpoint",
            json!(format!("https://push.example/{}", "a".repeat(3000))),
        ),
        with("/endpoint", json!(null)),
        with("/keys/p256dh", json!("!!!")),
        with("/keys/p256dh", json!(B64.encode(&p256dh[..64]))),
        with("/keys/p256dh", json!(B64.encode(&compressed))),
        with("/keys/p256dh", json!(B64.encode(&off_curve))),
        with("/keys/p256dh", json!(B64.encode([0u8; 65]))),
        with("/keys/auth", json!(B64.encode([7u8; 15]))),
        with("/keys/auth", json!(B64.encode([7u8; 17]))),
        with("/keys/auth", json!("")),
        with("/keys", json!({"p256dh": B64.encode(&p256dh)})),
        with("/keys", json!({"auth": B64.encode([7u8; 16])})),
        with("/keys", json!(null)),
    ];
    let mut unknown = good.clone();
    unknown["extra"] = json!(1);
    bad.push(unknown);
    let mut unknown_key = good.clone();
    unknown_key["keys"]["token"] = json!(TOKEN);
    bad.push(unknown_key);
    bad.push(json!({"endpoint": device.endpoint}));
    bad.push(json!([]));
    for body in &bad {
        let resp = ts.post("/api/v1/push/subscriptions", body.clone()).await;
        assert_eq!(resp.status.as_u16(), 400, "{body}: {}", resp.body);
        resp.expect_error(400, "invalid_request");
    }
    assert!(subscription_ids(&ts).await.is_empty(), "nothing stored");

    // The same body as a browser sends it is taken: https anywhere, http to loopback only.
    for endpoint in [
        "https://push.example/send/abc".to_owned(),
        device.endpoint.clone(),
        format!("http://localhost:{}/push/l", service.addr.port()),
    ] {
        ts.post(
            "/api/v1/push/subscriptions",
            with("/endpoint", json!(endpoint)),
        )
        .await
        .expect(201);
    }
    assert_eq!(subscription_ids(&ts).await.len(), 3);
}
