//! Walking every declared route with one credential: the part shared by the tests that send
//! every route every credential (`tests/api/scopes.rs` with tokens, `tests/oidc.rs` with
//! people signed in through the real provider).

use countersign::server::http::scopes::Declared;
use countersign::server::principal::Need;
use reqwest::{Method, RequestBuilder};
use serde_json::json;

use super::{Resp, SOON, TestServer, response};

/// The message a route's check gives a scope that lacks its need (a page may carry a server
/// function's own refusal in its HTML: that is the page rendered, not the route refused).
pub const REFUSED: &str = "a token with the `";

/// A path with each `{param}` (or `{*rest}`) filled with something no object is named.
pub fn filled(path: &str) -> String {
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

/// Sends the request and reads the answer; a stream (`text/event-stream`) is judged by its
/// head alone, since its body never ends.
pub async fn send_or_head(rb: RequestBuilder) -> Resp {
    let resp = response(rb).await;
    let streaming = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    let (status, headers) = (resp.status(), resp.headers().clone());
    if streaming {
        return Resp {
            status,
            headers,
            body: String::new(),
        };
    }
    let body = tokio::time::timeout(SOON, resp.text())
        .await
        .expect("body in time")
        .expect("body read");
    Resp {
        status,
        headers,
        body,
    }
}

/// How a credential is presented: a bearer secret, or a browser login's cookie (sent as the
/// page's own script would, same-origin).
#[derive(Clone, Copy, Debug)]
pub enum Presented<'a> {
    Bearer(&'a str),
    Cookie(&'a str),
}

/// Whether the answer is the route's own check refusing the credential.
pub fn refused_by_the_route(r: &Resp) -> bool {
    r.status.as_u16() == 403 && r.body.starts_with("{\"error\"") && r.body.contains(REFUSED)
}

/// What each role reaches, written out here rather than read from `Need::permits`, so a
/// wrong table in the server shows.
pub const ADMIN_REACHES: &[Need] = &[Need::Gates, Need::Read, Need::Decide, Need::Admin];
pub const APPROVER_REACHES: &[Need] = &[Need::Gates, Need::Read, Need::Decide];
pub const VIEWER_REACHES: &[Need] = &[Need::Gates, Need::Read];
pub const GATES_REACHES: &[Need] = &[Need::Gates];

/// Sends every declared route (but the public ones) once with `who`, which should reach the
/// needs `reaches`, and checks each answer: `403` from the route's check exactly where the
/// route's need is not among them, and never `401`. `what` names the credential in failures.
pub async fn walk_as(
    ts: &TestServer,
    routes: &[Declared],
    who: Presented<'_>,
    reaches: &[Need],
    what: &str,
) {
    for route in routes.iter().filter(|r| r.need != Need::Public) {
        let method = Method::from_bytes(route.method.as_str().as_bytes()).unwrap();
        let rb = ts.anon(method, &filled(&route.path)).json(&json!({}));
        let rb = match who {
            Presented::Bearer(secret) => rb.bearer_auth(secret),
            Presented::Cookie(cookie) => rb
                .header("cookie", cookie)
                .header("sec-fetch-site", "same-origin"),
        };
        let r = send_or_head(rb).await;
        let at = format!(
            "{} {} (needs {:?}) as {what}",
            route.method, route.path, route.need
        );
        assert_eq!(
            refused_by_the_route(&r),
            !reaches.contains(&route.need),
            "{at}: {r:?}"
        );
        assert_ne!(r.status.as_u16(), 401, "{at}: {r:?}");
    }
}
