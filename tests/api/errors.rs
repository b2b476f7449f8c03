//! protocol.md "Errors": every non-2xx answer is `{"error":{"code","message"}}`, and a request
//! that fails validation changes nothing.

use reqwest::Method;
use serde_json::json;

use crate::support::*;

const MIB: usize = 1024 * 1024;

/// A server with one session that already has a few events, and its id.
async fn seeded() -> (TestServer, String) {
    let ts = TestServer::scripted([reply("seed")]).await;
    let sid = ts.create_id(json!({"title": "seed"})).await;
    let turn = ts.send_msg(&sid, "seed", None).await;
    ts.wait_turn_events(&sid, &turn).await;
    (ts, sid)
}

fn raw_post(ts: &TestServer, path: &str, body: &'static str) -> reqwest::RequestBuilder {
    ts.req(Method::POST, path)
        .header("content-type", "application/json")
        .body(body)
}

#[tokio::test]
async fn invalid_json_is_400_invalid_json_and_changes_nothing() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");
    let mode = format!("/api/v1/sessions/{sid}/mode");
    let cases: Vec<(&str, &str, Vec<&'static str>)> = vec![
        (
            "POST",
            "/api/v1/sessions",
            vec![
                "{",
                "{\"title\": }",
                "not json",
                "{\"title\": \"a\",}",
                "{\"title\": \"a\"} x",
            ],
        ),
        (
            "POST",
            &msgs,
            vec![
                "{",
                "{\"text\": }",
                "not json",
                "{\"text\": \"a\",}",
                "{\"text\": \"hi\"",
            ],
        ),
        (
            "PUT",
            &mode,
            vec![
                "{",
                "{\"approval_mode\": }",
                "nope",
                "{\"approval_mode\": \"plan\",}",
            ],
        ),
    ];
    for (method, path, bodies) in cases {
        for body in bodies {
            let r = send(
                ts.req(method.parse().unwrap(), path)
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await;
            assert_eq!(
                r.status.as_u16(),
                400,
                "{method} {path} {body:?}: {}",
                r.body
            );
            r.expect_error(400, "invalid_json");
        }
    }
    // Without a content type, too.
    send(ts.req(Method::POST, &msgs).body("{\"text\": "))
        .await
        .expect_error(400, "invalid_json");
    assert_eq!(ts.state().await, before);
}

/// A body that is not JSON at all is `invalid_json`, whatever field names it happens to start
/// with. Today the answer depends on where serde notices the problem first: an unknown field
/// or a wrong type seen before the syntax error yields `invalid_request`.
#[tokio::test]

async fn invalid_json_is_invalid_json_whatever_it_contains() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");
    for (path, body) in [
        (msgs.as_str(), "{\"title\": }"),
        (msgs.as_str(), "[1,"),
        (msgs.as_str(), "{\"text\": 5,"),
        ("/api/v1/sessions", "{\"colour\": \"red\""),
    ] {
        let r = send(raw_post(&ts, path, body)).await;
        assert_eq!(r.status.as_u16(), 400, "{body:?}: {}", r.body);
        r.expect_error(400, "invalid_json");
    }
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn unknown_field_or_wrong_type_is_400_invalid_request_and_changes_nothing() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");
    let mode = format!("/api/v1/sessions/{sid}/mode");
    ts.post("/api/v1/sessions", json!({"title": "x", "colour": "red"}))
        .await
        .expect_error(400, "invalid_request");
    ts.post("/api/v1/sessions", json!({"title": 5}))
        .await
        .expect_error(400, "invalid_request");
    ts.post("/api/v1/sessions", json!(["title"]))
        .await
        .expect_error(400, "invalid_request");
    ts.post(&msgs, json!({"text": "hi", "mode": "yolo"}))
        .await
        .expect_error(400, "invalid_request");
    ts.post(&msgs, json!({"text": ["hi"]}))
        .await
        .expect_error(400, "invalid_request");
    ts.put(&mode, json!({"approval_mode": "plan", "force": true}))
        .await
        .expect_error(400, "invalid_request");
    assert_eq!(ts.state().await, before);
}

