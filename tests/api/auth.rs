//! protocol.md "Auth": bearer token, the login cookie, the same-origin check, page redirects.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// `/login?token=…` → the `Cookie` header value to send back.
async fn login_cookie(ts: &TestServer) -> String {
    let r = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    assert_eq!(r.status.as_u16(), 303, "{r:?}");
    assert_eq!(r.header("location"), Some("/"));
    let set = r.header("set-cookie").expect("Set-Cookie").to_owned();
    let pair = set.split(';').next().unwrap().trim().to_owned();
    assert!(pair.starts_with("countersign_session="), "{set}");
    pair
}

#[tokio::test]
async fn api_sse_and_server_functions_need_the_token() {
    let ts = TestServer::scripted([]).await;
    let sid = ts.create_id(json!({"title": "t"})).await;
    let before = ts.state().await;
    let s = format!("/api/v1/sessions/{sid}");
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/api/v1/sessions".into(), None),
        (
            Method::POST,
            "/api/v1/sessions".into(),
            Some(json!({"title": "x"})),
        ),
        (Method::GET, s.clone(), None),
        (Method::DELETE, s.clone(), None),
        (
            Method::PUT,
            format!("{s}/mode"),
            Some(json!({"approval_mode": "yolo"})),
        ),
        (
            Method::POST,
            format!("{s}/messages"),
            Some(json!({"text": "hi"})),
        ),
        (Method::POST, format!("{s}/cancel"), None),
        (Method::GET, format!("{s}/events"), None),
        (Method::GET, format!("{s}/events?after=0"), None),
        (
            Method::GET,
            format!("/api/v1/sessions/{}", unknown_sid()),
            None,
        ),
        (Method::GET, "/api/v1/nope".into(), None),
        // Server functions (the UI's door) sit behind the same check.
        (Method::POST, "/api/ui/sessions".into(), Some(json!({}))),
        (
            Method::POST,
            "/api/ui/create_session".into(),
            Some(json!({})),
        ),
        (
            Method::POST,
            "/api/ui/snapshot".into(),
            Some(json!({"session_id": sid})),
        ),
        (
            Method::POST,
            "/api/ui/delete_session".into(),
            Some(json!({"session_id": sid})),
        ),
        (
            Method::POST,
            "/api/ui/send_message".into(),
            Some(json!({"session_id": sid, "text": "hi", "approval_mode": "yolo"})),
        ),
    ];
    let wrong: Vec<(&str, String)> = vec![
        ("none", String::new()),
        ("wrong", "Bearer wrong-token-456".into()),
        ("prefix", format!("Bearer {}", &TOKEN[..TOKEN.len() - 1])),
        ("longer", format!("Bearer {TOKEN}4")),
        ("no scheme", TOKEN.into()),
        ("basic", format!("Basic {TOKEN}")),
        ("empty bearer", "Bearer ".into()),
    ];
    for (method, path, body) in &routes {
        for (label, auth) in &wrong {
            let mut rb = ts.anon(method.clone(), path);
            if !auth.is_empty() {
                rb = rb.header("authorization", auth);
            }
            if let Some(body) = body {
                rb = rb.json(body);
            }
            let r = send(rb).await;
            assert_eq!(
                r.status.as_u16(),
                401,
                "{method} {path} with {label} auth: {}",
                r.body
            );
            r.expect_error(401, "unauthorized");
        }
        // A cookie that is not the one login hands out.
        let mut rb = ts
            .anon(method.clone(), path)
            .header("cookie", format!("countersign_session={TOKEN}"));
        if let Some(body) = body {
            rb = rb.json(body);
        }
        send(rb).await.expect_error(401, "unauthorized");
    }
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn server_functions_work_with_the_bearer_token() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({"title": "one"})).await;
    let r = send(ts.req(Method::POST, "/api/ui/sessions").json(&json!({}))).await;
    let v = r.expect(200);
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["id"], sid.as_str());
}

