//! `countersign mcp` driven over an in-memory pipe by rmcp's own client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use countersign::external::gates_client::GatesClient;
use countersign::external::mcp::{CountersignMcp, McpOptions};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt, object};
use serde_json::{Value, json};

use crate::common::{FakeGates, TOKEN, fixture};

#[derive(Clone, Default)]
struct TestClient {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for TestClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("test-client", "0"),
        )
    }
}

struct Session {
    client: RunningService<RoleClient, TestClient>,
    handler: TestClient,
}

async fn session(url: &str) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let gates = GatesClient::new(url, Some(TOKEN))
        .unwrap()
        .with_open_budget(Duration::from_millis(500));
    let options = McpOptions {
        progress_every: Duration::from_millis(100),
        ..McpOptions::new("/tmp/mcp-cwd".into(), 1800)
    };
    let server = CountersignMcp::new(gates, options);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let handler = TestClient::default();
    let client = handler.clone().serve(client_io).await.unwrap();
    Session { client, handler }
}

/// Calls a tool (rmcp's client attaches its own progress token to every request).
async fn call(session: &Session, name: &'static str, arguments: Value) -> Value {
    let params =
        CallToolRequestParams::new(name).with_arguments(arguments.as_object().unwrap().clone());
    let result = session.client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true));
    let text = &result.content[0].as_text().unwrap().text;
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[tokio::test]
async fn lists_both_tools() {
    let gates = FakeGates::start();
    let session = session(&gates.url()).await;
    let tools = session.client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["approval_prompt", "request_approval"]);
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(&*tool.input_schema).unwrap()
    };
    assert_eq!(
        schema("approval_prompt")["required"],
        json!(["tool_name", "input"])
    );
    assert_eq!(schema("request_approval")["required"], json!(["title"]));
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn approval_prompt_waits_with_progress_and_echoes_the_input() {
    let gates = FakeGates::start();
    let session = session(&gates.url()).await;
    let arguments = fixture("claude-code/permission-prompt-tool.call-arguments.json");
    let (answer, ()) = tokio::join!(
        call(&session, "approval_prompt", arguments.clone()),
        async {
            tokio::time::sleep(Duration::from_millis(450)).await;
            gates
                .resolve(0, json!({"status": "approved", "decision": "approve"}))
                .await;
        }
    );
    let expected_text = fixture("claude-code/permission-prompt-tool.result-allow.json")["content"]
        [0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        answer,
        serde_json::from_str::<Value>(&expected_text).unwrap()
    );

    // rmcp's client puts its own token on every request; the raw-wire test below checks a
    // token chosen by the host.
    let progress = session.handler.progress.lock().unwrap().clone();
    assert!(progress.len() >= 3, "progress: {progress:?}");
    assert!(
        progress
            .iter()
            .all(|p| p.progress_token == progress[0].progress_token)
    );
    assert!(progress.windows(2).all(|w| w[0].progress < w[1].progress));

    let body = &gates.gates()[0].body;
    assert_eq!(body["source"], "mcp");
    assert_eq!(body["cwd"], "/tmp/mcp-cwd");
    assert_eq!(
        body["tool"],
        json!({"name": "Bash", "input": arguments["input"]})
    );
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn approval_prompt_edit_and_deny() {
    let gates = FakeGates::start();
    let session = session(&gates.url()).await;
    let arguments = object!({"tool_name": "Bash", "input": {"command": "npm test"}});
    let (answer, ()) = tokio::join!(
        call(
            &session,
            "approval_prompt",
            Value::Object(arguments.clone())
        ),
        gates.resolve(
            0,
            json!({"status": "approved", "decision": "edit",
            "updated_input": {"command": "npm run lint"}})
        )
    );
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "npm run lint"}})
    );
    let (answer, ()) = tokio::join!(
        call(&session, "approval_prompt", Value::Object(arguments)),
        gates.resolve(
            1,
            json!({"status": "denied", "decision": "deny", "reason": "not now"})
        )
    );
    assert_eq!(answer, json!({"behavior": "deny", "message": "not now"}));
    // One Countersign session for the whole server process.
    let sessions: Vec<Value> = gates
        .gates()
        .iter()
        .map(|g| g.body["external_session"].clone())
        .collect();
    assert_eq!(sessions[0], sessions[1]);
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn request_approval_answers_approved_reason_and_revised() {
    let gates = FakeGates::start();
    let session = session(&gates.url()).await;
    let arguments =
        json!({"title": "Deploy v2", "details_markdown": "to **prod**", "kind": "deploy"});
    let (answer, ()) = tokio::join!(
        call(&session, "request_approval", arguments.clone()),
        gates.resolve(
            0,
            json!({"status": "approved", "decision": "edit",
            "updated_input": {"title": "Deploy v2", "details_markdown": "to staging first"}})
        )
    );
    assert_eq!(
        answer,
        json!({"approved": true, "revised": "to staging first"})
    );
    let body = &gates.gates()[0].body;
    assert_eq!(
        body["tool"],
        json!({"name": "request_approval", "input": arguments})
    );
    assert_eq!(body["title"], "Deploy v2");

    let (answer, ()) = tokio::join!(
        call(
            &session,
            "request_approval",
            json!({"title": "Drop the table"})
        ),
        gates.resolve(
            1,
            json!({"status": "denied", "decision": "deny", "reason": "no"})
        )
    );
    assert_eq!(answer, json!({"approved": false, "reason": "no"}));
    let (answer, ()) = tokio::join!(
        call(&session, "request_approval", json!({"title": "Ship"})),
        gates.resolve(2, json!({"status": "approved", "decision": "approve"}))
    );
    assert_eq!(answer, json!({"approved": true}));
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn unreachable_countersign_still_answers() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let session = session(&url).await;
    let answer = call(
        &session,
        "approval_prompt",
        json!({"tool_name": "Bash", "input": {"command": "ls"}}),
    )
    .await;
    assert_eq!(answer["behavior"], "deny");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("cannot reach Countersign")
    );
    let answer = call(&session, "request_approval", json!({"title": "x"})).await;
    assert_eq!(answer["approved"], false);
    assert!(answer["reason"].as_str().unwrap().contains("Countersign"));
    session.client.cancel().await.unwrap();
}