/// `{"text":"aaa…"}` of exactly `len` bytes.
fn message_body(len: usize) -> Vec<u8> {
    let overhead = "{\"text\":\"\"}".len();
    let body = format!("{{\"text\":\"{}\"}}", "a".repeat(len - overhead));
    assert_eq!(body.len(), len);
    body.into_bytes()
}

fn chunked(body: Vec<u8>) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    reqwest::Body::wrap_stream(futures::stream::iter(chunks))
}

#[tokio::test]
async fn body_over_1_mib_with_content_length_is_413() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");

    // A real body just over the limit.
    send(
        ts.req(Method::POST, &msgs)
            .header("content-type", "application/json")
            .body(message_body(MIB + 1)),
    )
    .await
    .expect_error(413, "payload_too_large");
    send(
        ts.req(Method::POST, "/api/v1/sessions")
            .header("content-type", "application/json")
            .body(format!("{{\"title\":\"{}\"}}", "t".repeat(2 * MIB))),
    )
    .await
    .expect_error(413, "payload_too_large");

    // A declared length over the limit is refused before any body is sent.
    let head = format!(
        "POST /api/v1/sessions HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        ts.addr,
        5 * MIB
    );
    let (status, text) = raw_http(ts.addr, &head, b"").await;
    assert_eq!(status, 413, "{text}");
    let v: serde_json::Value = serde_json::from_str(raw_body(&text)).expect("JSON body");
    assert_eq!(v["error"]["code"], "payload_too_large", "{text}");

    // Exactly 1 MiB passes the size check (and then fails as a too-long message).
    send(
        ts.req(Method::POST, &msgs)
            .header("content-type", "application/json")
            .body(message_body(MIB)),
    )
    .await
    .expect_error(400, "invalid_message");
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn body_over_1_mib_chunked_is_413() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    let msgs = format!("/api/v1/sessions/{sid}/messages");
    let r = send(
        ts.req(Method::POST, &msgs)
            .header("content-type", "application/json")
            .body(chunked(message_body(MIB + 1))),
    )
    .await;
    r.expect_error(413, "payload_too_large");
    send(ts.req(Method::POST, "/api/v1/sessions").body(chunked(
        format!("{{\"title\":\"{}\"}}", "t".repeat(3 * MIB)).into_bytes(),
    )))
    .await
    .expect_error(413, "payload_too_large");
    // Exactly 1 MiB, chunked, passes the size check.
    send(
        ts.req(Method::POST, &msgs)
            .header("content-type", "application/json")
            .body(chunked(message_body(MIB))),
    )
    .await
    .expect_error(400, "invalid_message");
    assert_eq!(ts.state().await, before);
}

#[tokio::test]
async fn unknown_api_route_is_404_json() {
    let (ts, sid) = seeded().await;
    let before = ts.state().await;
    for (method, path) in [
        (Method::GET, "/api/v1/nope".to_owned()),
        (Method::POST, "/api/v1/nope".to_owned()),
        (Method::GET, "/api/v1".to_owned()),
        (Method::GET, "/api/v1/".to_owned()),
        (Method::GET, format!("/api/v1/sessions/{sid}/nope")),
        (
            Method::POST,
            format!("/api/v1/sessions/{sid}/messages/extra"),
        ),
        (Method::GET, "/api/v2/sessions".to_owned()),
        (Method::DELETE, "/api/v1/sessions/a/b/c/d".to_owned()),
    ] {
        let r = send(ts.req(method.clone(), &path).json(&json!({}))).await;
        assert_eq!(r.status.as_u16(), 404, "{method} {path}: {}", r.body);
        r.expect_error(404, "not_found");
    }
    // A known route with the wrong method: still a JSON error.
    let r = send(ts.req(Method::PATCH, "/api/v1/sessions").json(&json!({}))).await;
    r.expect_error(405, "method_not_allowed");
    let r = send(
        ts.req(Method::POST, &format!("/api/v1/sessions/{sid}"))
            .json(&json!({})),
    )
    .await;
    r.expect_error(405, "method_not_allowed");
    assert_eq!(ts.state().await, before);
}