#[tokio::test]
async fn login_sets_an_httponly_strict_cookie_and_redirects_home() {
    let ts = TestServer::start().await;
    let r = send(ts.anon(Method::GET, &format!("/login?token={TOKEN}"))).await;
    assert_eq!(r.status.as_u16(), 303, "{r:?}");
    assert_eq!(r.header("location"), Some("/"));
    let set = r.header("set-cookie").expect("Set-Cookie");
    let attrs: Vec<String> = set
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect();
    assert!(set.starts_with("countersign_session="), "{set}");
    assert!(attrs.iter().any(|a| a == "httponly"), "{set}");
    assert!(attrs.iter().any(|a| a == "samesite=strict"), "{set}");
    assert!(
        !set.contains(TOKEN),
        "the cookie should not carry the raw token: {set}"
    );

    // The cookie works for GETs on the API, the feed and pages.
    let cookie = login_cookie(&ts).await;
    let r = send(
        ts.anon(Method::GET, "/api/v1/sessions")
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(r.expect(200), json!([]));
    // ... among other cookies too.
    let r = send(
        ts.anon(Method::GET, "/api/v1/sessions")
            .header("cookie", format!("theme=dark; {cookie}; other=1")),
    )
    .await;
    r.expect(200);
    let sid = ts.create_id(json!({})).await;
    let feed = Sse::open(
        ts.anon(Method::GET, &format!("/api/v1/sessions/{sid}/events"))
            .header("cookie", &cookie),
    )
    .await
    .expect("cookie opens the feed");
    assert!(
        feed.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let r = send(ts.anon(Method::GET, "/").header("cookie", &cookie)).await;
    assert!(r.status.is_redirection(), "{r:?}");
    assert_eq!(
        r.header("location"),
        Some(format!("/sessions/{sid}").as_str())
    );
}

#[tokio::test]
async fn login_with_a_wrong_token_is_401_without_cookie() {
    let ts = TestServer::start().await;
    for q in ["wrong-token", "test-token-12", "test-token-1234", ""] {
        let r = send(ts.anon(Method::GET, &format!("/login?token={q}"))).await;
        assert_eq!(r.status.as_u16(), 401, "token {q:?}: {r:?}");
        assert!(r.header("set-cookie").is_none(), "{r:?}");
    }
    // No token at all: the login page.
    let r = send(ts.anon(Method::GET, "/login")).await;
    assert_eq!(r.status.as_u16(), 200);
    assert!(r.header("set-cookie").is_none());
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
}

#[tokio::test]
async fn pages_without_auth_redirect_to_login() {
    let ts = TestServer::start().await;
    let sid = ts.create_id(json!({})).await;
    for path in ["/", &format!("/sessions/{sid}"), "/sessions/whatever"] {
        let r = send(ts.anon(Method::GET, path)).await;
        assert!(r.status.is_redirection(), "{path}: {r:?}");
        assert_eq!(r.header("location"), Some("/login"), "{path}");
    }
    // With auth, `/` opens the most recent session.
    let newest = ts.create_id(json!({})).await;
    let r = send(ts.req(Method::GET, "/")).await;
    assert!(r.status.is_redirection(), "{r:?}");
    assert_eq!(
        r.header("location"),
        Some(format!("/sessions/{newest}").as_str())
    );
}

#[tokio::test]
async fn home_creates_a_session_when_there_is_none() {
    let ts = TestServer::start().await;
    let r = send(ts.req(Method::GET, "/")).await;
    assert!(r.status.is_redirection(), "{r:?}");
    let list = ts.list().await;
    assert_eq!(list.len(), 1);
    assert_eq!(
        r.header("location"),
        Some(format!("/sessions/{}", list[0]["id"].as_str().unwrap()).as_str())
    );
}

#[tokio::test]
async fn cookie_writes_from_another_origin_are_403_csrf() {
    let ts = TestServer::scripted([]).await;
    let cookie = login_cookie(&ts).await;
    let sid = ts.create_id(json!({"title": "target"})).await;
    let before = ts.state().await;
    let s = format!("/api/v1/sessions/{sid}");
    let writes: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/api/v1/sessions".into(),
            Some(json!({"title": "evil"})),
        ),
        (Method::DELETE, s.clone(), None),
        (
            Method::PUT,
            format!("{s}/mode"),
            Some(json!({"approval_mode": "yolo"})),
        ),
        (
            Method::POST,
            format!("{s}/messages"),
            Some(json!({"text": "rm -rf"})),
        ),
        (Method::POST, format!("{s}/cancel"), None),
        (
            Method::POST,
            "/api/ui/create_session".into(),
            Some(json!({})),
        ),
        (
            Method::POST,
            "/api/ui/delete_session".into(),
            Some(json!({"session_id": sid})),
        ),
    ];
    let hostile: Vec<Vec<(&str, String)>> = vec![
        vec![("origin", "http://evil.example".into())],
        vec![("origin", format!("http://evil.example:{}", ts.addr.port()))],
        vec![("origin", "null".into())],
        vec![("sec-fetch-site", "cross-site".into())],
        vec![("sec-fetch-site", "same-site".into())],
        // Sec-Fetch-Site wins over a forged same-origin Origin.
        vec![
            ("sec-fetch-site", "cross-site".into()),
            ("origin", ts.base.clone()),
        ],
    ];
    for (method, path, body) in &writes {
        for headers in &hostile {
            let mut rb = ts.anon(method.clone(), path).header("cookie", &cookie);
            for (k, v) in headers {
                rb = rb.header(*k, v);
            }
            if let Some(body) = body {
                rb = rb.json(body);
            }
            let r = send(rb).await;
            assert_eq!(
                r.status.as_u16(),
                403,
                "{method} {path} {headers:?}: {}",
                r.body
            );
            r.expect_error(403, "csrf");
        }
    }
    assert_eq!(ts.state().await, before);

    // Reads are not state-changing: a cross-origin GET with the cookie is answered.
    send(
        ts.anon(Method::GET, "/api/v1/sessions")
            .header("cookie", &cookie)
            .header("origin", "http://evil.example"),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn cookie_writes_from_the_same_origin_succeed() {
    let ts = TestServer::start().await;
    let cookie = login_cookie(&ts).await;
    let same = ts.base.clone();
    let with_cookie = |method: Method, path: &str| ts.anon(method, path).header("cookie", &cookie);

    let r = send(
        with_cookie(Method::POST, "/api/v1/sessions")
            .header("origin", &same)
            .json(&json!({"title": "by origin"})),
    )
    .await;
    let a = r.expect(201);
    let r = send(
        with_cookie(Method::POST, "/api/v1/sessions")
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"title": "by fetch metadata"})),
    )
    .await;
    r.expect(201);
    // Not a browser (neither header): allowed.
    send(with_cookie(Method::POST, "/api/v1/sessions").json(&json!({"title": "script"})))
        .await
        .expect(201);
    let sid = a["id"].as_str().unwrap();
    send(
        with_cookie(Method::PUT, &format!("/api/v1/sessions/{sid}/mode"))
            .header("origin", &same)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"approval_mode": "plan"})),
    )
    .await
    .expect(200);
    // The UI's server function with the cookie from the same origin.
    let r = send(
        with_cookie(Method::POST, "/api/ui/create_session")
            .header("origin", &same)
            .json(&json!({})),
    )
    .await;
    r.expect(200);
    assert_eq!(ts.list().await.len(), 4);
    let r = send(
        with_cookie(Method::DELETE, &format!("/api/v1/sessions/{sid}")).header("origin", &same),
    )
    .await;
    assert_eq!(r.status.as_u16(), 204, "{r:?}");
    assert_eq!(ts.list().await.len(), 3);
}

