//! The benchmark's server and HTTP client: a real server started in-process on 127.0.0.1:0
//! with its data in a temp directory, and the few API calls the figures need.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::error::{BenchError, Result};
use super::sse::Sse;
use crate::server::{self, settings::ServeArgs};

/// The access token every benchmark server uses.
pub const TOKEN: &str = "countersign-bench-token";

/// A temp directory removed on drop (the crate's `tempfile` is a dev-dependency only).
pub struct TempRoot {
    path: PathBuf,
}

impl TempRoot {
    pub fn new() -> std::io::Result<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("countersign-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(TempRoot { path })
    }

    /// A subdirectory for one server.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// An event feed read straight off its socket.
pub struct RawFeed {
    socket: tokio::net::TcpStream,
    seen: Vec<u8>,
}

impl RawFeed {
    /// Reads until an event of type `kind` has arrived (matched on its `event:` line).
    pub async fn wait_for(&mut self, kind: &str) -> Result<()> {
        use tokio::io::AsyncReadExt;
        let needle = format!("event: {kind}\n");
        let needle = needle.as_bytes();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(at) = self.seen.windows(needle.len()).position(|w| w == needle) {
                // Consumed: the next wait looks only at what came after it.
                self.seen.drain(..at + needle.len());
                return Ok(());
            }
            // Keep only a tail that could hold the start of the needle.
            let keep = self.seen.len().saturating_sub(needle.len());
            self.seen.drain(..keep);
            let n = self.socket.read(&mut chunk).await?;
            if n == 0 {
                return Err(BenchError::Protocol(format!("feed closed before {kind}")));
            }
            self.seen.extend_from_slice(&chunk[..n]);
        }
    }
}

/// What a bench client talks to: Countersign in-process, or the in-memory peer.
enum Running {
    Countersign(server::Server),
    Peer(super::peer::Peer),
}

/// A running in-process server and a client for it.
pub struct BenchServer {
    running: Running,
    addr: std::net::SocketAddr,
    pub base: String,
    pub http: reqwest::Client,
}

/// The bench's HTTP client: the bearer on every request, a deep pool, no Nagle delay.
fn client() -> Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    let auth = reqwest::header::HeaderValue::from_str(&format!("Bearer {TOKEN}"))
        .map_err(|e| BenchError::Protocol(format!("auth header: {e}")))?;
    headers.insert(reqwest::header::AUTHORIZATION, auth);
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()?)
}

impl BenchServer {
    /// Starts on `dir` (`data/` and `ws/` inside it; reused on restart), demo agent.
    pub async fn start(dir: &Path, config: Option<&str>) -> Result<Self> {
        std::fs::create_dir_all(dir.join("ws"))?;
        let storage = format!(
            "[storage]\nsynchronous = \"{}\"\n",
            super::sync_level().as_str()
        );
        let path = dir.join("config.toml");
        std::fs::write(&path, format!("{storage}{}", config.unwrap_or_default()))?;
        let config_path = Some(path);
        let args = ServeArgs {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: Some(dir.join("data")),
            workspace: Some(dir.join("ws")),
            token: Some(TOKEN.into()),
            config: config_path,
            database_url: super::database_url(),
        };
        let server = server::start(args.resolve()?, None).await?;
        Ok(BenchServer {
            addr: server.addr,
            base: format!("http://{}", server.addr),
            running: Running::Countersign(server),
            http: client()?,
        })
    }

    /// Starts the in-memory peer (`peer.rs`) on `dir` (its writes go to `ws/` inside it).
    pub async fn start_peer(dir: &Path) -> Result<Self> {
        let peer = super::peer::Peer::start(dir.join("ws")).await?;
        Ok(BenchServer {
            addr: peer.addr,
            base: format!("http://{}", peer.addr),
            running: Running::Peer(peer),
            http: client()?,
        })
    }

    /// Graceful stop: cancel, then await the serve task (at most 30 s).
    pub async fn stop(self) -> Result<()> {
        let BenchServer { running, http, .. } = self;
        drop(http);
        let server = match running {
            Running::Countersign(server) => server,
            Running::Peer(peer) => return Ok(peer.stop().await?),
        };
        server.shutdown.cancel();
        match tokio::time::timeout(Duration::from_secs(30), server.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(e.into()),
            Ok(Err(e)) => return Err(BenchError::Protocol(format!("server task: {e}"))),
            Err(_) => return Err(BenchError::Protocol("server did not stop in 30 s".into())),
        }
        drop(server.core);
        Ok(())
    }

