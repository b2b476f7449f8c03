//! Sign-in with OpenID Connect against a real provider (issue 41): the npm `oidc-provider`
//! (`end2end/oidc/provider.mjs`, installed by `ensure_oidc_provider` in scripts/lib.sh) on
//! loopback, and the server configured for it. Each sign-in walks the real authorization
//! code flow over HTTP: the server's redirect, the provider's login form posted, its redirect
//! back with the code, the callback. Skipped, loudly, when node or the provider is missing,
//! unless the run requires it (`CI=true`, or `COUNTERSIGN_OIDC_PROVIDER=required`, which
//! scripts/test sets): then it fails.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::idp::*;
use support::*;

async fn with_cookie(srv: &TestServer, cookie: &str, path: &str) -> StatusCode {
    srv.anon(Method::GET, path)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
}

fn person<'a>(people: &'a Value, email: &str) -> Option<&'a Value> {
    people
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["email"] == email)
}

async fn audit_actions(srv: &TestServer) -> Vec<(String, String)> {
    let audit = srv.get("/api/v1/audit?limit=500").await.expect(200);
    let entries = audit["entries"]
        .as_array()
        .or(audit.as_array())
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap_or("").to_owned(),
                e["action"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// A browser's push subscription (a real P-256 key; the endpoint is never reached here).
fn push_subscription() -> Value {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    let secret = loop {
        if let Ok(key) = p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
            break key;
        }
    };
    let public = secret.public_key().to_encoded_point(false);
    json!({
        "endpoint": "http://127.0.0.1:9/push/bob",
        "expirationTime": null,
        "keys": {"p256dh": B64.encode(public.as_bytes()), "auth": B64.encode([7u8; 16])},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn people_sign_in_with_a_real_provider_and_only_those_let_in() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let config = format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[notify]\npush_test_endpoints = true\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\nname = \"Test IdP\"\nallowed_domains = [\"example.test\"]\n",
        idp.issuer
    );
    let srv = TestServer::configured(&config).await;

    // The login page offers the provider.
    let login = send(srv.anon(Method::GET, "/login")).await;
    assert!(
        login.body.contains("Sign in with Test IdP"),
        "{}",
        login.body
    );

    // Inviting: a bad email or role is 400, a second invitation of the same email 409.
    srv.post(
        "/api/v1/people",
        json!({"email": "not-an-email", "roles": ["approver"]}),
    )
    .await
    .expect_error(400, "invalid_request");
    let bad_role = srv
        .post(
            "/api/v1/people",
            json!({"email": "x@example.test", "roles": ["owner"]}),
        )
        .await;
    assert_eq!(bad_role.status, 400, "{}", bad_role.body);
    let alice = srv
        .post("/api/v1/people", json!({"email": "Alice@Example.test", "roles": ["approver"], "groups": ["maintainers"]}))
        .await
        .expect(201);
    assert_eq!(alice["email"], "alice@example.test");
    srv.post(
        "/api/v1/people",
        json!({"email": "alice@example.test", "roles": ["admin"]}),
    )
    .await
    .expect_error(409, "name_taken");
    let alice_id = alice["id"].as_str().unwrap().to_owned();

    // An invited person signs in, is bound to their provider identity, and reads sessions.
    let signed = sign_in(&srv, "alice").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    assert!(
        signed.page.contains("alice@example.test"),
        "{}",
        signed.page
    );
    let alice_cookie = signed.session.expect("a session cookie");
    assert_eq!(
        with_cookie(&srv, &alice_cookie, "/api/v1/sessions").await,
        StatusCode::OK
    );
    // The page names her.
    let page = srv
        .anon(Method::GET, "/inbox")
        .header("cookie", &alice_cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"data-person="alice@example.test""#)
            && page.contains(r#"class="signed-in-as muted">alice@example.test<"#),
        "{page}"
    );
    // An approver is no admin.
    assert_eq!(
        with_cookie(&srv, &alice_cookie, "/api/v1/people").await,
        StatusCode::FORBIDDEN
    );
    let bound = srv
        .get(&format!("/api/v1/people/{alice_id}"))
        .await
        .expect(200);
    assert_eq!(bound["subject"], "alice");
    assert_eq!(bound["issuer"], idp.issuer.as_str());
    assert_eq!(bound["name"], "Alice Example");
    // A second sign-in finds her by her provider identity.
    assert_eq!(sign_in(&srv, "alice").await.status, StatusCode::OK);

    // Someone not invited, of a domain not allowed: refused, nothing created.
    let carol = sign_in(&srv, "carol").await;
    assert_eq!(carol.status, StatusCode::FORBIDDEN);
    assert!(carol.page.contains("was not invited"), "{}", carol.page);
    assert!(carol.session.is_none());
    let people = srv.get("/api/v1/people").await.expect(200);
    assert!(person(&people, "carol@other.test").is_none());

    // An email the provider does not vouch for lets nobody in, even of an allowed domain.
    let eve = sign_in(&srv, "eve").await;
    assert_eq!(eve.status, StatusCode::FORBIDDEN);
    assert!(eve.page.contains("not verified"), "{}", eve.page);
    assert!(
        person(
            &srv.get("/api/v1/people").await.expect(200),
            "eve@example.test"
        )
        .is_none()
    );

    // An allowed domain's person joins as a viewer, and viewers do not sign in yet …
    let bob = sign_in(&srv, "bob").await;
    assert_eq!(bob.status, StatusCode::FORBIDDEN);
    assert!(
        bob.page.contains("viewers cannot sign in yet"),
        "{}",
        bob.page
    );
    assert!(bob.session.is_none());
    let people = srv.get("/api/v1/people").await.expect(200);
    let bob_row = person(&people, "bob@example.test")
        .expect("bob joined")
        .clone();
    assert_eq!(bob_row["roles"], json!(["viewer"]));
    let bob_id = bob_row["id"].as_str().unwrap().to_owned();
    // … until an admin makes them an approver.
    srv.put(
        &format!("/api/v1/people/{bob_id}"),
        json!({"roles": ["approver"]}),
    )
    .await
    .expect(200);
    let bob = sign_in(&srv, "bob").await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.page);
    let bob_cookie = bob.session.expect("a session cookie");
    assert_eq!(
        with_cookie(&srv, &bob_cookie, "/api/v1/sessions").await,
        StatusCode::OK
    );

    // Bob's phone subscribes to pushes with his login.
    let sub = send(
        srv.anon(Method::POST, "/api/v1/push/subscriptions")
            .header("cookie", &bob_cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&push_subscription()),
    )
    .await
    .expect(201);
    assert_eq!(sub["credential"], "person:bob@example.test");

    // A tampered state is refused.
    let tampered = sign_in_with(&srv, "alice", |q| q.replace("state=", "state=x")).await;
    assert_eq!(tampered.status, StatusCode::FORBIDDEN);
    assert!(
        tampered.page.contains("state did not match"),
        "{}",
        tampered.page
    );
    assert!(tampered.session.is_none());

    // Removing a person ends their session at once; so does taking away every role that
    // signs in.
    srv.delete(&format!("/api/v1/people/{alice_id}"))
        .await
        .expect(204);
    assert_eq!(
        with_cookie(&srv, &alice_cookie, "/api/v1/sessions").await,
        StatusCode::UNAUTHORIZED
    );
    srv.get(&format!("/api/v1/people/{alice_id}"))
        .await
        .expect_error(404, "unknown_person");
    srv.put(
        &format!("/api/v1/people/{bob_id}"),
        json!({"roles": ["viewer"]}),
    )
    .await
    .expect(200);
    assert_eq!(
        with_cookie(&srv, &bob_cookie, "/api/v1/sessions").await,
        StatusCode::UNAUTHORIZED
    );

    // The audit names each person and each refusal.
    let actions = audit_actions(&srv).await;
    for (actor, action) in [
        ("token:admin", "person_invited"),
        ("person:alice@example.test", "browser_logged_in"),
        ("person:carol@other.test", "sign_in_refused"),
        ("person:bob@example.test", "person_joined"),
        ("person:bob@example.test", "browser_logged_in"),
        ("oidc", "sign_in_refused"),
        ("token:admin", "person_removed"),
        ("token:admin", "person_changed"),
        // Bob's login's push subscription went with it.
        ("token:admin", "push_unsubscribed"),
    ] {
        assert!(
            actions.contains(&(actor.to_owned(), action.to_owned())),
            "{actor} {action} in {actions:?}"
        );
    }
}

// ---- Red team (issue 41, step 1): each of these failed when it was written. ----

/// A token made by a person would keep everything it grants after they are removed (tokens
/// do not yet record who made them): so a person who signed in, even an admin, makes none —
/// 403, nothing stored — and removing them ends all they hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_makes_no_token_that_would_outlive_them() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let alice = srv
        .post(
            "/api/v1/people",
            json!({"email": "alice@example.test", "roles": ["admin"]}),
        )
        .await
        .expect(201);
    let signed = sign_in(&srv, "alice").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let cookie = signed.session.unwrap();
    // Signed in, Alice tries to make herself an admin token, as the Tokens page would.
    let made = send(
        srv.anon(Method::POST, "/api/v1/tokens")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": "alices-laptop", "scope": "admin"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::FORBIDDEN, "{}", made.body);
    let listed = srv.get("/api/v1/tokens").await.expect(200);
    assert!(!listed.to_string().contains("alices-laptop"), "{listed}");
    // An admin removes her: her browser login ends …
    srv.delete(&format!("/api/v1/people/{}", alice["id"].as_str().unwrap()))
        .await
        .expect(204);
    assert_eq!(
        with_cookie(&srv, &cookie, "/api/v1/sessions").await,
        StatusCode::UNAUTHORIZED
    );
}

/// An address that only lowercases to the invited one is not it: `\u{212A}` (KELVIN SIGN)
/// lowercases to an ASCII `k`, so a provider account verified as `\u{212A}ate@example.test`
/// (another mailbox, for any mail system that does not fold Unicode case) signs in as the
/// invited `kate@example.test`, an admin.
#[tokio::test(flavor = "multi_thread")]
async fn a_look_alike_address_is_not_the_invited_one() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let kate = srv
        .post(
            "/api/v1/people",
            json!({"email": "kate@example.test", "roles": ["admin"]}),
        )
        .await
        .expect(201);
    let kelvin = sign_in(&srv, "kelvin").await;
    let bound = srv
        .get(&format!("/api/v1/people/{}", kate["id"].as_str().unwrap()))
        .await
        .expect(200);
    assert_eq!(
        kelvin.status,
        StatusCode::FORBIDDEN,
        "\\u{{212A}}ate@example.test signed in as kate@example.test (bound: {bound}): {}",
        kelvin.page
    );
    assert!(kelvin.session.is_none());
    assert!(bound["subject"].is_null(), "{bound}");
}

/// An email the provider does not vouch for is whatever the account typed: the audit must not
/// name it as a person (`person:alice@example.test`, who never tried to sign in).
#[tokio::test(flavor = "multi_thread")]
async fn an_unverified_address_names_nobody_in_the_audit() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let mallory = sign_in(&srv, "mallory").await;
    assert_eq!(mallory.status, StatusCode::FORBIDDEN, "{}", mallory.page);
    let actions = audit_actions(&srv).await;
    assert!(
        actions.contains(&("oidc".to_owned(), "sign_in_refused".to_owned())),
        "{actions:?}"
    );
    assert!(
        !actions
            .iter()
            .any(|(actor, _)| actor == "person:alice@example.test"),
        "an unverified claim is named as a person in the audit: {actions:?}"
    );
}