#[tokio::test]
async fn bearer_requests_skip_the_origin_check() {
    let ts = TestServer::start().await;
    let cookie = login_cookie(&ts).await;
    let r = send(
        ts.req(Method::POST, "/api/v1/sessions")
            .header("origin", "http://evil.example")
            .header("sec-fetch-site", "cross-site")
            .json(&json!({"title": "bearer"})),
    )
    .await;
    let s = r.expect(201);
    let sid = s["id"].as_str().unwrap();
    // Both credentials: the bearer token decides.
    send(
        ts.req(Method::PUT, &format!("/api/v1/sessions/{sid}/mode"))
            .header("cookie", &cookie)
            .header("origin", "http://evil.example")
            .json(&json!({"approval_mode": "plan"})),
    )
    .await
    .expect(200);
    let r = send(
        ts.req(Method::DELETE, &format!("/api/v1/sessions/{sid}"))
            .header("sec-fetch-site", "cross-site"),
    )
    .await;
    assert_eq!(r.status.as_u16(), 204, "{r:?}");
}

/// A token row whose scope this build cannot read (a newer build's, a hand edit, a near
/// spelling of a real one) authenticates nothing, is listed as written, and can be revoked.
#[tokio::test]
async fn a_token_with_a_scope_this_build_cannot_read_is_refused() {
    let ts = TestServer::scripted([]).await;
    for (i, stored) in ["root", "Admin", "admin ", "approve\u{0}", ""]
        .iter()
        .enumerate()
    {
        let name = format!("odd{i}");
        let created = ts
            .post("/api/v1/tokens", json!({"name": name, "scope": "admin"}))
            .await
            .expect(201);
        let secret = created["token"].as_str().unwrap().to_owned();
        let as_it = |method: Method, path: &str| ts.anon(method, path).bearer_auth(&secret);
        assert_eq!(
            send(as_it(Method::GET, "/api/v1/sessions"))
                .await
                .status
                .as_u16(),
            200
        );

        let changed = sql(
            &ts.db(),
            &format!(
                "UPDATE tokens SET scope = '{}' WHERE name = '{name}'",
                stored.replace('\0', "' || char(0) || '")
            ),
        );
        assert_eq!(changed, 1);
        for (method, path) in [
            (Method::GET, "/api/v1/sessions"),
            (Method::GET, "/api/v1/tokens"),
            (Method::GET, "/api/v1/inbox"),
        ] {
            send(as_it(method, path))
                .await
                .expect_error(401, "unauthorized");
        }
        send(as_it(Method::POST, "/api/v1/sessions").json(&json!({"title": "x"})))
            .await
            .expect_error(401, "unauthorized");

        let listed = ts.get("/api/v1/tokens").await.expect(200);
        let row = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"));
        assert_eq!(row["scope"], *stored, "listed as stored: {row}");
        assert_eq!(
            ts.delete(&format!("/api/v1/tokens/{name}"))
                .await
                .status
                .as_u16(),
            204
        );
    }
}

