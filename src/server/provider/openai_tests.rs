//! Tests of the `openai` provider over real HTTP on loopback, against a fixture server that
//! speaks OpenAI's streaming format and records what it was sent.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::openai::{ApiKey, OpenAiProvider, OpenAiSettings, RetryPolicy};
use super::{
    ChatMessage, Completion, CompletionRequest, Provider, ProviderError, ToolCallRequest, ToolSpec,
};
use super::{Tokenizer, Window};
use crate::protocol::ToolClass;

const API_KEY: &str = "sk-test-key-0123";
const MODEL: &str = "fixture-model";
/// Between two writes of a stream: long enough that each write arrives in its own read.
const PAUSE: Duration = Duration::from_millis(15);

// ---- the fixture server --------------------------------------------------------------------

/// What the fixture answers to one request.
enum Reply {
    /// Raw pieces of an event stream, written one at a time with a pause between them.
    Stream(Vec<String>),
    /// As `Stream`, then no more data: only keep-alive comments, as real servers send while
    /// stalled (which also lets the fixture notice when the client hangs up).
    StreamThenStall(Vec<String>),
    /// A whole answer with this status, content type and body.
    Whole(StatusCode, &'static str, String),
    /// A refusal with this status asking to come back after this many seconds.
    RetryAfter(StatusCode, &'static str),
}

#[derive(Clone, Debug)]
struct Recorded {
    authorization: Option<String>,
    body: Value,
}

#[derive(Clone, Default)]
struct FixtureState {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Set once a streamed body is dropped: finished, or abandoned by the client.
    body_dropped: Arc<AtomicBool>,
    /// Set when the fixture itself ended a stream (all pieces sent, or a stall gave up).
    stream_ended: Arc<AtomicBool>,
}

struct Fixture {
    base_url: String,
    state: FixtureState,
}

impl Fixture {
    async fn start(replies: Vec<Reply>) -> Fixture {
        let state = FixtureState::default();
        state.replies.lock().unwrap().extend(replies);
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Fixture {
            // The trailing slash is deliberate: the provider must tolerate it.
            base_url: format!("http://127.0.0.1:{port}/v1/"),
            state,
        }
    }

    fn provider(&self) -> OpenAiProvider {
        provider_for(&self.base_url, Duration::from_secs(10))
    }

    fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    fn body_dropped(&self) -> bool {
        self.state.body_dropped.load(Ordering::SeqCst)
    }

    fn stream_ended(&self) -> bool {
        self.state.stream_ended.load(Ordering::SeqCst)
    }
}

fn provider_for(base_url: &str, request_timeout: Duration) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiSettings {
        base_url: base_url.to_owned(),
        model: MODEL.to_owned(),
        api_key: Some(ApiKey::new(API_KEY.to_owned())),
        request_timeout,
        retry: quick_retries(),
        context_tokens: 32_768,
    })
    .unwrap()
}

/// The default number of retries, without the waits (the fixture answers at once).
fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    }
}

async fn chat_completions(
    State(state): State<FixtureState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.requests.lock().unwrap().push(Recorded {
        authorization,
        body,
    });
    let reply = state.replies.lock().unwrap().pop_front();
    let flags = (state.body_dropped.clone(), state.stream_ended.clone());
    match reply {
        Some(Reply::Stream(pieces)) => event_stream(pieces, false, flags),
        Some(Reply::StreamThenStall(pieces)) => event_stream(pieces, true, flags),
        Some(Reply::Whole(status, content_type, body)) => {
            (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Some(Reply::RetryAfter(status, secs)) => {
            (status, [(header::RETRY_AFTER, secs)], "slow down").into_response()
        }
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no reply left").into_response(),
    }
}

/// Sets its flag when dropped, so the test sees when the server let go of a stream.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// `flags`: (the body was dropped, the fixture ended the stream itself).
fn event_stream(
    pieces: Vec<String>,
    stall: bool,
    (dropped, ended): (Arc<AtomicBool>, Arc<AtomicBool>),
) -> Response {
    let start = (VecDeque::from(pieces), DropFlag(dropped), 0u32);
    let stream = futures::stream::unfold(start, move |(mut pieces, flag, ticks)| {
        let ended = ended.clone();
        async move {
            tokio::time::sleep(PAUSE).await;
            if let Some(piece) = pieces.pop_front() {
                return Some((
                    Ok::<_, Infallible>(Bytes::from(piece)),
                    (pieces, flag, ticks),
                ));
            }
            // Stalls for at most 30 s so a broken test cannot hang forever.
            if stall && ticks < 300 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let comment = Bytes::from_static(b": keep-alive\n\n");
                return Some((Ok(comment), (pieces, flag, ticks + 1)));
            }
            ended.store(true, Ordering::SeqCst);
            None
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

// ---- OpenAI's chunks -----------------------------------------------------------------------

fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fixture",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_fixture",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null
    })
}

fn role_chunk() -> Value {
    chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )
}

fn text_chunk(text: &str) -> Value {
    chunk(json!({"content": text}), None)
}

fn call_start(index: usize, id: &str, name: &str) -> Value {
    let call = json!({"index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""}});
    chunk(json!({"tool_calls": [call]}), None)
}

fn call_args(index: usize, piece: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
        None,
    )
}

fn finish_chunk(reason: &str) -> Value {
    chunk(json!({}), Some(reason))
}

fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-fixture",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
    })
}

