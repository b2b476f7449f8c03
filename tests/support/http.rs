//! HTTP plumbing: a bearer-authenticated client for one server, answers read whole, and the
//! checks of the protocol's status and error body.

use std::net::SocketAddr;

use reqwest::header::HeaderMap;
use reqwest::{Client, Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use super::{SOON, TOKEN};

/// A client that does not follow redirects (so tests see the 303s themselves).
pub fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("reqwest client")
}

/// One server's API as a client sees it: its base URL (`http://127.0.0.1:port`) and a token.
/// The session, snapshot and gate helpers live in `session.rs`, the feed in `sse.rs`.
pub struct Api {
    pub base: String,
    pub client: Client,
    pub token: String,
}

impl Api {
    pub fn new(base: &str) -> Api {
        Api {
            base: base.trim_end_matches('/').to_owned(),
            client: client(),
            token: TOKEN.to_owned(),
        }
    }

    /// The same server, with another token (a generated one, or a wrong one).
    pub fn with_token(mut self, token: &str) -> Api {
        self.token = token.to_owned();
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with the bearer token.
    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(&self.token)
    }

    /// A request with no credentials at all.
    pub fn anon(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub async fn get(&self, path: &str) -> Resp {
        send(self.req(Method::GET, path)).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        send(self.req(Method::DELETE, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        send(self.req(Method::POST, path).json(&body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Resp {
        send(self.req(Method::PUT, path).json(&body)).await
    }
}

/// A whole answer: status, headers and the body text.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

/// Sends the request; the answer's head must come within [`SOON`].
pub async fn response(rb: RequestBuilder) -> reqwest::Response {
    tokio::time::timeout(SOON, rb.send())
        .await
        .expect("response in time")
        .expect("request sent")
}

/// Sends the request and reads the whole answer, each within [`SOON`].
pub async fn send(rb: RequestBuilder) -> Resp {
    let resp = response(rb).await;
    let status = resp.status();
    let headers = resp.headers().clone();
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

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    /// Asserts the status; returns the JSON body (`Null` when empty).
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        if self.body.is_empty() {
            Value::Null
        } else {
            self.json()
        }
    }

    /// Asserts the status and the protocol's error body `{"error":{"code","message"}}`: JSON,
    /// the expected code, a message that is not blank. Returns the body.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status (wanted {status} {code}); body: {}",
            self.body
        );
        let ct = self.header("content-type").unwrap_or("");
        assert!(
            ct.starts_with("application/json"),
            "error content-type {ct:?}, body {:?}",
            self.body
        );
        let v = self.json();
        let error = v
            .get("error")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("no error object: {v}"));
        assert_eq!(error.get("code"), Some(&json!(code)), "{v}");
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no error message: {v}"));
        assert!(!message.trim().is_empty(), "{v}");
        v
    }
}

/// Writes `head` (must end with a blank line) and `body`, then reads the answer to EOF: for
/// requests reqwest will not make (a declared length with no body). Returns (status, text).
pub async fn raw_http(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    if !body.is_empty() {
        stream.write_all(body).await.expect("write body");
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(SOON, stream.read_to_end(&mut out))
        .await
        .expect("raw answer in time");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, text)
}

/// The body part of a raw HTTP answer (after the blank line).
pub fn raw_body(text: &str) -> &str {
    text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("")
}
