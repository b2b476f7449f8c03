//! The HTTP client for Countersign's external gates API (`/api/v1/gates`): open a gate, long-poll
//! it until someone answers (riding out a restart of Countersign), and cancel it.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode, Url};
use serde_json::Value;
use tokio::time::Instant;

use crate::protocol::{ErrorBody, ErrorCode};
use crate::text::{error_chain, truncate};

/// The longest `?wait=` the server accepts; longer waits are several polls.
pub const MAX_WAIT_SECS: u64 = 60;
/// How long opening a gate may keep retrying a server that is down before giving up.
pub const DEFAULT_OPEN_BUDGET: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Slack on top of `?wait=` before a long-poll counts as lost.
const POLL_SLACK: Duration = Duration::from_secs(15);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The body of `POST /api/v1/gates`: the server's own type, which it reads and checks.
pub use crate::protocol::{Capabilities, GateTool, OpenGate};

/// Where a gate stands and what was decided: the server's own types, read leniently where a
/// newer server may say more (see [`GateState`]).
pub use crate::protocol::{ApprovalId, Decision, GateState, GateStatus, Stored};

/// What opening a gate answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Opened {
    pub state: GateState,
    /// The server answered `200`: the gate an earlier request with the same idempotency key
    /// opened, not a new one.
    pub replayed: bool,
}

/// Every way talking to Countersign can fail.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("--url must be an http:// or https:// URL, not `{0}`")]
    BadUrl(String),
    #[error("cannot reach Countersign at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error(
        "Countersign at {url} refused the token ({status}): check --token or COUNTERSIGN_TOKEN"
    )]
    Refused { url: String, status: u16 },
    #[error("Countersign answered {status} {code}: {message}")]
    Api {
        status: u16,
        code: ErrorCode,
        message: String,
    },
    #[error("unexpected answer from Countersign ({status}): {detail}")]
    Protocol { status: u16, detail: String },
    #[error("no answer for gate {approval_id} before the deadline")]
    Deadline { approval_id: ApprovalId },
}

impl ClientError {
    /// Countersign is down, restarting or overloaded: worth trying again later.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } => true,
            ClientError::Api { status, .. } | ClientError::Protocol { status, .. } => {
                matches!(status, 502..=504)
            }
            _ => false,
        }
    }

    /// Whether this is an answer Countersign itself gave (a refusal: a wrong token, too many
    /// cards, its storage down, a bug, a body that is not its API's), which an adapter passes on
    /// as a deny, rather than Countersign not being reached at all: no connection or a timeout,
    /// a bad `--url`, a proxy's `502`–`504` with nothing behind it, or the server shutting down.
    /// Only the second may leave a call to the agent's own prompt (`--if-unreachable`).
    pub fn reached_countersign(&self) -> bool {
        match self {
            ClientError::BadUrl(_) | ClientError::Unreachable { .. } => false,
            ClientError::Api { status, code, .. } => {
                !(matches!(status, 502 | 504)
                    || (*status == 503 && *code == ErrorCode::ShuttingDown))
            }
            ClientError::Protocol { status, .. } => !matches!(status, 502..=504),
            ClientError::Refused { .. } | ClientError::Deadline { .. } => true,
        }
    }
}

/// Talks to one Countersign server with one token.
#[derive(Clone, Debug)]
pub struct GatesClient {
    http: reqwest::Client,
    base: Url,
    shown: String,
    token: Option<String>,
    open_budget: Duration,
    /// Sent with every long-poll (`?watch=`): the server closes the card when no poll of this
    /// client waits on it for this long (the process was killed and cannot cancel it).
    watch: Option<Duration>,
}

impl GatesClient {
    /// A client for the server at `url`; `token` is sent as a bearer token.
    pub fn new(url: &str, token: Option<&str>) -> Result<GatesClient, ClientError> {
        let shown = url.trim().trim_end_matches('/').to_owned();
        let base = match Url::parse(&shown) {
            Ok(base) if matches!(base.scheme(), "http" | "https") && !base.cannot_be_a_base() => {
                base
            }
            _ => return Err(ClientError::BadUrl(shown)),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("countersign-adapters/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Unreachable {
                url: shown.clone(),
                detail: error_chain(&e),
            })?;
        Ok(GatesClient {
            http,
            base,
            shown,
            token: token
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
            open_budget: DEFAULT_OPEN_BUDGET,
            watch: None,
        })
    }