fn sse(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

/// Two tool calls, interleaved, their arguments cut mid-token; optionally some text first.
fn two_calls_stream(with_text: bool) -> Vec<String> {
    let mut pieces = vec![sse(&role_chunk())];
    if with_text {
        pieces.push(sse(&text_chunk("Let me ")));
        pieces.push(sse(&text_chunk("read both.")));
    }
    // One event cut in two writes, and two events in one write: framing must not matter.
    let split = sse(&call_args(0, "th\": \"no"));
    let (head, tail) = split.split_at(split.len() / 2);
    pieces.extend([
        sse(&call_start(0, "call_a", "read_file")),
        sse(&call_args(0, "{\"pa")),
        sse(&call_start(1, "call_b", "list_dir")),
        sse(&call_args(1, "{\"di")),
        head.to_owned(),
        tail.to_owned(),
        sse(&call_args(1, "r\": \"src\"}")) + &sse(&call_args(0, "tes.md\"}")),
        sse(&finish_chunk("tool_calls")),
        sse(&usage_chunk(120, 30)),
        DONE.to_owned(),
    ]);
    pieces
}

fn final_answer_stream() -> Vec<String> {
    let mut pieces = vec![sse(&role_chunk())];
    for piece in ["The notes ", "say: ship ", "on Friday", "."] {
        pieces.push(sse(&text_chunk(piece)));
    }
    pieces.extend([
        sse(&finish_chunk("stop")),
        sse(&usage_chunk(200, 12)),
        DONE.to_owned(),
    ]);
    pieces
}

// ---- calling the provider ------------------------------------------------------------------

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file",
        description: "Reads one file of the workspace.",
        class: ToolClass::Read,
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"]}),
    }
}

fn list_dir_tool() -> ToolSpec {
    ToolSpec {
        name: "list_dir",
        description: "Lists a directory.",
        class: ToolClass::Read,
        parameters: json!({"type": "object", "properties": {"dir": {"type": "string"}}}),
    }
}

fn shared(messages: Vec<ChatMessage>) -> Vec<Arc<ChatMessage>> {
    messages.into_iter().map(Arc::new).collect()
}

fn opening_messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::System("You are terse.".to_owned()),
        ChatMessage::User("Summarise notes.md".to_owned()),
    ]
}

/// Runs one call and returns its result with the text deltas the sink received.
async fn complete(
    provider: &OpenAiProvider,
    request: &CompletionRequest,
    cancel: &CancellationToken,
) -> (Result<Completion, ProviderError>, Vec<String>) {
    let seen = Mutex::new(Vec::new());
    let sink = |delta: &str| seen.lock().unwrap().push(delta.to_owned());
    let result = provider.complete(request, &sink, cancel).await;
    (result, seen.into_inner().unwrap())
}

fn call(id: &str, name: &str, args: Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.to_owned(),
        args,
    }
}

// ---- tests ---------------------------------------------------------------------------------

#[tokio::test]
async fn interleaved_tool_calls_are_assembled_in_index_order() {
    let fixture = Fixture::start(vec![Reply::Stream(two_calls_stream(true))]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![read_file_tool(), list_dir_tool()],
    };

    let (result, deltas) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    let completion = result.unwrap();
    assert_eq!(deltas, ["Let me ", "read both."]);
    assert_eq!(completion.text, "Let me read both.");
    assert_eq!(
        completion.tool_calls,
        [
            call("call_a", "read_file", json!({"path": "notes.md"})),
            call("call_b", "list_dir", json!({"dir": "src"})),
        ]
    );
    assert_eq!(completion.tokens, 150);
}