/// An approver's browser login opens an outside agent's gate under its name and so claims the
/// name for `person:<email>`: the agent's own `gates` token is then refused (`403
/// source_claimed`), and nothing frees the name, not even removing the person (a claim ends
/// only with a token).
#[tokio::test(flavor = "multi_thread")]
async fn a_person_cannot_squat_an_agents_name() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let bob = srv
        .post(
            "/api/v1/people",
            json!({"email": "bob@example.test", "roles": ["approver"]}),
        )
        .await
        .expect(201);
    let signed = sign_in(&srv, "bob").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let cookie = signed.session.unwrap();
    let gate = |session: &str| {
        json!({"source": "claude-code", "external_session": session,
               "tool": {"name": "Bash", "input": {"command": "true"}}})
    };
    let squat = send(
        srv.anon(Method::POST, "/api/v1/gates")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&gate("bobs")),
    )
    .await;
    assert_eq!(squat.status, StatusCode::FORBIDDEN, "{}", squat.body);
    // Bob is removed; the agent's hook gets its own token and opens its first gate.
    srv.delete(&format!("/api/v1/people/{}", bob["id"].as_str().unwrap()))
        .await
        .expect(204);
    let hook = srv
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&srv.base).with_token(hook["token"].as_str().unwrap());
    let opened = agent.post("/api/v1/gates", gate("agents")).await;
    assert_eq!(
        opened.status,
        StatusCode::CREATED,
        "the removed approver's gate ({}: {}) keeps the agent's name: {}",
        squat.status,
        squat.body,
        opened.body
    );
}