/// A login link followed from another site (`Sec-Fetch-Site: cross-site`) logs nobody in by
/// itself: it shows a confirmation whose form only this site can post, and spends nothing; the
/// person's press logs in. Typed or pasted links (`none`) log in at once. Every login is
/// audited as `browser_logged_in` with what it used and the device, never the secret.
#[tokio::test]
async fn a_login_link_from_another_site_is_confirmed_before_it_logs_in() {
    let ts = TestServer::start().await;
    for site in ["cross-site", "same-site"] {
        let r = send(
            ts.anon(Method::GET, &format!("/login?token={TOKEN}"))
                .header("sec-fetch-site", site),
        )
        .await;
        assert_eq!(r.status.as_u16(), 200, "{site}: {r:?}");
        assert!(
            r.header("set-cookie").is_none(),
            "{site}: nothing set: {r:?}"
        );
        assert!(
            r.body.contains(r#"method="post" action="/login""#)
                && r.body.contains(r#"name="token""#),
            "{}",
            r.body
        );
    }
    // The confirmation posted from another site is refused, from this one it logs in.
    let form = format!("token={TOKEN}");
    let forged = send(
        ts.anon(Method::POST, "/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "cross-site")
            .body(form.clone()),
    )
    .await;
    assert_eq!(forged.status.as_u16(), 403, "{forged:?}");
    assert!(forged.header("set-cookie").is_none());
    let confirmed = send(
        ts.anon(Method::POST, "/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .header(
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
            )
            .body(form),
    )
    .await;
    assert_eq!(confirmed.status.as_u16(), 303, "{confirmed:?}");
    assert!(confirmed.header("set-cookie").is_some());
    // Opened directly: at once.
    let direct = send(
        ts.anon(Method::GET, &format!("/login?token={TOKEN}"))
            .header("sec-fetch-site", "none"),
    )
    .await;
    assert_eq!(direct.status.as_u16(), 303, "{direct:?}");

    let audit = ts
        .get("/api/v1/audit?action=browser_logged_in")
        .await
        .expect(200);
    let entries = audit.as_array().unwrap();
    assert_eq!(
        entries.len(),
        2,
        "two logins, the refused ones none: {audit:#}"
    );
    assert!(
        entries.iter().any(|e| e["actor"] == "browser"
            && e["detail"]["with"] == "token"
            && e["detail"]["device"] == "Firefox on Linux"),
        "{audit:#}"
    );
    assert!(!audit.to_string().contains(TOKEN), "no secret in the audit");
}
