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
use std::collections::HashMap;

use support::idp::*;
use support::walk;
use support::*;

async fn with_cookie(srv: &TestServer, cookie: &str, path: &str) -> StatusCode {
    srv.anon(Method::GET, path)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
}

/// Replaces the person `id`'s roles (as an admin).
async fn set_roles(srv: &TestServer, id: &str, roles: Value) -> Resp {
    srv.put(&format!("/api/v1/people/{id}"), json!({ "roles": roles }))
        .await
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
            && page.contains(r#"data-testid="signed-in-email">alice@example.test<"#),
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

    // An allowed domain's person joins as a viewer, and signs in to read: sessions yes,
    // a push subscription (which exists to answer) no …
    let bob = sign_in(&srv, "bob").await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.page);
    let bob_viewer = bob.session.expect("a viewer's session cookie");
    assert_eq!(
        with_cookie(&srv, &bob_viewer, "/api/v1/sessions").await,
        StatusCode::OK
    );
    assert_eq!(
        with_cookie(&srv, &bob_viewer, "/api/v1/push/key").await,
        StatusCode::FORBIDDEN
    );
    let page = send(
        srv.anon(Method::GET, "/inbox")
            .header("cookie", &bob_viewer)
            .header("sec-fetch-site", "same-origin"),
    )
    .await;
    assert!(
        page.body.contains(r#"data-scope="view""#)
            && page.body.contains(r#"data-person="bob@example.test""#),
        "{page:?}"
    );
    let people = srv.get("/api/v1/people").await.expect(200);
    let bob_row = person(&people, "bob@example.test")
        .expect("bob joined")
        .clone();
    assert_eq!(bob_row["roles"], json!(["viewer"]));
    let bob_id = bob_row["id"].as_str().unwrap().to_owned();
    // … until an admin makes them an approver: the same login answers now.
    srv.put(
        &format!("/api/v1/people/{bob_id}"),
        json!({"roles": ["approver"]}),
    )
    .await
    .expect(200);
    assert_eq!(
        with_cookie(&srv, &bob_viewer, "/api/v1/push/key").await,
        StatusCode::OK
    );
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

    // Removing a person ends their session at once; making them a viewer ends what their
    // logins could answer (and the pushes they subscribed to), not their reading.
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
        StatusCode::OK
    );
    assert_eq!(
        with_cookie(&srv, &bob_cookie, "/api/v1/push/key").await,
        StatusCode::FORBIDDEN
    );
    assert!(
        srv.get("/api/v1/push/subscriptions")
            .await
            .expect(200)
            .as_array()
            .is_some_and(Vec::is_empty)
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

/// A token belongs to its maker: an admin who signed in makes one (owned by her, acting as
/// `person:<email> via token:<name>`); it never does more than her roles give now (made an
/// approver, her admin token approves; made a viewer, it reads), an approver makes none, and
/// removing her revokes it (audited) along with her browser login.
#[tokio::test(flavor = "multi_thread")]
async fn a_persons_token_is_theirs_and_never_outgrows_them() {
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
    let alice_id = alice["id"].as_str().unwrap().to_owned();
    let signed = sign_in(&srv, "alice").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let cookie = signed.session.unwrap();
    let make = |name: &'static str, scope: &'static str| {
        srv.anon(Method::POST, "/api/v1/tokens")
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": name, "scope": scope}))
    };
    // Signed in, Alice makes herself an admin token, as the Tokens page would.
    let made = send(make("alices-laptop", "admin")).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let secret = serde_json::from_str::<Value>(&made.body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = srv.get("/api/v1/tokens").await.expect(200);
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "alices-laptop")
        .expect("listed")
        .clone();
    assert_eq!(row["owner"], "alice@example.test");
    let bearer = |path: &str| {
        let rb = srv.anon(Method::GET, path).bearer_auth(&secret);
        async move { rb.send().await.unwrap().status() }
    };
    assert_eq!(bearer("/api/v1/config").await, StatusCode::OK);
    // An approver now: her admin token approves, and makes no tokens.
    set_roles(&srv, &alice_id, json!(["approver"]))
        .await
        .expect(200);
    assert_eq!(bearer("/api/v1/config").await, StatusCode::FORBIDDEN);
    assert_eq!(bearer("/api/v1/push/key").await, StatusCode::OK);
    assert_eq!(
        send(make("another", "view")).await.status,
        StatusCode::FORBIDDEN
    );
    // A viewer: it reads, and answers nothing.
    set_roles(&srv, &alice_id, json!(["viewer"]))
        .await
        .expect(200);
    assert_eq!(bearer("/api/v1/sessions").await, StatusCode::OK);
    assert_eq!(bearer("/api/v1/push/key").await, StatusCode::FORBIDDEN);
    // An admin again, then removed: the token is revoked with her login.
    set_roles(&srv, &alice_id, json!(["admin"]))
        .await
        .expect(200);
    assert_eq!(bearer("/api/v1/config").await, StatusCode::OK);
    srv.delete(&format!("/api/v1/people/{alice_id}"))
        .await
        .expect(204);
    assert_eq!(bearer("/api/v1/sessions").await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        with_cookie(&srv, &cookie, "/api/v1/sessions").await,
        StatusCode::UNAUTHORIZED
    );
    let listed = srv.get("/api/v1/tokens").await.expect(200);
    assert!(!listed.to_string().contains("alices-laptop"), "{listed}");
    let actions = audit_actions(&srv).await;
    for (actor, action) in [
        ("person:alice@example.test", "token_created"),
        ("token:admin", "token_revoked"),
    ] {
        assert!(
            actions.contains(&(actor.to_owned(), action.to_owned())),
            "{actor} {action} in {actions:?}"
        );
    }
}

/// Roles on every route (issue 41, point 2): three people signed in through the real
/// provider — an admin, an approver, a viewer — a `view` token the admin made for a dashboard,
/// and an agent's `gates` token are each sent every declared route and server function: `403`
/// from the route's check exactly where the role may not go, never `401`.
#[tokio::test(flavor = "multi_thread")]
async fn every_route_gives_each_role_what_it_allows() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let routes = srv.server.as_ref().unwrap().routes.clone();
    let mut people = Vec::new();
    for (account, email, role, scope) in [
        ("alice", "alice@example.test", "admin", walk::ADMIN_REACHES),
        (
            "bob",
            "bob@example.test",
            "approver",
            walk::APPROVER_REACHES,
        ),
        ("carol", "carol@other.test", "viewer", walk::VIEWER_REACHES),
    ] {
        srv.post("/api/v1/people", json!({"email": email, "roles": [role]}))
            .await
            .expect(201);
        let signed = sign_in(&srv, account).await;
        assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
        people.push((role, scope, signed.session.expect("a session cookie")));
    }
    let made = send(
        srv.anon(Method::POST, "/api/v1/tokens")
            .header("cookie", &people[0].2)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": "wall", "scope": "view"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let wall = serde_json::from_str::<Value>(&made.body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = srv
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    for (role, reaches, cookie) in &people {
        walk::walk_as(
            &srv,
            &routes,
            walk::Presented::Cookie(cookie),
            reaches,
            role,
        )
        .await;
    }
    let tokens = [
        (&wall, walk::VIEWER_REACHES, "a view token"),
        (&hook, walk::GATES_REACHES, "a gates token"),
    ];
    for (secret, reaches, what) in tokens {
        walk::walk_as(
            &srv,
            &routes,
            walk::Presented::Bearer(secret),
            reaches,
            what,
        )
        .await;
    }
    // Nothing in the walk ended a login.
    for (role, _, cookie) in &people {
        let still = with_cookie(&srv, cookie, "/api/v1/sessions").await;
        assert_eq!(still, StatusCode::OK, "{role}");
    }
}

/// A waiting card: a viewer's answer is refused (`403`, the card still waits), an approver's
/// is taken and names them, and an answer through a person's token names the person and the
/// token (`person:<email> via token:<name>`), in the gate's state and in the audit; the
/// figures count both answers as the person's.
#[tokio::test(flavor = "multi_thread")]
async fn answers_name_the_person_and_a_viewer_answers_nothing() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let mut cookies = HashMap::new();
    for (account, email, role) in [
        ("alice", "alice@example.test", "admin"),
        ("bob", "bob@example.test", "approver"),
        ("carol", "carol@other.test", "viewer"),
    ] {
        srv.post("/api/v1/people", json!({"email": email, "roles": [role]}))
            .await
            .expect(201);
        let signed = sign_in(&srv, account).await;
        assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
        cookies.insert(account, signed.session.unwrap());
    }
    let as_person = |account: &str, method: Method, path: &str| {
        srv.anon(method, path)
            .header("cookie", &cookies[account])
            .header("sec-fetch-site", "same-origin")
    };
    let made = send(
        as_person("alice", Method::POST, "/api/v1/tokens")
            .json(&json!({"name": "alices-phone", "scope": "approve"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let phone = serde_json::from_str::<Value>(&made.body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = srv
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&srv.base).with_token(hook["token"].as_str().unwrap());
    let gate = |session: &str| {
        json!({"source": "claude-code", "external_session": session,
               "tool": {"name": "Bash", "input": {"command": "make deploy"}}})
    };
    let answer_path = |gate: &Value| {
        format!(
            "/api/v1/sessions/{}/approvals/{}",
            gate["session_id"].as_str().unwrap(),
            gate["approval_id"].as_str().unwrap()
        )
    };
    let first = agent.post("/api/v1/gates", gate("one")).await.expect(201);
    let approve = json!({"decision": "approve"});
    let carol = send(as_person("carol", Method::POST, &answer_path(&first)).json(&approve)).await;
    assert_eq!(carol.status, StatusCode::FORBIDDEN, "{}", carol.body);
    let id = first["approval_id"].as_str().unwrap();
    let waiting = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(waiting["status"], "pending", "{waiting}");
    let bob = send(as_person("bob", Method::POST, &answer_path(&first)).json(&approve)).await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.body);
    let answered = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(answered["actor"], "person:bob@example.test", "{answered}");

    let second = agent.post("/api/v1/gates", gate("two")).await.expect(201);
    let by_token = send(
        srv.anon(Method::POST, &answer_path(&second))
            .bearer_auth(&phone)
            .json(&json!({"decision": "deny"})),
    )
    .await;
    assert_eq!(by_token.status, StatusCode::OK, "{}", by_token.body);
    let id = second["approval_id"].as_str().unwrap();
    let denied = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(
        denied["actor"], "person:alice@example.test via token:alices-phone",
        "{denied}"
    );
    let actions = audit_actions(&srv).await;
    for actor in [
        "person:bob@example.test",
        "person:alice@example.test via token:alices-phone",
    ] {
        assert!(
            actions.contains(&(actor.to_owned(), "gate_resolved".to_owned())),
            "{actor} in {actions:?}"
        );
    }
    let stats = srv.get("/api/v1/stats/decisions").await.expect(200);
    assert_eq!(
        stats["by_person"]["bob@example.test"]["approved"], 1,
        "{stats}"
    );
    assert_eq!(
        stats["by_person"]["alice@example.test"]["denied"], 1,
        "{stats}"
    );
}

/// Red team (issue 41, roles): a person's tokens cannot be used to get around their roles or
/// their removal. Demoted, an admin's own admin token makes no token and changes no config
/// (its maker is capped, not the token's stored scope); a gates token she made claims an
/// agent's name, and removing her frees it for another agent's token; a view token never
/// answers, whatever its maker may do.
#[tokio::test(flavor = "multi_thread")]
async fn a_persons_tokens_do_not_outlast_or_outgrow_them() {
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
    let alice_id = alice["id"].as_str().unwrap().to_owned();
    let signed = sign_in(&srv, "alice").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let cookie = signed.session.unwrap();
    let mut secrets = HashMap::new();
    for (name, scope) in [
        ("laptop", "admin"),
        ("her-agent", "gates"),
        ("wall", "view"),
    ] {
        let made = send(
            srv.anon(Method::POST, "/api/v1/tokens")
                .header("cookie", &cookie)
                .header("sec-fetch-site", "same-origin")
                .json(&json!({"name": name, "scope": scope})),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
        let token = serde_json::from_str::<Value>(&made.body).unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        secrets.insert(name, Api::new(&srv.base).with_token(&token));
    }
    let gate = |session: &str| {
        json!({"source": "claude-code", "external_session": session,
               "tool": {"name": "Bash", "input": {"command": "true"}}})
    };
    let opened = secrets["her-agent"]
        .post("/api/v1/gates", gate("hers"))
        .await;
    assert_eq!(opened.status, StatusCode::CREATED, "{}", opened.body);
    // A view token answers nothing, though its maker is an admin.
    let opened = opened.json();
    let (sid, aid) = (
        str_of(&opened, "session_id"),
        str_of(&opened, "approval_id"),
    );
    let answer = secrets["wall"]
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    // Demoted: her admin token is an approver's now, for every admin route.
    set_roles(&srv, &alice_id, json!(["approver"]))
        .await
        .expect(200);
    let laptop = &secrets["laptop"];
    let made = laptop
        .post(
            "/api/v1/tokens",
            json!({"name": "sneaky", "scope": "admin"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::FORBIDDEN, "{}", made.body);
    let set = send(
        laptop
            .req(Method::PUT, "/api/v1/config/approvals.timeout_secs")
            .json(&json!({"value": 5})),
    )
    .await;
    assert_eq!(set.status, StatusCode::FORBIDDEN, "{}", set.body);
    assert_eq!(
        laptop.get("/api/v1/people").await.status,
        StatusCode::FORBIDDEN
    );
    // Removed: the agent's name her token claimed is free for another agent's token.
    srv.delete(&format!("/api/v1/people/{alice_id}"))
        .await
        .expect(204);
    assert_eq!(
        secrets["her-agent"]
            .get("/api/v1/gates/os-user")
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let other = srv
        .post(
            "/api/v1/tokens",
            json!({"name": "their-agent", "scope": "gates"}),
        )
        .await
        .expect(201);
    let other = Api::new(&srv.base).with_token(other["token"].as_str().unwrap());
    let claimed = other.post("/api/v1/gates", gate("theirs")).await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    let listed = srv.get("/api/v1/tokens").await.expect(200);
    for gone in ["laptop", "her-agent", "wall"] {
        assert!(!listed.to_string().contains(gone), "{gone} in {listed}");
    }
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

// ---- Red team (issue 41, roles and tokens, helper rtroles). ----

/// A viewer "may nothing: every answer is refused `403`" (README, Teams) — yet a viewer who
/// signed in, and a `view` token an admin made for a wall's dashboard, can each close any
/// agent's waiting card through `POST /api/v1/gates/{id}/cancel`: the card leaves the
/// approvers' Inbox unanswered and the agent's call does not run. A cancel is an answer in all
/// but name (it resolves the card, `gate_resolved` in the audit, the actor the viewer's).
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_viewer_cannot_close_an_agents_card() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    srv.post(
        "/api/v1/people",
        json!({"email": "carol@other.test", "roles": ["viewer"]}),
    )
    .await
    .expect(201);
    let signed = sign_in(&srv, "carol").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let carol = signed.session.unwrap();
    let wall = srv
        .post("/api/v1/tokens", json!({"name": "wall", "scope": "view"}))
        .await
        .expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let hook = srv
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&srv.base).with_token(hook["token"].as_str().unwrap());
    let gate = |session: &str| {
        json!({"source": "claude-code", "external_session": session,
               "tool": {"name": "Bash", "input": {"command": "make release"}}})
    };
    // Carol, signed in as a viewer, from the page's own origin.
    let first = agent.post("/api/v1/gates", gate("one")).await.expect(201);
    let id = first["approval_id"].as_str().unwrap().to_owned();
    let by_carol = send(
        srv.anon(Method::POST, &format!("/api/v1/gates/{id}/cancel"))
            .header("cookie", &carol)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({})),
    )
    .await;
    let state = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(
        (by_carol.status, state["status"].as_str()),
        (StatusCode::FORBIDDEN, Some("pending")),
        "a viewer closed an agent's card: {} / {state}",
        by_carol.body
    );
    // The wall's `view` token.
    let second = agent.post("/api/v1/gates", gate("two")).await.expect(201);
    let id = second["approval_id"].as_str().unwrap().to_owned();
    let by_wall = send(
        srv.anon(Method::POST, &format!("/api/v1/gates/{id}/cancel"))
            .bearer_auth(&wall)
            .json(&json!({})),
    )
    .await;
    let state = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(
        (by_wall.status, state["status"].as_str()),
        (StatusCode::FORBIDDEN, Some("pending")),
        "a view token closed an agent's card: {} / {state}",
        by_wall.body
    );
}

/// The same door, quieter: a viewer polls an agent's gate with `watch` and goes away; with
/// nobody else watching (an agent that polls without `watch`), the card closes as
/// `agent_gone` a few seconds later — a viewer ended a card it may not answer.
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_viewers_watch_does_not_close_an_agents_card() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    srv.post(
        "/api/v1/people",
        json!({"email": "carol@other.test", "roles": ["viewer"]}),
    )
    .await
    .expect(201);
    let signed = sign_in(&srv, "carol").await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.page);
    let carol = signed.session.unwrap();
    let hook = srv
        .post("/api/v1/tokens", json!({"name": "hook", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&srv.base).with_token(hook["token"].as_str().unwrap());
    let opened = agent
        .post(
            "/api/v1/gates",
            json!({"source": "claude-code", "external_session": "s",
                   "tool": {"name": "Bash", "input": {"command": "make release"}}}),
        )
        .await
        .expect(201);
    let id = opened["approval_id"].as_str().unwrap().to_owned();
    let watched = with_cookie(&srv, &carol, &format!("/api/v1/gates/{id}?wait=0&watch=5")).await;
    assert_eq!(watched, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_secs(9)).await;
    let state = agent.get(&format!("/api/v1/gates/{id}")).await.expect(200);
    assert_eq!(
        state["status"], "pending",
        "a viewer's watch closed the agent's card: {state}"
    );
}

/// The provider's verified email is taken as written, without the checks an invited address
/// gets (`normalized_email`: no spaces, no control characters). A provider account of an
/// allowed domain whose address reads `alice@example.test via token:phone@example.test` joins,
/// and everything it does is written `person:alice@example.test via token:phone@example.test`,
/// which reads back (`Actor::parse`) as Alice through a token called `phone@example.test`: the
/// audit names her for a sign-in she never made, and, once the joiner is made an approver,
/// the figures count its answers as hers.
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_provider_address_cannot_spell_another_persons_actor() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "\"example.test\"").await;
    let signed = sign_in(&srv, "spoofer").await;
    assert_eq!(
        signed.status,
        StatusCode::FORBIDDEN,
        "an address with spaces signed in: {}",
        signed.page
    );
    assert!(signed.session.is_none());
    let people = srv.get("/api/v1/people").await.expect(200);
    assert!(
        people.as_array().unwrap().is_empty(),
        "the address joined: {people}"
    );
    for (actor, _) in audit_actions(&srv).await {
        assert!(
            !actor.starts_with("person:alice@example.test"),
            "the audit names alice for someone else: {actor}"
        );
    }
}

/// An agent that opens its gates with an admin credential claims no name, so its Allow always
/// grants are kept under its `source` with no token holding it. A `view` token — a wall's
/// read-only dashboard, the scope a viewer has — then opens one gate under that name: it
/// claims the name, and the claim ends what was given under it (`rule_revoked`, actor
/// `token:wall`). Revoking rules is an admin's; a viewer revoked one, and now owns the agent's
/// name (its real token gets `403 source_claimed`).
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_view_token_cannot_revoke_an_agents_grants_by_claiming_its_name() {
    let srv = TestServer::configured("").await;
    // The agent's hook holds the admin token: its gates claim nothing.
    let gate = |session: &str, command: &str| {
        json!({"source": "claude-code", "external_session": session,
               "tool": {"name": "Bash", "input": {"command": command}}})
    };
    let first = srv
        .post("/api/v1/gates", gate("s1", "cargo test"))
        .await
        .expect(201);
    let answered = srv
        .post(
            &format!(
                "/api/v1/sessions/{}/approvals/{}",
                first["session_id"].as_str().unwrap(),
                first["approval_id"].as_str().unwrap()
            ),
            json!({"decision": "allow_always", "rule": {"scope": "workspace"}}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    let live = |rules: &Value| {
        rules
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["source"] == "claude-code" && r["lapsed"].is_null())
            .count()
    };
    assert_eq!(live(&srv.get("/api/v1/rules").await.expect(200)), 1);
    // The wall's view token opens one gate as `claude-code`.
    let wall = srv
        .post("/api/v1/tokens", json!({"name": "wall", "scope": "view"}))
        .await
        .expect(201);
    let viewer = Api::new(&srv.base).with_token(wall["token"].as_str().unwrap());
    let opened = viewer.post("/api/v1/gates", gate("w", "true")).await;
    let rules = srv.get("/api/v1/rules").await.expect(200);
    assert_eq!(
        (opened.status, live(&rules)),
        (StatusCode::FORBIDDEN, 1),
        "a view token opened a gate as the agent ({}) and its grant is gone: {rules}",
        opened.body
    );
}

/// A person removed while their own requests are in flight: an admin who signed in makes
/// tokens while another admin removes her. A token whose maker was looked up before the
/// removal and stored after it outlives her — listed as `removed person <id>`, which the docs
/// say "removing a person never leaves" — and keeps its name taken. (Her other tokens were
/// revoked with her, in the removal's transaction.)
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_token_made_during_its_makers_removal_does_not_outlive_her() {
    set_secret();
    let Some(idp) = start_idp() else { return };
    let srv = server_for(&idp, "").await;
    let mut leftovers: Vec<String> = Vec::new();
    for round in 0..5 {
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
        let makes = (0..40).map(|i| {
            srv.anon(Method::POST, "/api/v1/tokens")
                .header("cookie", &cookie)
                .header("sec-fetch-site", "same-origin")
                .json(&json!({"name": format!("r{round}-t{i}"), "scope": "view"}))
                .send()
        });
        let made = futures::future::join_all(makes);
        let removal = async {
            tokio::time::sleep(std::time::Duration::from_millis(3)).await;
            srv.delete(&format!("/api/v1/people/{}", alice["id"].as_str().unwrap()))
                .await
                .expect(204);
        };
        let (_, ()) = tokio::join!(made, removal);
    }
    let listed = srv.get("/api/v1/tokens").await.expect(200);
    leftovers.extend(
        listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["owner"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("removed person")
            })
            .map(|t| t["name"].as_str().unwrap().to_owned()),
    );
    assert!(
        leftovers.is_empty(),
        "tokens outlived the person who made them: {leftovers:?}"
    );
}

/// A person removed while her agent's gates are being opened: her `gates` token was checked
/// by the request before the removal and claims the agent's name after it (the removal's
/// transaction already freed that token's names). The name stays claimed by a token that no
/// longer exists: the agent's new token gets `403 source_claimed` "revoke token:hook to free
/// it", and revoking `hook` answers `404 unknown_token`.
#[tokio::test(flavor = "multi_thread")]
async fn rt_a_removed_persons_token_leaves_no_claim_behind() {
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
    let made = send(
        srv.anon(Method::POST, "/api/v1/tokens")
            .header("cookie", signed.session.as_ref().unwrap())
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"name": "hook", "scope": "gates"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let hook = serde_json::from_str::<Value>(&made.body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let gate = |source: String| {
        json!({"source": source, "external_session": "s",
               "tool": {"name": "Bash", "input": {"command": "true"}}})
    };
    let opens = (0..40).map(|i| {
        srv.anon(Method::POST, "/api/v1/gates")
            .bearer_auth(&hook)
            .json(&gate(format!("agent-{i}")))
            .send()
    });
    let removal = async {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        srv.delete(&format!("/api/v1/people/{}", alice["id"].as_str().unwrap()))
            .await
            .expect(204);
    };
    let (_, ()) = tokio::join!(futures::future::join_all(opens), removal);
    let fresh = srv
        .post("/api/v1/tokens", json!({"name": "hook2", "scope": "gates"}))
        .await
        .expect(201);
    let agent = Api::new(&srv.base).with_token(fresh["token"].as_str().unwrap());
    let mut stuck = Vec::new();
    for i in 0..40 {
        let opened = agent
            .post("/api/v1/gates", gate(format!("agent-{i}")))
            .await;
        if opened.status == StatusCode::FORBIDDEN {
            stuck.push(format!("agent-{i}: {}", opened.body));
        }
    }
    assert!(
        stuck.is_empty(),
        "names still claimed by the removed person's token: {stuck:?}; revoking it: {:?}",
        srv.delete("/api/v1/tokens/hook").await.status
    );
}