    /// How many sessions the server's hub holds in memory (the peer keeps no hub: 0).
    pub fn live_sessions(&self) -> usize {
        match &self.running {
            Running::Countersign(server) => server.core.live_sessions(),
            Running::Peer(_) => 0,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    async fn json_ok(resp: reqwest::Response, what: &str) -> Result<Value> {
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(BenchError::Status {
                what: what.to_owned(),
                status: status.as_u16(),
                body,
            });
        }
        if status == reqwest::StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        Ok(resp.json().await?)
    }

    /// A new session in this approval mode; its id.
    pub async fn create_session(&self, mode: &str) -> Result<String> {
        let resp = self
            .http
            .post(self.url("/sessions"))
            .json(&json!({ "approval_mode": mode }))
            .send()
            .await?;
        let v = Self::json_ok(resp, "create session").await?;
        str_field(&v, "id")
    }

    /// Sends a message (starts a turn).
    pub async fn send_message(&self, sid: &str, text: &str) -> Result<()> {
        let resp = self
            .http
            .post(self.url(&format!("/sessions/{sid}/messages")))
            .json(&json!({ "text": text }))
            .send()
            .await?;
        Self::json_ok(resp, "send message").await.map(|_| ())
    }

    /// Sets a session's mode.
    pub async fn set_mode(&self, sid: &str, mode: &str) -> Result<()> {
        let resp = self
            .http
            .put(self.url(&format!("/sessions/{sid}/mode")))
            .json(&json!({ "approval_mode": mode }))
            .send()
            .await?;
        Self::json_ok(resp, "set mode").await.map(|_| ())
    }

    /// Approves a gate.
    pub async fn approve(&self, sid: &str, aid: &str) -> Result<()> {
        let resp = self
            .http
            .post(self.url(&format!("/sessions/{sid}/approvals/{aid}")))
            .json(&json!({ "decision": "approve" }))
            .send()
            .await?;
        Self::json_ok(resp, "decision").await.map(|_| ())
    }

    /// Every pending gate (the inbox).
    pub async fn pending(&self) -> Result<Vec<Value>> {
        let resp = self.http.get(self.url("/approvals")).send().await?;
        match Self::json_ok(resp, "pending approvals").await? {
            Value::Array(items) => Ok(items),
            other => Err(BenchError::Protocol(format!(
                "pending approvals: not a list: {other}"
            ))),
        }
    }

    /// Every session.
    pub async fn sessions(&self) -> Result<Vec<Value>> {
        let resp = self.http.get(self.url("/sessions")).send().await?;
        match Self::json_ok(resp, "sessions").await? {
            Value::Array(items) => Ok(items),
            other => Err(BenchError::Protocol(format!(
                "sessions: not a list: {other}"
            ))),
        }
    }

    /// The last event seq of a session.
    pub async fn cursor(&self, sid: &str) -> Result<u64> {
        let resp = self
            .http
            .get(self.url(&format!("/sessions/{sid}")))
            .send()
            .await?;
        let v = Self::json_ok(resp, "session snapshot").await?;
        v.get("cursor")
            .and_then(Value::as_u64)
            .ok_or_else(|| BenchError::Protocol("session snapshot without cursor".into()))
    }

    /// Opens the SSE feed of a session after `after`.
    pub async fn events(&self, sid: &str, after: u64) -> Result<Sse> {
        let resp = self
            .http
            .get(self.url(&format!("/sessions/{sid}/events?after={after}")))
            .send()
            .await?;
        let status = resp.status();
        if !status.is_success() {
            return Err(BenchError::Status {
                what: "event feed".into(),
                status: status.as_u16(),
                body: resp.text().await.unwrap_or_default(),
            });
        }
        Ok(Sse::new(resp))
    }

    /// Opens the SSE feed of a session on a plain HTTP/1.1 socket (no client library): the
    /// fan-out figure holds a thousand of these, and a lighter client leaves more of the two
    /// cores to the server being measured. Returns once the response headers said 200.
    pub async fn raw_feed(&self, sid: &str, after: u64) -> Result<RawFeed> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut socket = tokio::net::TcpStream::connect(self.addr).await?;
        socket.set_nodelay(true)?;
        let request = format!(
            "GET /api/v1/sessions/{sid}/events?after={after} HTTP/1.1\r\nHost: {}\r\n\
             Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n",
            self.addr
        );
        socket.write_all(request.as_bytes()).await?;
        let mut seen = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut chunk).await?;
            if n == 0 {
                return Err(BenchError::Protocol(
                    "feed closed before its headers".into(),
                ));
            }
            seen.extend_from_slice(&chunk[..n]);
        }
        if !seen.starts_with(b"HTTP/1.1 200") {
            return Err(BenchError::Protocol(format!(
                "raw feed: {}",
                String::from_utf8_lossy(&seen)
                    .lines()
                    .next()
                    .unwrap_or_default()
            )));
        }
        Ok(RawFeed { socket, seen })
    }

    /// Waits until no session has a running turn (at most `limit`).
    pub async fn wait_idle(&self, limit: Duration) -> Result<()> {
        let start = std::time::Instant::now();
        loop {
            let busy = self
                .sessions()
                .await?
                .iter()
                .filter(|s| !s.get("running_turn_id").is_none_or(Value::is_null))
                .count();
            if busy == 0 {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(BenchError::Protocol(format!(
                    "{busy} turns still running after {} s",
                    limit.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A string field of a JSON object, or a protocol error naming it.
pub fn str_field(v: &Value, key: &str) -> Result<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| BenchError::Protocol(format!("missing \"{key}\" in {v}")))
}
