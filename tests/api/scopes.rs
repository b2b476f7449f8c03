//! Permissions closed by default: every route the server declares is sent every credential
//! (none, a `gates`, an `approve` and an `admin` token), and each gets exactly what the
//! route's declared need allows — `401` (or the login page) without one, `403` for a scope
//! that lacks it, and past the check for one that has it. A route added without a need cannot
//! exist (`server::http::scopes::Routes` is the only way one is added), and one whose need is
//! wrong shows here.

use countersign::server::http::scopes::Need;
use countersign::server::principal::Scope;
use reqwest::Method;
use serde_json::json;

use crate::support::*;

/// The message a route's check gives a scope that lacks its need.
const REFUSED: &str = "scope may not do this";

/// A path with each `{param}` (or `{*rest}`) filled with something no object is named.
fn filled(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
        out.push_str("0b7b1f3e-1111-4222-8333-444455556666");
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

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
    let credentials = [
        (Scope::Gates, gates.as_str()),
        (Scope::Approve, approve.as_str()),
        (Scope::Admin, TOKEN),
    ];
    let mut checked = 0;
    for route in &routes {
        let path = filled(&route.path);
        let method = Method::from_bytes(route.method.as_str().as_bytes()).unwrap();
        let what = format!("{} {}", route.method, route.path);

        let anonymous = send(ts.anon(method.clone(), &path).json(&json!({}))).await;
        let to_login = anonymous.status.as_u16() == 303
            && anonymous.header("location") == Some("/login");
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
            let r = send(
                ts.anon(method.clone(), &path)
                    .bearer_auth(secret)
                    .json(&json!({})),
            )
            .await;
            let refused = r.status.as_u16() == 403 && r.body.contains(REFUSED);
            // A server function checks its own need past the route's (`tests/outside.rs`
            // holds each scope to each): here, only that the route lets through whom it may.
            if route.checked_inside && route.need.permits(scope) {
                continue;
            }
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
    for need in [Need::Public, Need::Gates, Need::Read, Need::Decide, Need::Admin] {
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
