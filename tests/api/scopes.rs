//! Permissions closed by default: every route the server declares is sent every credential
//! (none, a `gates`, a `view`, an `approve` and an `admin` token; people signed in with each
//! role are walked the same way in `tests/oidc.rs`), and each gets exactly what the
//! route's declared need allows — `401` (or the login page) without one, `403` for a scope
//! that lacks it, and past the check for one that has it. A route added without a need cannot
//! exist (`server::http::scopes::Routes` is the only way one is added), and one whose need is
//! wrong shows here.

use countersign::server::principal::Need;
use countersign::server::principal::Scope;
use reqwest::Method;
use serde_json::json;

use crate::support::walk::{REFUSED, filled, send_or_head};
use crate::support::*;

async fn token(ts: &TestServer, name: &str, scope: &str) -> String {
    let made = ts
        .post("/api/v1/tokens", json!({"name": name, "scope": scope}))
        .await
        .expect(201);
    made["token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn every_declared_route_gives_each_credential_what_its_need_allows() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    assert!(routes.len() > 40, "only {} routes declared", routes.len());
    let approve = token(&ts, "phone", "approve").await;
    let gates = token(&ts, "agent", "gates").await;
    let view = token(&ts, "wall", "view").await;
    let credentials = [
        (Scope::Gates, gates.as_str()),
        (Scope::View, view.as_str()),
        (Scope::Approve, approve.as_str()),
        (Scope::Admin, TOKEN),
    ];
    let mut checked = 0;
    for route in &routes {
        let path = filled(&route.path);
        let method = Method::from_bytes(route.method.as_str().as_bytes()).unwrap();
        let what = format!("{} {}", route.method, route.path);

        let anonymous = send(ts.anon(method.clone(), &path).json(&json!({}))).await;
        let to_login =
            anonymous.status.as_u16() == 303 && anonymous.header("location") == Some("/login");
        match route.need {
            Need::Public => assert!(
                anonymous.status.as_u16() != 401 && !to_login,
                "{what} is public, yet without a credential: {anonymous:?}"
            ),
            _ => assert!(
                anonymous.status.as_u16() == 401 || to_login,
                "{what} needs {:?}, yet without a credential: {anonymous:?}",
                route.need
            ),
        }
        for (scope, secret) in credentials {
            let r = send_or_head(
                ts.anon(method.clone(), &path)
                    .bearer_auth(secret)
                    .json(&json!({})),
            )
            .await;
            let refused = r.status.as_u16() == 403
                && r.body.starts_with("{\"error\"")
                && r.body.contains(REFUSED);
            assert_eq!(
                refused,
                !route.need.permits(scope),
                "{what} (needs {:?}) as {scope:?}: {r:?}",
                route.need
            );
            assert_ne!(r.status.as_u16(), 401, "{what} as {scope:?}: {r:?}");
        }
        checked += 1;
    }
    // Some needs are declared on enough routes that a wrong table would show.
    for need in [
        Need::Public,
        Need::Gates,
        Need::Read,
        Need::Decide,
        Need::Admin,
    ] {
        assert!(
            routes.iter().any(|r| r.need == need),
            "no route declares {need:?}"
        );
    }
    assert_eq!(checked, routes.len());
}

#[tokio::test]
async fn the_outside_gate_routes_are_all_a_gates_token_reaches() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    let reachable: Vec<String> = routes
        .iter()
        .filter(|r| r.need != Need::Public && r.need.permits(Scope::Gates))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        reachable,
        [
            "POST /api/v1/gates",
            "GET /api/v1/gates/os-user",
            "POST /api/v1/gates/{id}/cancel",
            "GET /api/v1/gates/{id}",
        ]
    );
}

/// What a phone's `approve` token may change is pinned here: answering cards (and reporting
/// the reviewer's answers), and keeping its own device's push subscription. A route that needs more than reading, given to it by
/// mistake, shows up as a new line.
#[tokio::test]
async fn an_approve_token_changes_only_answers_and_its_device() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    let mut deciding: Vec<String> = routes
        .iter()
        .filter(|r| r.need == Need::Decide)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    deciding.sort();
    assert_eq!(
        deciding,
        [
            "DELETE /api/v1/push/subscriptions/{id}",
            "GET /api/v1/push/key",
            "GET /api/v1/push/subscriptions",
            "POST /api/ui/decide",
            // "I would not have approved this" (issue 40): an answer about an answer.
            "POST /api/ui/review_disagree",
            "POST /api/v1/push/subscriptions",
            "POST /api/v1/push/subscriptions/{id}/test",
            "POST /api/v1/review/disagree/{approval_id}",
            "POST /api/v1/sessions/{sid}/approvals/{aid}",
            "POST /api/v1/sessions/{sid}/approvals/{aid}/passkey",
            "POST /forms/decide",
        ]
    );
    // Reading is reading: no route it reads by changes anything.
    for route in routes.iter().filter(|r| r.need == Need::Read) {
        let reads = route.method == Method::GET || route.path.starts_with("/api/ui/");
        assert!(reads, "{} {} needs only a reader", route.method, route.path);
    }
}