#[tokio::test]
async fn tool_results_go_back_in_the_shape_openai_expects() {
    let fixture = Fixture::start(vec![
        Reply::Stream(two_calls_stream(false)),
        Reply::Stream(final_answer_stream()),
    ])
    .await;
    let provider = fixture.provider();
    let tools = vec![read_file_tool(), list_dir_tool()];
    let cancel = CancellationToken::new();
    let first = CompletionRequest {
        messages: shared(opening_messages()),
        tools: tools.clone(),
    };
    let (asked, _) = complete(&provider, &first, &cancel).await;
    let asked = asked.unwrap();
    let mut messages = opening_messages();
    messages.push(ChatMessage::Assistant {
        text: asked.text,
        tool_calls: asked.tool_calls,
    });
    messages.push(ChatMessage::Tool {
        call_id: "call_a".into(),
        output: "ship on Friday".to_owned(),
    });
    messages.push(ChatMessage::Tool {
        call_id: "call_b".into(),
        output: "main.rs".to_owned(),
    });
    let second = CompletionRequest::new(messages, tools);

    let (answer, deltas) = complete(&provider, &second, &cancel).await;

    let answer = answer.unwrap();
    assert_eq!(deltas, ["The notes ", "say: ship ", "on Friday", "."]);
    assert_eq!(answer.text, deltas.concat());
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.tokens, 212);

    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[1];
    assert_eq!(
        sent.authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    let body = &sent.body;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {"name": "read_file",
                "description": "Reads one file of the workspace.",
                "parameters": read_file_tool().parameters}},
            {"type": "function", "function": {"name": "list_dir",
                "description": "Lists a directory.", "parameters": list_dir_tool().parameters}},
        ])
    );
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(messages[0]["content"], "You are terse.");
    assert_eq!(messages[1]["content"], "Summarise notes.md");

    let assistant = &messages[2];
    assert_eq!(assistant["content"], Value::Null);
    let calls = assistant["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for (sent_call, (id, name, args)) in calls.iter().zip([
        ("call_a", "read_file", json!({"path": "notes.md"})),
        ("call_b", "list_dir", json!({"dir": "src"})),
    ]) {
        assert_eq!(sent_call["id"], id);
        assert_eq!(sent_call["type"], "function");
        assert_eq!(sent_call["function"]["name"], name);
        let arguments = sent_call["function"]["arguments"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(arguments).unwrap(), args);
    }
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "ship on Friday"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "main.rs"})
    );
}

