//! The HTTP side of a running opencode server: its event stream, its pending permissions, and
//! the reply endpoint.

use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::Stream;
use reqwest::{RequestBuilder, StatusCode, Url};

use crate::external::opencode::event::{PermissionAsked, Reply};
use crate::text::{error_chain, truncate};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long `GET /permission` and a reply may take, body included (and the body of an error
/// answer to `GET /event`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `GET /event` may take to answer with its headers: a starting opencode (1.18.33)
/// accepts connections about half a second before it serves, and never answers those; the
/// bridge must not wait on one while asks go unseen.
const STREAM_OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// opencode's Basic-auth user when `OPENCODE_SERVER_PASSWORD` is set.
const BASIC_USER: &str = "opencode";

#[derive(Debug, thiserror::Error)]
pub enum OpencodeError {
    #[error("--opencode-url must be an http:// or https:// URL, not `{0}`")]
    BadUrl(String),
    #[error("cannot reach opencode at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("opencode answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("opencode sent something unexpected: {0}")]
    Protocol(String),
}

impl OpencodeError {
    /// opencode is down or restarting: worth trying again.
    pub fn is_transient(&self) -> bool {
        match self {
            OpencodeError::Unreachable { .. } => true,
            OpencodeError::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// What a reply came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyOutcome {
    Accepted,
    /// `404`: someone (the TUI, a cascade, an earlier reply of ours) answered it first.
    AlreadyAnswered,
}

/// Talks to one opencode server (optionally one of its directories).
#[derive(Clone, Debug)]
pub struct OpencodeClient {
    http: reqwest::Client,
    base: Url,
    directory: Option<String>,
    password: Option<String>,
    stream_open_timeout: Duration,
    request_timeout: Duration,
}

impl OpencodeClient {
    /// `url` may carry `user:password@` for Basic auth; `password` is the other way to give it.
    pub fn new(
        url: &str,
        directory: Option<String>,
        password: Option<String>,
    ) -> Result<OpencodeClient, OpencodeError> {
        let trimmed = url.trim().trim_end_matches('/');
        let base = match Url::parse(trimmed) {
            Ok(base) if matches!(base.scheme(), "http" | "https") && !base.cannot_be_a_base() => {
                base
            }
            _ => return Err(OpencodeError::BadUrl(trimmed.to_owned())),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| OpencodeError::Protocol(error_chain(&e)))?;
        Ok(OpencodeClient {
            http,
            base,
            directory,
            password: password.filter(|p| !p.is_empty()),
            stream_open_timeout: STREAM_OPEN_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
        })
    }

    /// The same client with another limit on opening the event stream (tests).
    pub fn with_stream_open_timeout(mut self, limit: Duration) -> OpencodeClient {
        self.stream_open_timeout = limit;
        self
    }

    /// The same client with another limit on each request (tests).
    pub fn with_request_timeout(mut self, limit: Duration) -> OpencodeClient {
        self.request_timeout = limit;
        self
    }

    /// The base URL without credentials (for messages).
    pub fn shown(&self) -> String {
        let mut url = self.base.clone();
        let _ = url.set_password(None);
        let _ = url.set_username("");
        url.to_string()
    }

    /// `GET /event`: the server's events, one parsed SSE event at a time.
    pub async fn events(
        &self,
    ) -> Result<
        impl Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + use<>,
        OpencodeError,
    > {
        let send = self
            .request(reqwest::Method::GET, &["event"])
            .header("Accept", "text/event-stream")
            .send();
        let response = tokio::time::timeout(self.stream_open_timeout, send)
            .await
            .map_err(|_| OpencodeError::Unreachable {
                url: self.shown(),
                detail: format!(
                    "its event stream did not open within {} s",
                    self.stream_open_timeout.as_secs_f32()
                ),
            })?
            .map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.status_error(response).await);
        }
        Ok(response.bytes_stream().eventsource())
    }

    /// `GET /permission`: what is pending now (used to resync after a reconnect, since the
    /// stream has no replay).
    pub async fn pending(&self) -> Result<Vec<PermissionAsked>, OpencodeError> {
        let response = self
            .request(reqwest::Method::GET, &["permission"])
            .timeout(self.request_timeout)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        let text = response.text().await.map_err(|e| self.unreachable(&e))?;
        serde_json::from_str(&text).map_err(|e| {
            OpencodeError::Protocol(format!("GET /permission: {e} in {}", truncate(&text, 200)))
        })
    }

    /// `POST /permission/{id}/reply`.
    pub async fn reply(&self, id: &str, reply: &Reply) -> Result<ReplyOutcome, OpencodeError> {
        let response = self
            .request(reqwest::Method::POST, &["permission", id, "reply"])
            .timeout(self.request_timeout)
            .json(reply)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        match response.status() {
            status if status.is_success() => Ok(ReplyOutcome::Accepted),
            StatusCode::NOT_FOUND => Ok(ReplyOutcome::AlreadyAnswered),
            _ => Err(self.status_error(response).await),
        }
    }

    fn request(&self, method: reqwest::Method, segments: &[&str]) -> RequestBuilder {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        if let Some(directory) = &self.directory {
            url.query_pairs_mut().append_pair("directory", directory);
        }
        let request = self.http.request(method, url);
        match &self.password {
            Some(password) => request.basic_auth(BASIC_USER, Some(password)),
            None => request,
        }
    }

    fn unreachable(&self, e: &reqwest::Error) -> OpencodeError {
        OpencodeError::Unreachable {
            url: self.shown(),
            detail: error_chain(e),
        }
    }

    /// The error for an answer that is not a success. Its body is read within the request
    /// limit: `GET /event` has no limit of its own past its headers, and a restarting opencode
    /// can send a status line and then nothing.
    async fn status_error(&self, response: reqwest::Response) -> OpencodeError {
        let status = response.status().as_u16();
        let body = tokio::time::timeout(self.request_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        OpencodeError::Status {
            status,
            body: truncate(body.trim(), 200),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A server that reads each request, writes `answer` (maybe only part of a response) and
    /// then holds the connection open, saying nothing more.
    async fn stalling(answer: &'static [u8]) -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(answer).await;
                held.push(socket);
            }
        });
        (url, task)
    }

    fn client(url: &str) -> OpencodeClient {
        OpencodeClient::new(url, None, None)
            .unwrap()
            .with_stream_open_timeout(Duration::from_millis(300))
            .with_request_timeout(Duration::from_millis(300))
    }

    /// `wait`, which must end far sooner than this bound (reaching it means it had no limit).
    async fn within<T>(shown: &str, wait: impl Future<Output = T>) -> T {
        let bound = Duration::from_secs(10);
        tokio::time::timeout(bound, wait)
            .await
            .unwrap_or_else(|_| panic!("with {shown:?}, a request waited past {bound:?}"))
    }

    /// Every request to opencode ends within its limit, whatever opencode leaves unsaid: no
    /// answer at all, headers and half a body, or an error status with a body that never comes.
    #[tokio::test]
    async fn every_wait_on_opencode_has_a_limit() {
        let reply = Reply {
            reply: "once".into(),
            message: None,
        };
        let silent: &[u8] = b"";
        let half_list: &[u8] =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n[";
        let error_without_body: &[u8] =
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\n\r\n";
        for answer in [silent, half_list, error_without_body] {
            let (url, server) = stalling(answer).await;
            let client = client(&url);
            let shown = String::from_utf8_lossy(answer).into_owned();
            let pending = within(&shown, client.pending()).await;
            assert!(
                pending.is_err(),
                "GET /permission with {shown:?}: {pending:?}"
            );
            // A reply's `200` is all it needs: it reads no body.
            let replied = within(&shown, client.reply("per_1", &reply)).await;
            if answer != half_list {
                assert!(replied.is_err(), "a reply with {shown:?}: {replied:?}");
                match within(&shown, client.events()).await {
                    Err(e) => assert!(e.is_transient(), "GET /event with {shown:?}: {e}"),
                    Ok(_) => panic!("GET /event with {shown:?} was taken for a stream"),
                }
            }
            server.abort();
        }
    }

    /// A restarting opencode that accepts the connection and never answers: opening the
    /// stream gives up (a transient error, so the bridge reconnects) instead of waiting.
    #[tokio::test]
    async fn an_event_stream_that_never_opens_is_given_up_on() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(socket);
        });
        let client = OpencodeClient::new(&url, None, None)
            .unwrap()
            .with_stream_open_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let err = match client.events().await {
            Err(err) => err,
            Ok(_) => panic!("a stream that never opened was taken"),
        };
        assert!(err.is_transient(), "{err}");
        assert!(err.to_string().contains("did not open"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        held.abort();
    }
}
