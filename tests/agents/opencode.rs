//! opencode, for real: `opencode serve` on a loopback port against the scripted OpenAI-compatible
//! server (a custom `@ai-sdk/openai-compatible` provider in the project's `opencode.json`, which
//! opencode 1.18.33 ships inside its binary: nothing is downloaded), `bash` set to `ask`, and
//! `countersign bridge opencode --opencode-url …` beside it, as the README says. Prompts go in
//! through opencode's own HTTP API (`POST /session`, `POST /session/{id}/message`), as its TUI
//! and web client send them: `opencode run` cannot be used, since it rejects every permission
//! itself ("permission requested: bash (…); auto-rejecting"), even with `--attach`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::kit::{Desk, installed};
use crate::openai_chat::OpenAiChat;
use crate::support::{SOON, of_type, poll_until, str_of, wait_file};
use crate::tui::Tui;

/// How long one prompt may take (it waits on a card meanwhile).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// How long opencode may take to start (it is a 180 MB binary; the machine is shared).
const START_LIMIT: Duration = Duration::from_secs(60);

struct Opencode {
    desk: Desk,
    model: OpenAiChat,
    bin: PathBuf,
    url: String,
    port: u16,
    server: Option<tokio::process::Child>,
    /// opencode's TUI, when it was started as `opencode --port <port>` instead of `serve`.
    tui: Option<Tui>,
    bridge: Option<tokio::process::Child>,
    /// How many times opencode and the bridge were started (each run logs to its own file).
    starts: usize,
    http: reqwest::Client,
    /// `OPENCODE_SERVER_PASSWORD` for opencode and the bridge (Basic auth, user `opencode`).
    password: Option<String>,
}

/// How opencode is run.
#[derive(Default)]
struct Setup {
    /// The TUI with `--port` (in tmux) rather than `opencode serve --port`.
    tui: bool,
    password: Option<&'static str>,
}

/// A prompt sent to opencode: the task waits for `POST /session/{id}/message` to answer with
/// the turn's last assistant message.
struct Turn {
    session: String,
    answer: tokio::task::JoinHandle<Result<Value, String>>,
}

impl Opencode {
    /// Countersign, the scripted model, opencode serving on a free port and the bridge
    /// following it; `None` when opencode is not installed (and the run does not require it).
    async fn set_up() -> Option<Opencode> {
        Opencode::set_up_with(Setup::default()).await
    }