#[tokio::test]
async fn a_refused_call_is_an_http_error_with_the_body() {
    let body = json!({"error": {"message": "Incorrect API key provided: sk-test***0123.",
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
    let fixture = Fixture::start(vec![Reply::Whole(
        StatusCode::UNAUTHORIZED,
        "application/json",
        body.to_string(),
    )])
    .await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, deltas) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    match result {
        Err(ProviderError::Http { status, body }) => {
            assert_eq!(status, 401);
            assert!(body.contains("Incorrect API key provided"), "{body}");
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert!(deltas.is_empty());
}

/// The cancel comes once the first words have arrived and the stream has gone quiet: the call
/// must end `Cancelled` while the fixture is still streaming (it would stall for 30 s), and
/// hang up.
#[tokio::test]
async fn cancelling_a_stalled_stream_returns_promptly_and_hangs_up() {
    let pieces = vec![sse(&role_chunk()), sse(&text_chunk("Thinking"))];
    let fixture = Fixture::start(vec![Reply::StreamThenStall(pieces)]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };
    let cancel = CancellationToken::new();
    let (first_delta, delta_arrived) = tokio::sync::oneshot::channel::<()>();
    let first_delta = Mutex::new(Some(first_delta));
    let seen = Mutex::new(Vec::new());
    let sink = |delta: &str| {
        seen.lock().unwrap().push(delta.to_owned());
        if let Some(tx) = first_delta.lock().unwrap().take() {
            let _ = tx.send(());
        }
    };
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            delta_arrived.await.expect("a delta arrived");
            cancel.cancel();
        })
    };

    let result = fixture.provider().complete(&request, &sink, &cancel).await;
    let ended_by_fixture = fixture.stream_ended();

    canceller.await.unwrap();
    assert!(
        matches!(result, Err(ProviderError::Cancelled)),
        "{result:?}"
    );
    assert_eq!(
        seen.into_inner().unwrap(),
        ["Thinking"],
        "the stream was cut mid-answer"
    );
    assert!(
        !ended_by_fixture,
        "the call returned only once the fixture gave up its stall"
    );
    // The client hung up: the fixture lets go of the body while it still has a stall to send.
    // (The bound only guards against a hang: the stall itself ends after 30 s.)
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fixture.body_dropped() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fixture.body_dropped(), "the connection was not closed");
    assert!(
        !fixture.stream_ended(),
        "the body was let go because the stall ran out, not because the client hung up"
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_are_kept_raw() {
    let broken = "{\"path\": \"a.md\", \"content\": ";
    let pieces = vec![
        sse(&role_chunk()),
        sse(&call_start(0, "call_x", "write_file")),
        sse(&call_args(0, broken)),
        sse(&call_start(1, "call_y", "list_dir")),
        sse(&finish_chunk("tool_calls")),
        DONE.to_owned(),
    ];
    let fixture = Fixture::start(vec![Reply::Stream(pieces)]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    let completion = result.unwrap();
    assert_eq!(
        completion.tool_calls,
        [
            call("call_x", "write_file", Value::String(broken.to_owned())),
            call("call_y", "list_dir", json!({})),
        ]
    );
    assert_eq!(completion.tokens, 0);
    assert!(fixture.requests()[0].body.get("tools").is_none());
}

/// A loopback port that refuses every connection for as long as this is held: a socket bound
/// to it that never listens. (A listening socket would accept at the kernel level, and a port
/// bound and then let go could be taken by another process before the test connects.)
struct ClosedPort {
    _socket: std::os::fd::OwnedFd,
    port: u16,
}

impl ClosedPort {
    fn new() -> ClosedPort {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let os_err = std::io::Error::last_os_error;
        let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: plain socket calls on a descriptor we own, with a zeroed `sockaddr_in` of
        // the size we pass.
        let (socket, port) = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", os_err());
            let socket = OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let rc = libc::bind(
                socket.as_raw_fd(),
                (&raw const addr).cast::<libc::sockaddr>(),
                len,
            );
            assert_eq!(rc, 0, "bind: {}", os_err());
            let mut bound: libc::sockaddr_in = std::mem::zeroed();
            let mut bound_len = len;
            let rc = libc::getsockname(
                socket.as_raw_fd(),
                (&raw mut bound).cast::<libc::sockaddr>(),
                &mut bound_len,
            );
            assert_eq!(rc, 0, "getsockname: {}", os_err());
            (socket, u16::from_be(bound.sin_port))
        };
        assert_ne!(port, 0);
        let refused = std::net::TcpStream::connect(("127.0.0.1", port))
            .expect_err("a bound socket that does not listen accepted a connection");
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        ClosedPort {
            _socket: socket,
            port,
        }
    }
}

#[tokio::test]
async fn a_port_nobody_listens_on_is_a_transport_error() {
    let closed = ClosedPort::new();
    let port = closed.port;
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let provider = provider_for(&base_url, Duration::from_secs(5));
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, _) = complete(&provider, &request, &CancellationToken::new()).await;

    match result {
        Err(ProviderError::Transport(message)) => {
            assert!(
                message.contains(&format!("{base_url}/chat/completions")),
                "{message}"
            );
            assert!(message.to_lowercase().contains("refused"), "{message}");
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_a_protocol_error() {
    let error = json!({"error": {"message": "The server had an error while processing your request.",
        "type": "server_error"}});
    let pieces = vec![sse(&role_chunk()), sse(&text_chunk("Hal")), sse(&error)];
    let fixture = Fixture::start(vec![Reply::Stream(pieces)]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    match result {
        Err(ProviderError::Protocol(message)) => {
            assert_eq!(
                message,
                "The server had an error while processing your request."
            );
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_may_end_without_done_once_finished_but_not_before() {
    let finished = vec![sse(&text_chunk("Done.")), sse(&finish_chunk("stop"))];
    let cut = vec![sse(&text_chunk("Half an ans"))];
    let fixture = Fixture::start(vec![Reply::Stream(finished), Reply::Stream(cut)]).await;
    let provider = fixture.provider();
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };
    let cancel = CancellationToken::new();

    let (finished, _) = complete(&provider, &request, &cancel).await;
    let (cut, _) = complete(&provider, &request, &cancel).await;

    assert_eq!(finished.unwrap().text, "Done.");
    assert!(matches!(cut, Err(ProviderError::Transport(_))), "{cut:?}");
}

#[tokio::test]
async fn the_request_timeout_bounds_a_stalled_stream() {
    let pieces = vec![sse(&text_chunk("Slow"))];
    let fixture = Fixture::start(vec![Reply::StreamThenStall(pieces)]).await;
    let provider = provider_for(&fixture.base_url, Duration::from_millis(500));
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };
    let started = Instant::now();

    let (result, _) = complete(&provider, &request, &CancellationToken::new()).await;

    match result {
        Err(ProviderError::Transport(message)) => assert!(message.contains("within"), "{message}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_plain_json_answer_is_accepted_too() {
    let answer = json!({
        "id": "chatcmpl-whole", "object": "chat.completion", "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "One moment.",
            "tool_calls": [
                {"id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"a.md\"}"}},
                {"id": "call_2", "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"}}
            ]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let fixture = Fixture::start(vec![Reply::Whole(
        StatusCode::OK,
        "application/json",
        answer.to_string(),
    )])
    .await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, deltas) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    let completion = result.unwrap();
    assert_eq!(deltas, ["One moment."]);
    assert_eq!(
        completion.tool_calls,
        [
            call("call_1", "read_file", json!({"path": "a.md"})),
            call("call_2", "list_dir", json!({})),
        ]
    );
    assert_eq!(completion.tokens, 15);
}

#[tokio::test]
async fn overload_and_server_errors_are_tried_again_until_one_answers() {
    let done = vec![
        sse(&text_chunk("At last.")),
        sse(&finish_chunk("stop")),
        DONE.to_owned(),
    ];
    let fixture = Fixture::start(vec![
        Reply::Whole(
            StatusCode::BAD_GATEWAY,
            "text/plain",
            "upstream down".into(),
        ),
        Reply::RetryAfter(StatusCode::TOO_MANY_REQUESTS, "0"),
        Reply::RetryAfter(StatusCode::SERVICE_UNAVAILABLE, "0"),
        Reply::Stream(done),
    ])
    .await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, deltas) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    assert_eq!(result.unwrap().text, "At last.");
    assert_eq!(deltas, ["At last."], "only the answer that worked streamed");
    assert_eq!(
        fixture.requests().len(),
        4,
        "three retries, then the answer"
    );
}

#[tokio::test]
async fn retries_run_out_with_the_last_error_and_how_many_attempts() {
    let busy = || Reply::RetryAfter(StatusCode::TOO_MANY_REQUESTS, "0");
    let fixture = Fixture::start(vec![busy(), busy(), busy(), busy(), busy()]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    match result {
        Err(ProviderError::Http { status, body }) => {
            assert_eq!(status, 429);
            assert!(body.contains("gave up after 4 attempts"), "{body}");
        }
        other => panic!("expected the last 429, got {other:?}"),
    }
    assert_eq!(fixture.requests().len(), 4, "1 call + max_retries (3)");
}

#[tokio::test]
async fn a_client_error_is_not_tried_again() {
    let fixture = Fixture::start(vec![Reply::Whole(
        StatusCode::BAD_REQUEST,
        "application/json",
        json!({"error": {"message": "bad model"}}).to_string(),
    )])
    .await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };

    let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;

    assert!(
        matches!(result, Err(ProviderError::Http { status: 400, .. })),
        "{result:?}"
    );
    assert_eq!(fixture.requests().len(), 1);
}

#[tokio::test]
async fn cancel_ends_the_wait_between_retries() {
    let fixture = Fixture::start(vec![Reply::RetryAfter(
        StatusCode::SERVICE_UNAVAILABLE,
        "3600",
    )])
    .await;
    let provider = OpenAiProvider::new(OpenAiSettings {
        base_url: fixture.base_url.clone(),
        model: MODEL.to_owned(),
        api_key: None,
        request_timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_retry_after: Duration::from_secs(3600),
            ..RetryPolicy::default()
        },
        context_tokens: 32_768,
    })
    .unwrap();
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };
    let cancel = CancellationToken::new();
    let call = {
        let cancel = cancel.clone();
        tokio::spawn(async move { complete(&provider, &request, &cancel).await.0 })
    };
    // Cancel once the first (refused) attempt is in: the call is then waiting an hour.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fixture.requests().is_empty() {
        assert!(Instant::now() < deadline, "the first attempt never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let result = call.await.unwrap();
    assert!(
        matches!(result, Err(ProviderError::Cancelled)),
        "{result:?}"
    );
    assert_eq!(fixture.requests().len(), 1);
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let provider = provider_for("http://127.0.0.1:9/v1", Duration::from_secs(1));
    let printed = format!("{provider:?}");
    assert!(!printed.contains(API_KEY), "{printed}");
    assert!(printed.contains("Secret((masked))"), "{printed}");
}

#[test]
fn settings_without_a_usable_url_are_refused() {
    let result = OpenAiProvider::new(OpenAiSettings {
        base_url: "127.0.0.1:8080/v1".to_owned(),
        model: MODEL.to_owned(),
        api_key: None,
        request_timeout: Duration::from_secs(1),
        retry: RetryPolicy::default(),
        context_tokens: 32_768,
    });
    assert!(
        matches!(result, Err(ProviderError::Config(_))),
        "{result:?}"
    );
}

/// A refusal for length, as OpenAI, llama.cpp's server and vLLM word it: recognised, with the
/// window it names, and not tried again (the same request would be refused the same way).
#[tokio::test]
async fn a_request_too_long_for_the_model_is_recognised_in_each_servers_shape() {
    let openai = json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let llama_cpp = json!({"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
        "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}});
    let vllm = json!({"object": "error", "message": "This model's maximum context length is 32,768 tokens. However, you requested 40000 tokens in the messages.",
        "type": "BadRequestError", "param": null, "code": 400});
    for (body, limit) in [(openai, 8192), (llama_cpp, 4096), (vllm, 32_768)] {
        let fixture = Fixture::start(vec![
            Reply::Whole(
                StatusCode::BAD_REQUEST,
                "application/json",
                body.to_string(),
            ),
            Reply::Stream(final_answer_stream()),
        ])
        .await;
        let request = CompletionRequest {
            messages: shared(opening_messages()),
            tools: vec![],
        };
        let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;
        match result {
            Err(ProviderError::ContextTooLong {
                limit: named,
                message,
            }) => {
                assert_eq!(named, Some(limit), "{body}");
                assert!(message.contains("context"), "{message}");
            }
            other => panic!("expected a context refusal for {body}, got {other:?}"),
        }
        assert_eq!(fixture.requests().len(), 1, "not tried again: {body}");
    }
}

#[tokio::test]
async fn a_length_refusal_inside_the_stream_is_recognised_too() {
    let error = json!({"error": {"message": "This model's maximum context length is 8192 tokens.",
        "type": "invalid_request_error", "code": "context_length_exceeded"}});
    let fixture = Fixture::start(vec![Reply::Stream(vec![sse(&error)])]).await;
    let request = CompletionRequest {
        messages: shared(opening_messages()),
        tools: vec![],
    };
    let (result, _) = complete(&fixture.provider(), &request, &CancellationToken::new()).await;
    assert!(
        matches!(
            result,
            Err(ProviderError::ContextTooLong {
                limit: Some(8192),
                ..
            })
        ),
        "{result:?}"
    );
}

#[test]
fn the_window_is_the_configured_one_counted_as_the_model_counts() {
    let provider = provider_for("http://127.0.0.1:9/v1", Duration::from_secs(1));
    assert_eq!(
        provider.window(),
        Some(Window {
            context_tokens: 32_768,
            tokenizer: Tokenizer::Estimate
        })
    );
    let gpt = OpenAiProvider::new(OpenAiSettings {
        base_url: "http://127.0.0.1:9/v1".to_owned(),
        model: "gpt-4o-mini".to_owned(),
        api_key: None,
        request_timeout: Duration::from_secs(1),
        retry: RetryPolicy::default(),
        context_tokens: 128_000,
    })
    .unwrap();
    let window = gpt.window().unwrap();
    assert_eq!(window.tokenizer, Tokenizer::O200k);
    assert_eq!(window.budget(), 128_000 - 16_384);
}