    /// How long [`GatesClient::open`] retries a server it cannot reach (tests shorten it).
    pub fn with_open_budget(mut self, budget: Duration) -> GatesClient {
        self.open_budget = budget;
        self
    }

    /// Asks the server to close a card this client stops polling for `lapse` (a hook, whose
    /// process may be killed while it waits; not a bridge that re-opens its gates on restart).
    pub fn with_watch(mut self, lapse: Duration) -> GatesClient {
        self.watch = Some(lapse);
        self
    }

    /// The base URL as given (for messages).
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// `POST /api/v1/gates`. Retries quickly while the server cannot be reached, within the open
    /// budget; the idempotency key makes a retry of a POST that did arrive return the same gate.
    pub async fn open(
        &self,
        gate: &OpenGate,
        idempotency_key: Option<&str>,
    ) -> Result<Opened, ClientError> {
        let give_up = Instant::now() + self.open_budget;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            let mut request = self
                .request(Method::POST, &["gates"])
                .timeout(left.max(Duration::from_secs(1)))
                .json(gate);
            if let Some(key) = idempotency_key {
                request = request.header("Idempotency-Key", key);
            }
            match self.send_with_status::<GateState>(request).await {
                Ok((_, state)) if state.approval_id.as_str().is_empty() => {
                    return Err(ClientError::Protocol {
                        status: 201,
                        detail: "the new gate has no approval_id".into(),
                    });
                }
                Ok((status, state)) => {
                    return Ok(Opened {
                        state,
                        replayed: status == StatusCode::OK,
                    });
                }
                Err(e) if e.is_transient() && Instant::now() + backoff < give_up => {
                    tracing::debug!("opening a gate: {e}; retrying in {backoff:?}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Long-polls the gate until it is resolved or `deadline` passes. While Countersign is
    /// down or restarting it keeps asking about the same gate, with a short backoff.
    pub async fn wait(
        &self,
        approval_id: &ApprovalId,
        deadline: Instant,
    ) -> Result<GateState, ClientError> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::Deadline {
                    approval_id: approval_id.clone(),
                });
            }
            let wait_secs = left.as_secs().min(MAX_WAIT_SECS);
            let asked = Instant::now();
            let poll = tokio::time::timeout_at(deadline, self.poll(approval_id, wait_secs)).await;
            match poll {
                Err(_elapsed) => continue,
                Ok(Ok(state)) if state.is_resolved() => return Ok(state),
                Ok(Ok(_pending)) => {
                    backoff = FIRST_BACKOFF;
                    // A server that answers `pending` at once (or a last sub-second wait) must
                    // not turn this into a busy loop.
                    if asked.elapsed() < Duration::from_secs(1) {
                        sleep_until_or(deadline, Duration::from_secs(1)).await;
                    }
                }
                Ok(Err(e)) if e.is_transient() => {
                    tracing::debug!("waiting on gate {approval_id}: {e}; retrying in {backoff:?}");
                    sleep_until_or(deadline, backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    /// One `GET /api/v1/gates/{id}?wait=<secs>`.
    pub async fn poll(
        &self,
        approval_id: &ApprovalId,
        wait_secs: u64,
    ) -> Result<GateState, ClientError> {
        let wait_secs = wait_secs.min(MAX_WAIT_SECS);
        let mut request = self
            .request(Method::GET, &["gates", approval_id.as_str()])
            .query(&[("wait", wait_secs)]);
        if let Some(lapse) = self.watch {
            request = request.query(&[("watch", lapse.as_secs())]);
        }
        let request = request.timeout(Duration::from_secs(wait_secs) + POLL_SLACK);
        self.send(request).await
    }

    /// `POST /api/v1/gates/{id}/cancel {"why"}`: the agent no longer needs the answer.
    pub async fn cancel(&self, approval_id: &ApprovalId, why: &str) -> Result<(), ClientError> {
        let request = self
            .request(Method::POST, &["gates", approval_id.as_str(), "cancel"])
            .timeout(Duration::from_secs(10))
            .json(&serde_json::json!({ "why": why }));
        self.send::<Value>(request).await.map(drop)
    }

    /// `GET /api/v1/gates/os-user`: whether this process runs as Countersign's own OS user.
    pub async fn os_user(&self) -> Result<crate::protocol::AgentOsUser, ClientError> {
        let request = self
            .request(Method::GET, &["gates", "os-user"])
            .timeout(Duration::from_secs(5));
        self.send(request).await
    }

    fn request(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        let request = self.http.request(method, url);
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: RequestBuilder,
    ) -> Result<T, ClientError> {
        self.send_with_status(request).await.map(|(_, body)| body)
    }

    /// [`Self::send`], also giving the success status (`POST /gates`: `201` new, `200` replay).
    async fn send_with_status<T: serde::de::DeserializeOwned>(
        &self,
        request: RequestBuilder,
    ) -> Result<(StatusCode, T), ClientError> {
        let unreachable = |e: reqwest::Error| ClientError::Unreachable {
            url: self.shown.clone(),
            detail: error_chain(&e),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let text = response.text().await.map_err(unreachable)?;
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return Err(ClientError::Refused {
                url: self.shown.clone(),
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            return Err(error_answer(status, &text));
        }
        let text = if text.trim().is_empty() {
            "null"
        } else {
            &text
        };
        serde_json::from_str(text)
            .map(|body| (status, body))
            .map_err(|e| ClientError::Protocol {
                status: status.as_u16(),
                detail: format!("{e} in {}", truncate(text.trim(), 200)),
            })
    }
}

/// The server's error body `{"error": {"code", "message"}}`, or whatever it sent instead.
fn error_answer(status: StatusCode, text: &str) -> ClientError {
    // The protocol's own error body: one reader for it, server, page, CLI and hooks alike.
    match serde_json::from_str::<ErrorBody>(text) {
        Ok(body) => ClientError::Api {
            status: status.as_u16(),
            code: body.error.code,
            message: truncate(&body.error.message, 300),
        },
        Err(_) => ClientError::Protocol {
            status: status.as_u16(),
            detail: truncate(text.trim(), 200),
        },
    }
}

async fn sleep_until_or(deadline: Instant, pause: Duration) {
    tokio::time::sleep_until(deadline.min(Instant::now() + pause)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the server always sends, and nothing else.
    fn least() -> Value {
        serde_json::json!({
            "approval_id": "a1", "session_id": "s1", "status": "pending",
            "url": "http://x/a/a1", "expires_at": "2026-11-30T10:30:00Z"
        })
    }

    #[test]
    fn an_answer_with_what_the_server_always_sends_parses() {
        let state: GateState = serde_json::from_value(least()).unwrap();
        assert_eq!(state.status, GateStatus::Pending);
        assert!(!state.is_resolved());
        assert_eq!(state.decision, None);
        assert_eq!(state.rule, None);
    }

    /// An answer that lacks a field the server always sends is not this API's: refused
    /// (the adapter stops waiting on it), never read with a made-up value.
    #[test]
    fn an_answer_missing_what_the_server_always_sends_is_refused() {
        for field in ["approval_id", "session_id", "status", "url", "expires_at"] {
            let mut value = least();
            value.as_object_mut().unwrap().remove(field);
            assert!(
                serde_json::from_value::<GateState>(value).is_err(),
                "without {field}"
            );
        }
    }

    #[test]
    fn a_full_answer_parses() {
        let state: GateState = serde_json::from_value(serde_json::json!({
            "approval_id": "a1", "session_id": "s1", "status": "approved",
            "decision": "allow_always", "updated_input": null, "reason": null,
            "rule": {"id": "r1", "tool": "Bash", "pattern": "ls *", "scope": "session",
                     "session_id": "s1", "created_at": "2026-11-30T10:00:00Z", "uses": 0},
            "answered_by": "user", "actor": "token:phone",
            "resolved_at": "2026-11-30T10:00:00Z", "url": "http://x/a/a1",
            "expires_at": "2026-11-30T10:30:00Z"
        }))
        .unwrap();
        assert_eq!(state.decision, Some(Stored::Known(Decision::AllowAlways)));
        assert!(state.is_resolved());
        assert_eq!(state.actor.as_deref(), Some("token:phone"));
        assert_eq!(state.rule.map(|r| r.pattern), Some("ls *".to_owned()));
    }

    /// A newer server may send values this build does not know: none of them fails the
    /// answer, and none is read as something it is not.
    #[test]
    fn what_a_newer_server_may_say_does_not_fail() {
        let mut value = least();
        let fields = value.as_object_mut().unwrap();
        fields.insert("status".into(), "vaporised".into());
        fields.insert("decision".into(), "maybe".into());
        fields.insert("answered_by".into(), "committee".into());
        fields.insert(
            "rule".into(),
            serde_json::json!({"id": "r1", "scope": "galaxy"}),
        );
        fields.insert("pressure".into(), serde_json::json!({"bar": 2}));
        let state: GateState = serde_json::from_value(value).unwrap();
        assert_eq!(state.status, GateStatus::Unknown);
        assert!(state.is_resolved());
        assert_eq!(state.decision, Some(Stored::Unknown("maybe".into())));
        assert_eq!(
            state.answered_by.as_ref().map(Stored::as_str),
            Some("committee")
        );
        assert_eq!(state.rule, None);
    }

    /// The server's own answer, serialized, is what the client reads back.
    #[test]
    fn the_client_reads_the_server_answer_as_written() {
        let state: GateState = serde_json::from_value(least()).unwrap();
        let text = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<GateState>(&text).unwrap(), state);
    }

    #[test]
    fn the_open_body_leaves_out_what_is_not_given() {
        let gate = OpenGate {
            source: "codex".into(),
            external_session: "s".into(),
            cwd: "/w".into(),
            tool: GateTool {
                name: "Bash".into(),
                input: serde_json::json!({"command": "ls"}),
            },
            title: None,
            reason: None,
            agent_says: None,
            capabilities: Capabilities {
                edit: false,
                always: true,
                deny_reason: true,
            },
            timeout_secs: Some(1800),
        };
        assert_eq!(
            serde_json::to_value(&gate).unwrap(),
            serde_json::json!({"source": "codex", "external_session": "s", "cwd": "/w",
                "tool": {"name": "Bash", "input": {"command": "ls"}},
                "capabilities": {"edit": false, "always": true, "deny_reason": true},
                "timeout_secs": 1800})
        );
    }

    #[test]
    fn bad_urls_are_refused_up_front() {
        assert!(matches!(
            GatesClient::new("ftp://x", None),
            Err(ClientError::BadUrl(_))
        ));
        assert!(GatesClient::new("http://127.0.0.1:1/", Some("t")).is_ok());
    }

    #[test]
    fn the_error_body_is_read() {
        let e = error_answer(
            StatusCode::BAD_REQUEST,
            r#"{"error":{"code":"invalid_gate","message":"tool.name is missing"}}"#,
        );
        assert_eq!(
            e.to_string(),
            "Countersign answered 400 invalid_gate: tool.name is missing"
        );
        assert!(!e.is_transient());
        assert!(error_answer(StatusCode::BAD_GATEWAY, "upstream").is_transient());
    }

    /// What Countersign answered is its answer (a deny for the agent); only not reaching it
    /// (no connection, a proxy with nothing behind it, a server going away) is not.
    #[test]
    fn an_answer_countersign_sent_is_told_from_not_reaching_it() {
        let api = |status: u16, code: &str| {
            let body = format!(r#"{{"error":{{"code":"{code}","message":"m"}}}}"#);
            error_answer(StatusCode::from_u16(status).unwrap(), &body)
        };
        let refused = ClientError::Refused {
            url: "u".into(),
            status: 401,
        };
        for reached in [
            api(429, "too_many_gates"),
            api(503, "storage_unavailable"),
            api(500, "internal"),
            api(404, "unknown_approval"),
            error_answer(StatusCode::INTERNAL_SERVER_ERROR, "<html>oops</html>"),
            error_answer(StatusCode::OK, "not json"),
            refused,
        ] {
            assert!(reached.reached_countersign(), "{reached}");
        }
        let unreachable = ClientError::Unreachable {
            url: "u".into(),
            detail: "connection refused".into(),
        };
        for not_reached in [
            unreachable,
            ClientError::BadUrl("ftp://x".into()),
            error_answer(StatusCode::BAD_GATEWAY, "<html>502</html>"),
            error_answer(StatusCode::SERVICE_UNAVAILABLE, "upstream down"),
            error_answer(StatusCode::GATEWAY_TIMEOUT, ""),
            api(503, "shutting_down"),
        ] {
            assert!(!not_reached.reached_countersign(), "{not_reached}");
        }
    }
}