    async fn set_up_with(setup: Setup) -> Option<Opencode> {
        let agent = installed("opencode")?;
        let desk = Desk::new().await;
        let model = OpenAiChat::start().await;
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "model": "scripted/scripted",
            "small_model": "scripted/scripted",
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": model.base_url, "apiKey": "sk-scripted"},
                "models": {"scripted": {"name": "Scripted", "tool_call": true}}
            }},
            "permission": {"bash": "ask"}
        });
        std::fs::write(
            desk.project.join("opencode.json"),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
        let port = free_port();
        let mut oc = Opencode {
            desk,
            model,
            bin: agent.bin,
            url: format!("http://127.0.0.1:{port}"),
            port,
            server: None,
            tui: None,
            bridge: None,
            starts: 0,
            http: reqwest::Client::new(),
            password: setup.password.map(str::to_owned),
        };
        if setup.tui {
            oc.start_tui()?;
            oc.answering().await;
        } else {
            oc.start_opencode().await;
        }
        oc.start_bridge();
        Some(oc)
    }

    fn log_dir(&self) -> &Path {
        self.desk.home.parent().unwrap()
    }

    fn log_file(&mut self, name: &str) -> std::fs::File {
        self.starts += 1;
        let path = self.log_dir().join(format!("{name}-{}.log", self.starts));
        std::fs::File::create(path).unwrap()
    }

    /// Every log the processes wrote so far (for failure messages).
    fn logs(&self) -> String {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.log_dir())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                format!("--- {}\n{text}", p.file_name().unwrap().to_string_lossy())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the bridge wrote on stderr, every run of it.
    fn bridge_log(&self) -> String {
        self.logs()
            .split("--- ")
            .filter(|part| part.starts_with("bridge-"))
            .collect()
    }

    /// opencode's environment: the Desk's, with every fetch from the network turned off —
    /// models.dev, the updater, sharing, LSP downloads, the default (npm) plugins — and npm
    /// offline, so the `@opencode-ai/plugin` install opencode starts in the background in each
    /// config folder fails at once (a warning in its log) instead of reaching the registry.
    fn opencode_env(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut env = self.desk.env();
        for (key, value) in [
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_SHARE", "1"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
            ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
            ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
            ("npm_config_offline", "true"),
        ] {
            env.push((key.into(), value.into()));
        }
        env.extend(self.password_env());
        env
    }

    fn password_env(&self) -> Option<(String, std::ffi::OsString)> {
        let password = self.password.as_ref()?;
        Some(("OPENCODE_SERVER_PASSWORD".into(), password.into()))
    }

    /// A request to opencode's server, with its password if it has one.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.url));
        match &self.password {
            Some(password) => request.basic_auth("opencode", Some(password)),
            None => request,
        }
    }

    /// `opencode serve --port <port>`, started and answering.
    async fn start_opencode(&mut self) {
        let log = self.log_file("opencode");
        let mut cmd = self.desk.command(&self.bin);
        cmd.env_clear()
            .envs(self.opencode_env())
            .args(["serve", "--hostname", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .args(["--print-logs", "--log-level", "INFO"])
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        self.server = Some(cmd.spawn().expect("start opencode serve"));
        self.answering().await;
    }

    /// opencode's TUI as `opencode --port <port>` in a terminal; `None` without tmux.
    fn start_tui(&mut self) -> Option<()> {
        let port = self.port.to_string();
        let tui = Tui::start(
            &self.bin,
            &["--port", &port],
            &self.desk.project,
            &self.opencode_env(),
        )?;
        self.tui = Some(tui);
        Some(())
    }

    /// Waits until opencode's server answers.
    async fn answering(&mut self) {
        let started = Instant::now();
        loop {
            let answered = self
                .request(reqwest::Method::GET, "/permission")
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if answered {
                return;
            }
            if let Some(server) = self.server.as_mut()
                && let Some(status) = server.try_wait().unwrap()
            {
                panic!("opencode serve exited ({status}):\n{}", self.logs());
            }
            let screen = self.tui.as_ref().map(Tui::screen).unwrap_or_default();
            assert!(
                started.elapsed() < START_LIMIT,
                "opencode did not answer within {START_LIMIT:?}:\n{}{screen}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `kill -9` opencode.
    async fn kill_opencode(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill().await.unwrap();
        }
    }

    /// `countersign bridge opencode --opencode-url <url>`, started with the Desk's environment.
    fn start_bridge(&mut self) {
        let log = self.log_file("bridge");
        let mut cmd = self
            .desk
            .command(Path::new(env!("CARGO_BIN_EXE_countersign")));
        cmd.args(["bridge", "opencode", "--opencode-url", &self.url])
            .envs(self.password_env())
            .stdout(Stdio::null())
            .stderr(log);
        self.bridge = Some(cmd.spawn().expect("start the bridge"));
    }

    /// `kill -9` the bridge.
    async fn kill_bridge(&mut self) {
        if let Some(mut bridge) = self.bridge.take() {
            bridge.kill().await.unwrap();
        }
    }

    /// Both processes are still running.
    fn assert_alive(&mut self) {
        let logs = self.logs();
        for (name, child) in [
            ("opencode", &mut self.server),
            ("the bridge", &mut self.bridge),
        ] {
            let child = child
                .as_mut()
                .unwrap_or_else(|| panic!("{name} is not running"));
            if let Some(status) = child.try_wait().unwrap() {
                panic!("{name} exited ({status}):\n{logs}");
            }
        }
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        send(self.request(reqwest::Method::POST, path).json(&body), SOON).await
    }

    async fn get(&self, path: &str) -> Value {
        send(
            self.request(reqwest::Method::GET, path),
            Duration::from_secs(10),
        )
        .await
        .unwrap()
    }

    /// A new opencode session given `prompt`, as opencode's TUI sends it.
    async fn prompt(&self, prompt: &str) -> Turn {
        let session = self.post("/session", json!({})).await.unwrap();
        let session = str_of(&session, "id").to_owned();
        let request = self
            .request(
                reqwest::Method::POST,
                &format!("/session/{session}/message"),
            )
            .json(&json!({"parts": [{"type": "text", "text": prompt}]}));
        let answer = tokio::spawn(send(request, RUN_LIMIT));
        Turn { session, answer }
    }

    /// Waits for the turn to end, checks it ended with the script's `DONE`.
    async fn finish(&self, turn: Turn) {
        let answer = tokio::time::timeout(RUN_LIMIT, turn.answer)
            .await
            .unwrap_or_else(|_| panic!("the turn did not end:\n{}", self.logs()))
            .unwrap()
            .unwrap_or_else(|e| panic!("the prompt failed: {e}\n{}", self.logs()));
        let text: String = answer["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect();
        assert_eq!(text, "DONE", "the turn ended otherwise: {answer}");
    }

    /// opencode's pending permissions.
    async fn permissions(&self) -> Vec<Value> {
        self.get("/permission").await.as_array().cloned().unwrap()
    }

    /// Waits until opencode has exactly one permission pending, and returns it.
    async fn permission(&self) -> Value {
        poll_until("one permission pending in opencode", SOON, || async {
            match self.permissions().await.as_slice() {
                [one] => Ok(one.clone()),
                other => Err(format!("{other:?}")),
            }
        })
        .await
    }

    /// Waits until the one pending card is opencode's `bash` permission for `command` (a card
    /// a rule answers is pending for a moment first), and returns it.
    async fn card_for(&self, command: &str) -> Value {
        let want = json!({ "command": command });
        poll_until(
            &format!("one pending card for `{command}`"),
            SOON,
            || async {
                let list = self
                    .desk
                    .admin()
                    .get("/api/v1/approvals?status=pending")
                    .await
                    .expect(200);
                match list.as_array().map(Vec::as_slice) {
                    Some([gate]) if gate["tool"] == "bash" && gate["args"] == want => {
                        Ok(gate.clone())
                    }
                    _ => Err(list.to_string()),
                }
            },
        )
        .await
    }

    /// A gate's state as its adapter sees it.
    async fn gate_state(&self, gate: &Value) -> Value {
        let aid = str_of(gate, "approval_id");
        self.desk
            .admin()
            .get(&format!("/api/v1/gates/{aid}"))
            .await
            .expect(200)
    }

    /// Waits until the gate is closed as `cancelled` for `reason`.
    async fn cancelled(&self, gate: &Value, reason: &str) {
        poll_until("the card to close", SOON, || async {
            let state = self.gate_state(gate).await;
            if state["status"] == "cancelled" && state["reason"] == reason {
                Ok(())
            } else {
                Err(state.to_string())
            }
        })
        .await;
    }

    fn results(&self) -> Vec<crate::script::ToolResult> {
        self.model.recorder.tool_results()
    }
}

async fn send(request: reqwest::RequestBuilder, limit: Duration) -> Result<Value, String> {
    let response = request
        .timeout(limit)
        .send()
        .await
        .map_err(|e| format!("{e}"))?;
    let (status, url) = (response.status(), response.url().clone());
    let text = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{url}: {status} {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{url}: {e} in {text}"))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// opencode's event stream as the test sees it, each event with when it arrived.
#[derive(Clone, Default)]
struct Seen {
    events: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Seen {
    async fn follow(oc: &Opencode) -> (Seen, tokio::task::JoinHandle<()>) {
        let seen = Seen::default();
        let response = oc
            .request(reqwest::Method::GET, "/event")
            .send()
            .await
            .unwrap();
        let events = Arc::clone(&seen.events);
        let task = tokio::spawn(async move {
            let mut stream = eventsource_stream::Eventsource::eventsource(response.bytes_stream());
            while let Some(Ok(event)) = stream.next().await {
                if let Ok(value) = serde_json::from_str::<Value>(&event.data) {
                    events.lock().unwrap().push((Instant::now(), value));
                }
            }
        });
        (seen, task)
    }

    /// When the first event of `kind` whose properties hold `key: value` arrived.
    fn when(&self, kind: &str, key: &str, value: &str) -> Option<Instant> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find(|(_, e)| e["type"] == kind && e["properties"][key] == value)
            .map(|(at, _)| *at)
    }

    /// When the tool call `call_id` was reported `status`.
    fn tool(&self, call_id: &str, status: &str) -> Option<Instant> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .find(|(_, e)| {
                let part = &e["properties"]["part"];
                e["type"] == "message.part.updated"
                    && part["callID"] == call_id
                    && part["state"]["status"] == status
            })
            .map(|(at, _)| *at)
    }

    /// Waits until opencode has announced exactly these replies (`permission.replied`), in
    /// order.
    async fn replied(&self, expected: &[&str]) {
        poll_until(
            &format!("opencode's replies to be {expected:?}"),
            SOON,
            || async {
                let replies = self.replies();
                if replies == expected {
                    Ok(())
                } else {
                    Err(format!("{replies:?}"))
                }
            },
        )
        .await;
    }

    fn replies(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, e)| e["type"] == "permission.replied")
            .map(|(_, e)| e["properties"]["reply"].as_str().unwrap_or("?").to_owned())
            .collect()
    }
}

fn ms(from: Instant, to: Instant) -> u128 {
    to.saturating_duration_since(from).as_millis()
}

#[tokio::test]
async fn approve_runs_the_call_and_deny_tells_the_model_why() {
    let Some(oc) = Opencode::set_up().await else {
        return;
    };
    let (seen, _follow) = Seen::follow(&oc).await;
    let turn = oc.prompt("RUN[echo approved > out.txt]").await;
    let gate = oc.card_for("echo approved > out.txt").await;
    let carded = Instant::now();
    let offered = oc
        .model
        .shell_tool()
        .expect("opencode offered its shell tool");
    assert_eq!(
        offered["function"]["parameters"]["required"],
        json!(["command"]),
        "the shape the script answers with: {offered}"
    );
    let asked = oc.permission().await;
    assert_eq!(asked["sessionID"], turn.session.as_str(), "{asked}");
    assert_eq!(
        asked["metadata"],
        json!({"command": "echo approved > out.txt"})
    );
    assert_eq!(
        gate["args"], asked["metadata"],
        "the card shows opencode's input"
    );
    let events = oc.desk.session_events(&gate).await;
    let request = of_type(&events, "approval_request")[0];
    let note = request.to_string();
    assert!(
        note.contains("echo *"),
        "the card says what opencode's own Allow always would allow: {request}"
    );
    assert_eq!(
        oc.desk.file("out.txt"),
        None,
        "nothing runs before the answer"
    );

    let decided = Instant::now();
    oc.desk.decide(&gate, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("out.txt").as_deref(), Some("approved\n"));
    let results = oc.results();
    assert!(
        !results[0].text.contains("rejected"),
        "the command ran: {results:?}"
    );
    seen.replied(&["once"]).await;

    let id = str_of(&asked, "id");
    let call = asked["tool"]["callID"].as_str().unwrap();
    // The stream may still be delivering what the turn's answer came ahead of.
    let (t_asked, t_replied, t_done) = poll_until("opencode's events", SOON, || async {
        match (
            seen.when("permission.asked", "id", id),
            seen.when("permission.replied", "requestID", id),
            seen.tool(call, "completed"),
        ) {
            (Some(asked), Some(replied), Some(done)) => Ok((asked, replied, done)),
            _ => Err(format!("{:?}", seen.events.lock().unwrap())),
        }
    })
    .await;
    // Figures, not goals (timing is the bench's business): printed for the record.
    eprintln!(
        "opencode asked → card pending: {} ms; approve sent → opencode's permission.replied: \
         {} ms, → the command completed: {} ms",
        ms(t_asked, carded),
        ms(decided, t_replied),
        ms(decided, t_done)
    );

    let turn = oc.prompt("RUN[echo denied > no.txt]").await;
    let gate = oc.card_for("echo denied > no.txt").await;
    oc.desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "write it to the wiki instead"}),
        )
        .await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("no.txt"), None, "a denied call never runs");
    let results = oc.results();
    assert_eq!(
        results.last().unwrap().text,
        "The user rejected permission to use this specific tool call with the following \
         feedback: write it to the wiki instead",
        "the model is told the person's reason: {results:?}"
    );
    seen.replied(&["once", "reject"]).await;
}

