//! The `openai` provider: one streamed `POST {base_url}/chat/completions` per model call, for any
//! OpenAI-compatible endpoint (OpenAI itself, llama.cpp, vLLM, Ollama, LM Studio, ...).

use crate::text::{error_chain, truncate};
use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::header::CONTENT_TYPE;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    ChatMessage, Completion, CompletionRequest, DeltaSink, Provider, ProviderError,
    ToolCallRequest, ToolSpec, Window,
};
use crate::server::conversation::tokens::Tokenizer;

/// How much of an error body is kept: enough to read the server's message, not a whole page.
const ERROR_BODY_LIMIT: usize = 2000;

/// Where and how to reach the model.
#[derive(Clone, Debug)]
pub struct OpenAiSettings {
    /// Up to and including the API version, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer`; local servers usually need none.
    pub api_key: Option<ApiKey>,
    /// Upper bound on one whole model call, streaming included.
    pub request_timeout: Duration,
    /// How failed calls are tried again.
    pub retry: RetryPolicy,
    /// The model's context window in tokens (`provider.context_tokens`, resolved).
    pub context_tokens: u64,
}

/// Retries of a model call that failed before anything was streamed: refused or reset
/// connections, `429` and `5xx` answers. Waits `base_delay`, doubling each time (at most
/// `max_delay`), or what `Retry-After` asks for (at most `max_retry_after`). A timed-out call
/// is not retried: it already took `request_timeout`.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based), unless the server said otherwise.
    fn backoff(&self, retry: u32) -> Duration {
        self.base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay)
    }
}

/// How one attempt failed: worth another try (with the server's `Retry-After`, if any) or not.
enum Failure {
    Retry(ProviderError, Option<Duration>),
    Final(ProviderError),
}

impl From<ProviderError> for Failure {
    fn from(err: ProviderError) -> Self {
        Failure::Final(err)
    }
}

/// An API key: a secret, shown only masked.
pub type ApiKey = crate::server::secret::Secret;

/// Talks to one OpenAI-compatible endpoint through one pooled HTTP client.
#[derive(Debug)]
pub struct OpenAiProvider {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<ApiKey>,
    request_timeout: Duration,
    retry: RetryPolicy,
    window: Window,
}