/// A callback belongs to the browser that started it, once: without its flow cookie, with
/// another browser's, or a second time, it signs nobody in (held when written; kept as a
/// regression test).
#[tokio::test(flavor = "multi_thread")]
async fn a_callback_belongs_to_one_browser_once() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    srv.post(
        "/api/v1/people",
        json!({"email": "alice@example.test", "roles": ["admin"]}),
    )
    .await
    .expect(201);
    let start = || async {
        let r = srv
            .anon(Method::GET, "/auth/oidc/start")
            .send()
            .await
            .unwrap();
        let flow = set_cookies(r.headers())
            .into_iter()
            .find(|(k, _)| k == "countersign_oidc")
            .map(|(k, v)| format!("{k}={v}"))
            .unwrap();
        (flow, r.headers()["location"].to_str().unwrap().to_owned())
    };
    let back = |query: String, cookie: Option<String>| {
        let mut rb = srv.anon(Method::GET, &format!("/auth/oidc/callback?{query}"));
        if let Some(c) = cookie {
            rb = rb.header("cookie", c);
        }
        async move {
            let r = rb.send().await.unwrap();
            let session = set_cookies(r.headers())
                .into_iter()
                .any(|(k, v)| k == "countersign_session" && !v.is_empty());
            (r.status(), session)
        }
    };
    // The attacker's own callback (alice stands for them), finished in a victim's browser
    // that holds no flow cookie, or its own sign-in's: refused, no session.
    let (_attacker_flow, to) = start().await;
    let query = at_provider(&to, "alice").await;
    assert_eq!(
        back(query.clone(), None).await,
        (StatusCode::UNAUTHORIZED, false)
    );
    let (victim_flow, _) = start().await;
    assert_eq!(
        back(query.clone(), Some(victim_flow.clone())).await,
        (StatusCode::FORBIDDEN, false)
    );
    // The victim's own sign-in was spent by that: its flow gives nothing any more.
    assert_eq!(
        back(query, Some(victim_flow)).await,
        (StatusCode::UNAUTHORIZED, false)
    );
    // The right browser signs in once; the same callback again is refused.
    let (flow, to) = start().await;
    let query = at_provider(&to, "alice").await;
    assert_eq!(
        back(query.clone(), Some(flow.clone())).await,
        (StatusCode::OK, true)
    );
    assert_eq!(
        back(query, Some(flow)).await,
        (StatusCode::UNAUTHORIZED, false)
    );
    // A provider's error (or anyone's link saying one) is text on a page that signs nobody in.
    let (status, session) = back(
        "error=access_denied&error_description=%3Cscript%3Ex%3C%2Fscript%3E".into(),
        None,
    )
    .await;
    assert_eq!((status, session), (StatusCode::FORBIDDEN, false));
}

