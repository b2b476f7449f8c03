//! The HTTP client for a running server (base URL, bearer token, JSON both ways) and the one
//! typed error for every way a remote command can fail.

use crate::text::error_chain;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::remote::Remote;
use super::table;
use crate::protocol::{ErrorBody, ErrorCode};

const TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error(
        "no access token: pass --token or set COUNTERSIGN_TOKEN (a named token from the Tokens page), or run this as the server's user on its machine ({0})"
    )]
    NoToken(String),
    #[error("cannot connect to {url}: is the server running at {url}?")]
    Unreachable { url: String },
    #[error("no answer from {url} within {} s", TIMEOUT.as_secs())]
    TimedOut { url: String },
    #[error("request to {url} failed: {detail}")]
    Transport { url: String, detail: String },
    #[error(
        "the token was refused by {url} (401 unauthorized): check --token or COUNTERSIGN_TOKEN"
    )]
    Unauthorized { url: String },
    /// The server answered with the protocol's error body.
    #[error("{code}: {message}")]
    Api {
        status: u16,
        code: ErrorCode,
        message: String,
        body: Value,
    },
    #[error("unexpected answer from the server ({status}): {detail}")]
    Protocol { status: u16, detail: String },
    /// An id given on the command line matched nothing, or more than one thing.
    #[error("{0}")]
    NoMatch(String),
    #[error("{0}")]
    AuditBroken(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::NoToken(_) => 2,
            CliError::Unreachable { .. }
            | CliError::TimedOut { .. }
            | CliError::Transport { .. }
            | CliError::Unauthorized { .. }
            | CliError::Protocol { .. } => 3,
            CliError::Api { .. } | CliError::NoMatch(_) | CliError::AuditBroken(_) => 1,
        }
    }

    /// The server's JSON error body, when there is one.
    pub fn server_body(&self) -> Option<&Value> {
        match self {
            CliError::Api { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// Talks to one server with one token.
pub struct Client {
    http: reqwest::Client,
    base: Url,
    shown: String,
    token: String,
    /// The one-command credential made in the server's database, forgotten by `close`.
    made_here: Option<MadeHere>,
}

/// A credential this command made in the server's own database.
struct MadeHere {
    kept: std::sync::Arc<dyn crate::server::store::secrets::HashedSecrets>,
    hash: String,
}

impl Client {
    pub async fn new(remote: &Remote) -> Result<Client, CliError> {
        let shown = remote.url.trim().trim_end_matches('/').to_owned();
        let base = parse_base(&shown)?;
        let (token, made_here) = resolve_token(remote, &shown).await?;
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("countersign-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Transport {
                url: shown.clone(),
                detail: error_chain(&e),
            })?;
        Ok(Client {
            http,
            base,
            shown,
            token,
            made_here,
        })
    }

    /// Ends the command: a credential it made in the server's database is forgotten at once
    /// (it would lapse on its own in `logins::CLI_TOKEN_MS`).
    pub async fn close(self) {
        if let Some(made) = self.made_here {
            let kind = crate::server::store::secrets::SecretKind::CliToken;
            if let Err(e) = made.kept.forget_secrets(kind, Some(&made.hash)).await {
                tracing::warn!(error = %e, "could not forget this command's credential; it lapses on its own");
            }
        }
    }

    /// The base URL as the person gave it (for messages).
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// `GET /api/v1/<segments…>?<query>`.
    pub async fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Value, CliError> {
        self.send(self.request(Method::GET, segments).query(query))
            .await
    }

    /// `POST /api/v1/<segments…>` with a JSON body.
    pub async fn post<B: serde::Serialize + ?Sized>(
        &self,
        segments: &[&str],
        body: &B,
    ) -> Result<Value, CliError> {
        self.send(self.request(Method::POST, segments).json(body))
            .await
    }

    /// `DELETE /api/v1/<segments…>`; `Null` for an empty answer.
    pub async fn delete(&self, segments: &[&str]) -> Result<Value, CliError> {
        self.send(self.request(Method::DELETE, segments)).await
    }

    fn request(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        self.http.request(method, url).bearer_auth(&self.token)
    }

    async fn send(&self, request: RequestBuilder) -> Result<Value, CliError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.transport(&e))?;
        if status == StatusCode::UNAUTHORIZED {
            return Err(CliError::Unauthorized {
                url: self.shown.clone(),
            });
        }
        if !status.is_success() {
            return Err(error_answer(status, &text));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|_| CliError::Protocol {
            status: status.as_u16(),
            detail: format!("not JSON: {}", excerpt(&text)),
        })
    }

    fn transport(&self, e: &reqwest::Error) -> CliError {
        let url = self.shown.clone();
        if e.is_connect() {
            CliError::Unreachable { url }
        } else if e.is_timeout() {
            CliError::TimedOut { url }
        } else {
            CliError::Transport {
                url,
                detail: error_chain(e),
            }
        }
    }
}

/// Reads a JSON answer into a protocol type, or says the server spoke something else.
pub fn typed<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|e| CliError::Protocol {
        status: 200,
        detail: format!("{what} did not parse: {e}"),
    })
}

fn parse_base(url: &str) -> Result<Url, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "--url must be an http:// or https:// URL, not `{url}`"
        ))
    };
    let parsed = Url::parse(url).map_err(|_| bad())?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(bad());
    }
    Ok(parsed)
}

fn error_answer(status: StatusCode, text: &str) -> CliError {
    let body: Option<Value> = serde_json::from_str(text).ok();
    match body
        .as_ref()
        .and_then(|b| serde_json::from_value::<ErrorBody>(b.clone()).ok())
    {
        Some(parsed) => CliError::Api {
            status: status.as_u16(),
            // A code this build does not know is shown as sent, made safe for a terminal.
            code: ErrorCode::parse(&table::clean(parsed.error.code.as_str())),
            message: table::clean(&parsed.error.message),
            body: body.unwrap_or_default(),
        },
        None => CliError::Protocol {
            status: status.as_u16(),
            detail: excerpt(text),
        },
    }
}

fn excerpt(text: &str) -> String {
    table::clean_within(text, 200)
}

/// `--token`/`COUNTERSIGN_TOKEN`, else a credential for this one command made in the server's
/// own database (it can be opened only as the server's OS user on its machine; only its hash is
/// kept, it lapses after `logins::CLI_TOKEN_MS` and `close` forgets it). Such a credential is
/// sent only to the server that database belongs to (its `public_url`, or where it last said it
/// listens): never to another `--url`.
async fn resolve_token(remote: &Remote, url: &str) -> Result<(String, Option<MadeHere>), CliError> {
    if let Some(token) = remote
        .token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        return Ok((token.to_owned(), None));
    }
    let servers = remote.local.server_urls();
    if !servers.iter().any(|s| s == url) {
        return Err(CliError::NoToken(format!(
            "a credential made from the server's database is sent only to that server ({}), not to {url}",
            if servers.is_empty() {
                "none recorded: start it first".to_owned()
            } else {
                servers.join(", ")
            }
        )));
    }
    let repos = remote
        .local
        .open("cli")
        .await
        .map_err(|e| CliError::NoToken(e.to_string()))?;
    let token = crate::server::logins::mint_cli_token(repos.secrets.as_ref())
        .await
        .map_err(|e| CliError::NoToken(e.to_string()))?;
    let made = MadeHere {
        kept: repos.secrets,
        hash: crate::server::store::secrets::hash_secret(&token),
    };
    Ok((token, Some(made)))
}