/// A declared path asked with a method it does not have says so only to a credential that
/// may read: nobody and an agent's `gates` token learn nothing of what routes there are.
#[tokio::test]
async fn a_method_a_route_does_not_have_tells_nothing_to_those_who_may_not_read() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    let gates = token(&ts, "agent", "gates").await;
    let mut paths: Vec<&str> = routes
        .iter()
        .filter(|r| r.need != Need::Public && !r.path.contains("{*"))
        .map(|r| r.path.as_str())
        .collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let declared: Vec<&Method> = routes
            .iter()
            .filter(|r| r.path == path)
            .map(|r| &r.method)
            .collect();
        let Some(other) = [Method::DELETE, Method::PATCH, Method::PUT, Method::POST]
            .into_iter()
            .find(|m| !declared.contains(&m))
        else {
            continue;
        };
        let at = filled(path);
        let anonymous = send(ts.anon(other.clone(), &at)).await;
        assert_eq!(
            anonymous.status.as_u16(),
            401,
            "{other} {path}: {anonymous:?}"
        );
        let agent = send(ts.anon(other.clone(), &at).bearer_auth(&gates)).await;
        assert_eq!(
            agent.status.as_u16(),
            403,
            "{other} {path} as gates: {agent:?}"
        );
        let admin = send(ts.anon(other.clone(), &at).bearer_auth(TOKEN)).await;
        assert_eq!(
            admin.status.as_u16(),
            405,
            "{other} {path} as admin: {admin:?}"
        );
    }
}

/// What a viewer's `view` scope reaches is reading only (issue 41): no route it reaches
/// answers a card, keeps a device subscribed, or changes anything (a server function it may
/// call reads). The outside-gate routes any credential reaches are the only exception.
#[tokio::test]
async fn a_view_scope_reaches_only_reading() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    for route in routes.iter().filter(|r| r.need.permits(Scope::View)) {
        let what = format!("{} {}", route.method, route.path);
        match route.need {
            Need::Public | Need::Gates => {}
            Need::Read => assert!(
                route.method == Method::GET || route.path.starts_with("/api/ui/"),
                "{what} changes something, yet a viewer reaches it"
            ),
            other => panic!("{what} needs {other:?}, yet a viewer reaches it"),
        }
        for answering in [
            "/approvals/",
            "/decide",
            "/push/subscriptions",
            "/review/disagree",
            "disagree",
        ] {
            assert!(
                !route.path.contains(answering) || route.need == Need::Public,
                "{what} answers, yet a viewer reaches it"
            );
        }
    }
}

/// An approver (`approve`) reaches no configuration, people, tokens, passkeys, reviewer trust
/// or rule-revoking API route, and no server function that does those (issue 41: "admin (config,
/// people, tokens, rules of others)").
#[tokio::test]
async fn an_approve_scope_reaches_no_admin_route() {
    let ts = TestServer::scripted([]).await;
    let routes = ts.server.as_ref().unwrap().routes.clone();
    let admin_only = [
        "/config",
        "/people",
        "/tokens",
        "/passkeys",
        "/review/classes",
        "/stats/",
        "/api/ui/config",
        "/api/ui/set_config",
        "/api/ui/tokens",
        "/api/ui/create_token",
        "/api/ui/revoke_token",
        "/api/ui/phone_login",
        "/api/ui/revoke_rule",
        "/api/ui/your_answers",
    ];
    let mut checked = 0;
    for route in &routes {
        let what = format!("{} {}", route.method, route.path);
        // The pages (`/config`, `/tokens`) are a reader's: what they show comes from these.
        let api = route.path.starts_with("/api/");
        let admins = (api && admin_only.iter().any(|p| route.path.contains(p)))
            || (route.method == Method::DELETE && route.path.starts_with("/api/v1/rules"));
        if admins {
            assert!(
                !route.need.permits(Scope::Approve),
                "{what} reaches an approver"
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} admin routes found");
}