/// A provider that takes the connection and never answers: the login page does not ask it,
/// and a sign-in gives up on it in bounded time with a page saying so (held when written).
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_provider_hangs_nothing() {
    set_secret();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = silent.accept().await {
            held.push(conn);
        }
    });
    let srv = TestServer::configured(&format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{issuer}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\n"
    ))
    .await;
    let t = std::time::Instant::now();
    assert_eq!(
        send(srv.anon(Method::GET, "/login")).await.status,
        StatusCode::OK
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    let t = std::time::Instant::now();
    let started = srv
        .anon(Method::GET, "/auth/oidc/start")
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::BAD_GATEWAY);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t.elapsed()
    );
}

/// The peak of this process's resident memory, in MiB (Linux).
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

/// A provider (compromised, or anything answering at the issuer) that sends a discovery
/// document of 256 MiB: any visitor's `/auth/oidc/start` makes the server read all of it
/// into memory (no cap on what the provider sends; only the 10 s limit), and each start
/// does so again, since discovery is read at every sign-in.
#[tokio::test(flavor = "multi_thread")]
async fn a_provider_cannot_fill_the_servers_memory() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    set_secret();
    const BODY: usize = 256 << 20;
    let huge = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", huge.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = huge.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {BODY}\r\n\r\n"
                );
                let _ = conn.write_all(head.as_bytes()).await;
                let chunk = vec![b' '; 1 << 20];
                for _ in 0..(BODY >> 20) {
                    if conn.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let srv = TestServer::configured(&format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{issuer}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\n"
    ))
    .await;
    let before = peak_mib();
    let started = srv
        .anon(Method::GET, "/auth/oidc/start")
        .send()
        .await
        .unwrap();
    let grew = peak_mib().saturating_sub(before);
    assert_eq!(started.status(), StatusCode::BAD_GATEWAY);
    assert!(
        grew < 32,
        "one unauthenticated start made the server hold {grew} MiB of the provider's answer"
    );
}