#[tokio::test]
async fn allow_always_answers_the_same_call_again_and_nothing_broader() {
    let Some(oc) = Opencode::set_up().await else {
        return;
    };
    let (seen, _follow) = Seen::follow(&oc).await;
    // opencode's own `always` for this call would be `echo *`: every later `echo`, in every
    // session of the project. The bridge answers `once`; Countersign's rule is the grant.
    let chain = "echo one >> log.txt && echo two >> log.txt";
    let other = "echo three >> log.txt";
    let turn = oc
        .prompt(&format!("RUN[{chain}] RUN[{chain}] RUN[{other}]"))
        .await;
    let gate = oc.card_for(chain).await;
    let asked = oc.permission().await;
    assert_eq!(asked["always"], json!(["echo *"]), "{asked}");
    oc.desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    // The identical second call is answered by the rule; the broader third asks the person.
    let third = oc.card_for(other).await;
    assert_eq!(
        oc.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n"),
        "both identical calls ran"
    );
    oc.desk.decide(&third, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(
        oc.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\nthree\n")
    );
    let events = oc.desk.session_events(&gate).await;
    let answers: Vec<&str> = of_type(&events, "approval_resolved")
        .iter()
        .map(|e| e["answered_by"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(answers, ["user", "rule", "user"], "{events:?}");
    seen.replied(&["once", "once", "once"]).await;
    assert_eq!(oc.desk.pending_count().await, 0);
}

#[tokio::test]
async fn a_crash_of_countersign_while_opencode_waits_leaves_one_card_answered_once() {
    let Some(mut oc) = Opencode::set_up().await else {
        return;
    };
    let (seen, _follow) = Seen::follow(&oc).await;
    let turn = oc.prompt("RUN[echo survived > out.txt]").await;
    let gate = oc.card_for("echo survived > out.txt").await;
    oc.desk.crash().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    oc.desk.restart().await;
    let again = oc.card_for("echo survived > out.txt").await;
    assert_eq!(again["approval_id"], gate["approval_id"], "the same card");
    oc.desk.decide(&again, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("out.txt").as_deref(), Some("survived\n"));
    let events = oc.desk.session_events(&gate).await;
    assert_eq!(of_type(&events, "approval_request").len(), 1);
    assert_eq!(of_type(&events, "approval_resolved").len(), 1);
    seen.replied(&["once"]).await;
}

#[tokio::test]
async fn a_permission_answered_in_opencode_first_closes_its_card() {
    let Some(oc) = Opencode::set_up().await else {
        return;
    };
    let turn = oc.prompt("RUN[touch answered-there.txt]").await;
    let gate = oc.card_for("touch answered-there.txt").await;
    let asked = oc.permission().await;
    // The person answers in opencode instead, as its TUI does.
    let id = str_of(&asked, "id");
    let replied = oc
        .post(&format!("/permission/{id}/reply"), json!({"reply": "once"}))
        .await
        .unwrap();
    assert_eq!(replied, json!(true));
    oc.cancelled(&gate, "answered_elsewhere").await;
    // A late answer here reaches no one, and is refused rather than recorded.
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    oc.desk
        .admin()
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "deny", "reason": "too late"}),
        )
        .await
        .expect(410);
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("answered-there.txt").as_deref(), Some(""));
    assert!(
        !oc.bridge_log().contains("replied"),
        "the bridge never answered it: {}",
        oc.bridge_log()
    );
}