impl OpenAiProvider {
    pub fn new(settings: OpenAiSettings) -> Result<Self, ProviderError> {
        let base_url = settings.base_url.trim().trim_end_matches('/');
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ProviderError::Config(format!(
                "the model base URL must start with http:// or https://, got {base_url:?}"
            )));
        }
        if settings.model.trim().is_empty() {
            return Err(ProviderError::Config("no model name is set".to_owned()));
        }
        if settings.context_tokens == 0 {
            return Err(ProviderError::Config(
                "the model's context window must be more than zero tokens".to_owned(),
            ));
        }
        if settings.request_timeout.is_zero() {
            return Err(ProviderError::Config(
                "the model request timeout must be longer than zero".to_owned(),
            ));
        }
        let client = reqwest::Client::builder().build().map_err(|e| {
            ProviderError::Config(format!("the HTTP client could not be built: {e}"))
        })?;
        let window = Window {
            context_tokens: settings.context_tokens,
            tokenizer: Tokenizer::for_model(&settings.model),
        };
        Ok(Self {
            client,
            window,
            endpoint: format!("{base_url}/chat/completions"),
            model: settings.model,
            api_key: settings.api_key,
            request_timeout: settings.request_timeout,
            retry: settings.retry,
        })
    }

    /// Sends the request and waits for the response headers.
    async fn send(&self, request: &CompletionRequest) -> Result<reqwest::Response, Failure> {
        let body = WireRequest::new(&self.model, request);
        let mut builder = self
            .client
            .post(&self.endpoint)
            .timeout(self.request_timeout)
            .json(&body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key.reveal());
        }
        builder.send().await.map_err(|e| {
            let timed_out = e.is_timeout();
            let err = self.transport_error(e);
            if timed_out {
                Failure::Final(err)
            } else {
                Failure::Retry(err, None)
            }
        })
    }

    /// Turns a reqwest failure into a sentence that says what went wrong and where.
    fn transport_error(&self, error: reqwest::Error) -> ProviderError {
        let endpoint = &self.endpoint;
        let (timed_out, connect) = (error.is_timeout(), error.is_connect());
        let reason = error_chain(&error.without_url());
        let sentence = if timed_out {
            let secs = self.request_timeout.as_secs_f64();
            format!("no complete answer from {endpoint} within {secs} s ({reason})")
        } else if connect {
            format!("could not connect to {endpoint}: {reason}")
        } else {
            format!("the connection to {endpoint} failed: {reason}")
        };
        ProviderError::Transport(sentence)
    }

    /// Reads an event stream chunk by chunk, streaming text out as it arrives. A connection
    /// that breaks (not one that times out) may be tried again — if nothing was streamed yet,
    /// which the caller knows.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, Failure> {
        let mut events = response.bytes_stream().eventsource();
        let mut acc = Accumulator::default();
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled.into()),
                next = events.next() => next,
            };
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(EventStreamError::Transport(e))) if !e.is_timeout() => {
                    return Err(Failure::Retry(self.transport_error(e), None));
                }
                Some(Err(e)) => return Err(self.stream_error(e).into()),
            };
            if event.data.trim() == "[DONE]" {
                return Ok(acc.finish());
            }
            acc.apply(parse_event(&event)?, deltas)?;
        }
        if acc.finish_reason.is_none() {
            return Err(Failure::Retry(
                ProviderError::Transport(format!(
                    "the stream from {} ended before the answer was complete",
                    self.endpoint
                )),
                None,
            ));
        }
        Ok(acc.finish())
    }

    fn stream_error(&self, error: EventStreamError<reqwest::Error>) -> ProviderError {
        match error {
            EventStreamError::Transport(e) => self.transport_error(e),
            EventStreamError::Utf8(e) => {
                ProviderError::Protocol(format!("the event stream is not UTF-8: {e}"))
            }
            EventStreamError::Parser(e) => {
                ProviderError::Protocol(format!("the event stream is malformed: {e:?}"))
            }
        }
    }

    /// Reads a whole body, for error answers and servers that ignore `stream: true`.
    async fn read_body(
        &self,
        response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> Result<String, ProviderError> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            body = response.text() => body.map_err(|e| self.transport_error(e)),
        }
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn window(&self) -> Option<Window> {
        Some(self.window)
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let mut retry = 0;
        loop {
            // A call that already streamed text is not retried: the person saw it.
            let streamed = std::sync::atomic::AtomicBool::new(false);
            let sink = |text: &str| {
                streamed.store(true, std::sync::atomic::Ordering::Relaxed);
                deltas(text)
            };
            let (err, retry_after) = match self.attempt(request, &sink, cancel).await {
                Ok(completion) => return Ok(completion),
                Err(Failure::Final(err)) => return Err(err),
                Err(Failure::Retry(err, _)) if streamed.into_inner() => return Err(err),
                Err(Failure::Retry(err, _)) if retry >= self.retry.max_retries => {
                    return Err(gave_up(err, retry + 1));
                }
                Err(Failure::Retry(err, retry_after)) => (err, retry_after),
            };
            let wait = retry_after
                .map(|w| w.min(self.retry.max_retry_after))
                .unwrap_or_else(|| self.retry.backoff(retry));
            tracing::warn!(error = %err, wait_ms = wait.as_millis() as u64, retry = retry + 1, "model call failed; trying again");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            retry += 1;
        }
    }
}

impl OpenAiProvider {
    /// One try of a model call.
    async fn attempt(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, Failure> {
        tracing::debug!(
            endpoint = %self.endpoint,
            model = %self.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "calling the model"
        );
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ProviderError::Cancelled.into()),
            response = self.send(request) => response?,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(&response);
            let body = self.read_body(response, cancel).await?;
            tracing::debug!(
                status = status.as_u16(),
                "the model endpoint refused the call"
            );
            if status.is_client_error()
                && let Some(err) = context_error_in(&body)
            {
                return Err(Failure::Final(err));
            }
            let err = ProviderError::Http {
                status: status.as_u16(),
                body: truncate(&body, ERROR_BODY_LIMIT),
            };
            return Err(
                if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                    Failure::Retry(err, retry_after)
                } else {
                    Failure::Final(err)
                },
            );
        }
        let completion = if is_json(&response) {
            let body = self.read_body(response, cancel).await?;
            parse_whole_answer(&body, deltas)?
        } else {
            self.read_stream(response, deltas, cancel).await?
        };
        tracing::debug!(
            tokens = completion.tokens,
            tool_calls = completion.tool_calls.len(),
            text_chars = completion.text.chars().count(),
            "the model answered"
        );
        Ok(completion)
    }
}