/// A refusal Countersign sent, or a card lost while waiting, is a deny that says what it was.
#[tokio::test]
async fn a_refusal_or_a_lost_card_is_a_deny_saying_so() {
    for (opens, polls, said) in [
        (Some(429), None, "429"),
        (Some(401), None, "refused the token"),
        (Some(503), None, "storage_unavailable"),
        (None, Some(404), "404"),
    ] {
        let gates = FakeGates::start();
        let code = |status| match status {
            429 => "too_many_gates",
            503 => "storage_unavailable",
            _ => "unknown",
        };
        let body = |status| json!({"error": {"code": code(status), "message": "m"}}).to_string();
        {
            let mut log = gates.log.lock().unwrap();
            log.opens_answer = opens.map(|s| (s, body(s)));
            log.polls_answer = polls.map(|s| (s, body(s)));
        }
        let session = session(&gates.url()).await;
        let answer = call(
            &session,
            "approval_prompt",
            json!({"tool_name": "Bash", "input": {"command": "make release"}}),
        )
        .await;
        assert_eq!(answer["behavior"], "deny", "{answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(said), "{message}");
        assert!(message.contains("no decision"), "{message}");
        session.client.cancel().await.unwrap();
    }
}

/// The real wire (the fixture transcript's client lines, as Claude Code sends them): the host's
/// own progress token is used, and a call without one gets no progress notifications.
#[tokio::test]
async fn the_recorded_wire_gets_progress_on_the_hosts_token_only() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let gates = FakeGates::start();
    let (wire, server_io) = tokio::io::duplex(64 * 1024);
    let options = McpOptions {
        progress_every: Duration::from_millis(100),
        ..McpOptions::new("/tmp/mcp-cwd".into(), 1800)
    };
    let server = CountersignMcp::new(
        GatesClient::new(&gates.url(), Some(TOKEN)).unwrap(),
        options,
    );
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let (read, mut write) = tokio::io::split(wire);
    let mut lines = BufReader::new(read).lines();
    let transcript =
        std::fs::read_to_string(crate::common::fixture_path("mcp/stdio-transcript.jsonl")).unwrap();
    let sent: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["dir"] == "client->server")
        .map(|l| l["msg"].clone())
        .collect();

    let mut progress = Vec::new();
    let mut answers = std::collections::HashMap::new();
    for msg in &sent {
        write
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        // Read until this request's response, collecting notifications on the way.
        let gates_ref = &gates;
        let index = gates_ref.gates().len();
        let resolver = async {
            if msg["method"] == "tools/call" {
                tokio::time::sleep(Duration::from_millis(350)).await;
                let answer = if msg["params"]["name"] == "approval_prompt" {
                    json!({"status": "approved", "decision": "approve"})
                } else {
                    json!({"status": "denied", "decision": "deny", "reason": "no"})
                };
                gates_ref.resolve(index, answer).await;
            }
        };
        let reader = async {
            loop {
                let line = lines.next_line().await.unwrap().unwrap();
                let got: Value = serde_json::from_str(&line).unwrap();
                if got["method"] == "notifications/progress" {
                    progress.push((id.clone(), got["params"].clone()));
                } else if got["id"] == id {
                    return got;
                }
            }
        };
        let (response, ()) = tokio::join!(reader, resolver);
        answers.insert(id.to_string(), response);
    }

    assert_eq!(answers["0"]["result"]["protocolVersion"], "2025-06-18");
    let mut tools: Vec<&str> = answers["1"]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(tools, ["approval_prompt", "request_approval"]);
    let text = |id: &str| -> Value {
        serde_json::from_str(
            answers[id]["result"]["content"][0]["text"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        text("2"),
        json!({"behavior": "allow", "updatedInput": {"command": "npm test"}})
    );
    assert_eq!(text("3"), json!({"approved": false, "reason": "no"}));
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(
        progress
            .iter()
            .all(|(id, p)| *id == json!(2) && p["progressToken"] == "tok-1")
    );
}