#[tokio::test]
async fn a_restarted_bridge_finds_its_card_and_answers_once() {
    let Some(mut oc) = Opencode::set_up().await else {
        return;
    };
    let (seen, _follow) = Seen::follow(&oc).await;
    let turn = oc.prompt("RUN[echo bridged > out.txt]").await;
    let gate = oc.card_for("echo bridged > out.txt").await;
    oc.kill_bridge().await;
    oc.start_bridge();
    // The new bridge lists opencode's pending permission and finds the card by its key.
    poll_until("the new bridge to follow opencode", SOON, || async {
        let log = oc.bridge_log();
        if log.matches("following opencode's events").count() >= 2 {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    let again = oc.card_for("echo bridged > out.txt").await;
    assert_eq!(again["approval_id"], gate["approval_id"], "the same card");
    oc.desk.decide(&again, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("out.txt").as_deref(), Some("bridged\n"));
    let events = oc.desk.session_events(&gate).await;
    assert_eq!(of_type(&events, "approval_request").len(), 1);
    assert_eq!(of_type(&events, "approval_resolved").len(), 1);
    seen.replied(&["once"]).await;
}

#[tokio::test]
async fn a_restarted_opencode_closes_the_card_it_forgot_and_its_next_ask_is_seen() {
    let Some(mut oc) = Opencode::set_up().await else {
        return;
    };
    let turn = oc.prompt("RUN[touch never.txt]").await;
    let gate = oc.card_for("touch never.txt").await;
    oc.kill_opencode().await;
    assert!(
        turn.answer.await.unwrap().is_err(),
        "the prompt died with opencode"
    );
    let restarted = Instant::now();
    oc.start_opencode().await;
    let answering = Instant::now();
    // opencode keeps permissions in memory: the restarted one has none pending, and the
    // bridge, back on its stream, closes the card nobody can answer any more. (A stream the
    // bridge opened in the half second before the new opencode was ready never gets its
    // headers: the bridge gives it up after 10 s, so this can take that much longer.)
    assert_eq!(oc.permissions().await, Vec::<Value>::new());
    oc.cancelled(&gate, "answered_elsewhere").await;
    let closed = Instant::now();
    let turn = oc.prompt("RUN[echo back > back.txt]").await;
    let gate = oc.card_for("echo back > back.txt").await;
    eprintln!(
        "opencode restarted: answering after {} ms, its forgotten card closed {} ms later, \
         the next ask a card {} ms after that",
        ms(restarted, answering),
        ms(answering, closed),
        ms(closed, Instant::now())
    );
    oc.desk.decide(&gate, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("back.txt").as_deref(), Some("back\n"));
    assert_eq!(oc.desk.file("never.txt"), None);
    oc.assert_alive();
}

#[tokio::test]
async fn with_countersign_down_opencode_keeps_asking_in_its_own_prompt() {
    let Some(mut oc) = Opencode::set_up().await else {
        return;
    };
    oc.desk.crash().await;
    let turn = oc.prompt("RUN[echo unasked > out.txt]").await;
    let asked = oc.permission().await;
    let id = str_of(&asked, "id").to_owned();
    poll_until("the bridge to try Countersign", SOON, || async {
        let log = oc.bridge_log();
        if log.contains(&format!("permission {id}:")) && log.contains("retrying") {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    // Nothing crashed, nothing answered: the permission still waits in opencode.
    oc.assert_alive();
    assert_eq!(oc.permission().await["id"], id.as_str());
    assert_eq!(oc.desk.file("out.txt"), None);
    // The person answers in opencode's own prompt, and the turn goes on.
    oc.post(&format!("/permission/{id}/reply"), json!({"reply": "once"}))
        .await
        .unwrap();
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("out.txt").as_deref(), Some("unasked\n"));
    // The bridge stops trying to open a card for it (at its next failed attempt) …
    poll_until("the bridge to give the permission up", SOON, || async {
        let log = oc.bridge_log();
        if log.contains(&format!("permission {id}: ")) && log.contains("leaving it to opencode") {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    // … so Countersign, back, shows no card for a call settled while it was down.
    oc.desk.restart().await;
    let sessions = oc.desk.admin().get("/api/v1/sessions").await.expect(200);
    assert_eq!(sessions, json!([]), "no card was ever opened");
    oc.assert_alive();
}

#[tokio::test]
async fn a_password_protected_opencode_is_followed_with_its_password() {
    let Some(oc) = Opencode::set_up_with(Setup {
        password: Some("oc-scripted-password"),
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let anonymous = oc
        .http
        .get(format!("{}/permission", oc.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401, "opencode wants its password");
    let turn = oc.prompt("RUN[echo guarded > out.txt]").await;
    let gate = oc.card_for("echo guarded > out.txt").await;
    oc.desk.decide(&gate, json!({"decision": "approve"})).await;
    oc.finish(turn).await;
    assert_eq!(oc.desk.file("out.txt").as_deref(), Some("guarded\n"));
}

#[tokio::test]
async fn the_tui_given_a_port_is_bridged_and_an_answer_in_it_closes_the_card() {
    let Some(oc) = Opencode::set_up_with(Setup {
        tui: true,
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let tui = oc.tui.as_ref().unwrap();
    tui.shows("Ask anything").await;
    // Answered here: the TUI's prompt goes away and the command runs.
    tui.type_text("RUN[echo from-the-card > card.txt]");
    Tui::settle().await;
    tui.press("Enter");
    let gate = oc.card_for("echo from-the-card > card.txt").await;
    tui.shows("Permission required").await;
    oc.desk.decide(&gate, json!({"decision": "approve"})).await;
    wait_file(&oc.desk.project.join("card.txt"), "from-the-card\n").await;
    tui.shows("DONE").await;

    // Answered in the TUI (its first choice, Allow once): the card closes, unanswered.
    tui.type_text("RUN[touch tui.txt]");
    Tui::settle().await;
    tui.press("Enter");
    let gate = oc.card_for("touch tui.txt").await;
    tui.shows("Permission required").await;
    Tui::settle().await;
    tui.press("Enter");
    oc.cancelled(&gate, "answered_elsewhere").await;
    wait_file(&oc.desk.project.join("tui.txt"), "").await;
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    oc.desk
        .admin()
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await
        .expect(410);
}