/// The last failure, saying how many attempts were made.
fn gave_up(err: ProviderError, attempts: u32) -> ProviderError {
    let note = format!(" (gave up after {attempts} attempts)");
    match err {
        ProviderError::Http { status, body } => ProviderError::Http {
            status,
            body: body + &note,
        },
        ProviderError::Transport(message) => ProviderError::Transport(message + &note),
        other => other,
    }
}

/// `Retry-After` in seconds or as an HTTP date.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

// ---- request wire format -------------------------------------------------------------------

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
}

impl<'a> WireRequest<'a> {
    fn new(model: &'a str, request: &'a CompletionRequest) -> Self {
        Self {
            model,
            messages: request
                .messages
                .iter()
                .map(|m| WireMessage::from(&**m))
                .collect(),
            tools: request.tools.iter().map(WireTool::from).collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// `null` rather than `""` when the model only asked for tools, as OpenAI sends it.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        match message {
            ChatMessage::System(content) => Self::System { content },
            ChatMessage::User(content) => Self::User { content },
            ChatMessage::Assistant { text, tool_calls } => Self::Assistant {
                content: (!text.is_empty()).then_some(text.as_str()),
                tool_calls: tool_calls.iter().map(WireToolCall::from).collect(),
            },
            ChatMessage::Tool { call_id, output } => Self::Tool {
                tool_call_id: call_id.as_str(),
                content: output,
            },
        }
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// A JSON document in a string, as the API wants it.
    arguments: String,
}

impl<'a> From<&'a ToolCallRequest> for WireToolCall<'a> {
    fn from(call: &'a ToolCallRequest) -> Self {
        // Arguments that were not valid JSON are kept raw; send them back exactly as the model
        // wrote them so it sees its own mistake.
        let arguments = match &call.args {
            Value::String(raw) => raw.clone(),
            args => args.to_string(),
        };
        Self {
            id: call.id.as_str(),
            kind: "function",
            function: WireFunctionCall {
                name: &call.name,
                arguments,
            },
        }
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> From<&'a ToolSpec> for WireTool<'a> {
    fn from(spec: &'a ToolSpec) -> Self {
        Self {
            kind: "function",
            function: WireFunction {
                name: spec.name,
                description: spec.description,
                parameters: &spec.parameters,
            },
        }
    }
}

// ---- response wire format ------------------------------------------------------------------

/// One `chat.completion.chunk`; every field is optional because servers differ in what they omit.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<Usage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    /// A string piece per the API; a few servers send the whole object instead.
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct Usage {
    total_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl Usage {
    fn total(&self) -> u64 {
        self.total_tokens.unwrap_or_else(|| {
            self.prompt_tokens.unwrap_or(0) + self.completion_tokens.unwrap_or(0)
        })
    }
}

/// A non-streamed `chat.completion`, from servers that answer `stream: true` with plain JSON.
#[derive(Deserialize)]
struct WholeAnswer {
    #[serde(default)]
    choices: Vec<WholeChoice>,
    usage: Option<Usage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WholeChoice {
    #[serde(default)]
    index: u32,
    message: Option<WholeMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WholeMessage {
    content: Option<String>,
    tool_calls: Option<Vec<DeltaToolCall>>,
}

impl WholeAnswer {
    /// The same answer as one big chunk, so one code path assembles both kinds.
    fn into_chunk(self) -> Chunk {
        let choices = self
            .choices
            .into_iter()
            .filter_map(|choice| {
                let message = choice.message?;
                Some(ChunkChoice {
                    index: choice.index,
                    delta: Some(Delta {
                        content: message.content,
                        tool_calls: message.tool_calls.map(number_calls),
                    }),
                    finish_reason: choice.finish_reason,
                })
            })
            .collect();
        Chunk {
            choices,
            usage: self.usage,
            error: self.error,
        }
    }
}

/// Whole tool calls carry no `index`; their position is it.
fn number_calls(calls: Vec<DeltaToolCall>) -> Vec<DeltaToolCall> {
    calls
        .into_iter()
        .enumerate()
        .map(|(index, call)| DeltaToolCall {
            index: Some(index),
            ..call
        })
        .collect()
}

// ---- assembling the answer -----------------------------------------------------------------

/// The answer so far, built from chunks.
#[derive(Default)]
struct Accumulator {
    text: String,
    /// Keyed by the call's `index`, so calls come out in the order the model made them.
    calls: BTreeMap<usize, PartialCall>,
    /// The index the last piece went to, for servers that omit `index`.
    last_index: Option<usize>,
    tokens: u64,
    finish_reason: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Accumulator {
    fn apply(&mut self, chunk: Chunk, deltas: DeltaSink<'_>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error {
            return Err(context_error(&error)
                .unwrap_or_else(|| ProviderError::Protocol(error_message(&error))));
        }
        if let Some(usage) = chunk.usage {
            self.tokens = usage.total();
        }
        // Only one choice is ever asked for (`n` is left at 1).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, deltas);
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(())
    }

    fn apply_delta(&mut self, delta: Delta, deltas: DeltaSink<'_>) {
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            deltas(&text);
            self.text.push_str(&text);
        }
        for piece in delta.tool_calls.unwrap_or_default() {
            self.apply_tool_piece(piece);
        }
    }

    fn apply_tool_piece(&mut self, piece: DeltaToolCall) {
        let index = self.index_of(&piece);
        self.last_index = Some(index);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = piece.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        let Some(function) = piece.function else {
            return;
        };
        // A name arrives whole in one piece on OpenAI; some servers split it, others repeat it.
        if let Some(name) = function.name.filter(|n| *n != call.name) {
            call.name.push_str(&name);
        }
        match function.arguments {
            Some(Value::String(part)) => call.arguments.push_str(&part),
            Some(Value::Null) | None => {}
            Some(whole) => call.arguments.push_str(&whole.to_string()),
        }
    }

    /// Which call a piece belongs to. The API always sends `index`; without it, a new id starts
    /// a new call and anything else continues the last one.
    fn index_of(&self, piece: &DeltaToolCall) -> usize {
        if let Some(index) = piece.index {
            return index;
        }
        let next = self.calls.keys().next_back().map_or(0, |last| last + 1);
        let Some(last) = self.last_index else {
            return next;
        };
        match piece.id.as_deref() {
            Some(id) if !id.is_empty() && self.calls.get(&last).is_some_and(|c| c.id != id) => next,
            _ => last,
        }
    }

    fn finish(self) -> Completion {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, call)| call.finish(index))
            .collect();
        Completion {
            text: self.text,
            tool_calls,
            tokens: self.tokens,
        }
    }
}

impl PartialCall {
    fn finish(self, index: usize) -> ToolCallRequest {
        // Some local servers leave the id out; the tool result still needs one to point at,
        // and one of its own: `call_0` in every reply would make calls of different steps
        // one call to the log and the page.
        let id = if self.id.is_empty() {
            format!(
                "call_{}_{index}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            )
        } else {
            self.id
        };
        ToolCallRequest {
            id: id.into(),
            name: self.name,
            args: parse_arguments(self.arguments),
        }
    }
}

/// The arguments as JSON: nothing means no arguments; text that is not JSON is kept raw so the
/// tool can say what was wrong with it.
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

fn parse_event(event: &Event) -> Result<Chunk, ProviderError> {
    serde_json::from_str(&event.data).map_err(|e| {
        let data = truncate(&event.data, ERROR_BODY_LIMIT);
        if event.event == "error" {
            ProviderError::Protocol(data)
        } else {
            ProviderError::Protocol(format!("unreadable chunk ({e}): {data}"))
        }
    })
}

/// Turns a whole JSON answer into a completion; its text still reaches the sink, in one piece.
fn parse_whole_answer(body: &str, deltas: DeltaSink<'_>) -> Result<Completion, ProviderError> {
    let answer: WholeAnswer = serde_json::from_str(body).map_err(|e| {
        let body = truncate(body, ERROR_BODY_LIMIT);
        ProviderError::Protocol(format!("unreadable answer ({e}): {body}"))
    })?;
    let mut acc = Accumulator::default();
    acc.apply(answer.into_chunk(), deltas)?;
    Ok(acc.finish())
}

/// The human-readable part of an API error object.
fn error_message(error: &Value) -> String {
    match error {
        Value::String(message) => message.clone(),
        _ => match error.get("message").and_then(Value::as_str) {
            Some(message) => message.to_owned(),
            None => error.to_string(),
        },
    }
}

/// A refusal of the request as longer than the model's window, from an error body
/// (`{"error": {...}}`, or the object alone) in any of the shapes servers use.
fn context_error_in(body: &str) -> Option<ProviderError> {
    let value: Value = serde_json::from_str(body).ok()?;
    // vLLM answers with the error object itself, unwrapped.
    context_error(value.get("error").unwrap_or(&value))
}

/// The error object as a context refusal, if it is one: OpenAI's
/// `code: "context_length_exceeded"`, llama.cpp's `type: "exceed_context_size_error"` (with
/// `n_ctx`), or a message saying so in the words servers use ("maximum context length is N
/// tokens", "prompt is too long", "exceeds the available context size").
fn context_error(error: &Value) -> Option<ProviderError> {
    let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or("");
    let message = error_message(error);
    let said = message.to_ascii_lowercase();
    // The words other servers use (vLLM, llama.cpp without its type, LM Studio's plain string,
    // Anthropic- and Gemini-compatible proxies); a rate limit that counts tokens per minute is
    // not a window.
    let phrases = [
        "context length",
        "context window",
        "context size",
        "prompt is too long",
        "input is too long",
        "too many tokens",
        "reduce the length of the messages",
    ];
    let recognised = field("code") == "context_length_exceeded"
        || field("type") == "exceed_context_size_error"
        || (phrases.iter().any(|p| said.contains(p)) && !said.contains("per min"));
    if !recognised {
        return None;
    }
    let limit = error
        .get("n_ctx")
        .and_then(Value::as_u64)
        .or_else(|| number_after(&said, "maximum context length is "))
        .or_else(|| number_after(&said, "context size ("));
    Some(ProviderError::ContextTooLong {
        limit,
        message: truncate(&message, ERROR_BODY_LIMIT),
    })
}

/// The number written right after `prefix` in `text` (`8,192` reads as 8192).
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

#[cfg(test)]
mod context_error_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn other_servers_words_for_a_full_window_are_read_as_one() {
        let refusals = [
            // LM Studio: the error is a plain string.
            json!({"error": "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens"}),
            // An Anthropic-shaped proxy.
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
            // llama.cpp without its error type.
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it"}}),
            // A Gemini-shaped proxy.
            json!({"error": {"code": 400, "message": "The input token count exceeds the maximum number of tokens allowed; input is too long", "status": "INVALID_ARGUMENT"}}),
        ];
        for body in refusals {
            assert!(
                matches!(
                    context_error_in(&body.to_string()),
                    Some(ProviderError::ContextTooLong { .. })
                ),
                "{body}"
            );
        }
        // A rate limit that counts tokens is not a window.
        let tpm = json!({"error": {"message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000. Too many tokens.", "type": "tokens", "code": "rate_limit_exceeded"}});
        assert!(context_error_in(&tpm.to_string()).is_none());
        assert!(
            context_error_in(&json!({"error": {"message": "invalid api key"}}).to_string())
                .is_none()
        );
    }
}

#[cfg(test)]
mod call_id_tests {
    use super::PartialCall;

    /// A server that leaves ids out gets one per call, never the same across replies: two
    /// steps' first calls are two calls to the log and the page.
    #[test]
    fn a_call_without_an_id_gets_one_of_its_own() {
        let call = || PartialCall {
            id: String::new(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let (first, second) = (call().finish(0), call().finish(0));
        let text = first.id.as_str();
        assert!(text.starts_with("call_") && text.ends_with("_0"), "{text}");
        assert_ne!(first.id, second.id);
        let kept = PartialCall {
            id: "abc".into(),
            ..call()
        }
        .finish(3);
        assert_eq!(kept.id.as_str(), "abc");
    }
}
