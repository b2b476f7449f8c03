//! What every real-agent test needs: the installed agent (pinned in `scripts/agents.txt`,
//! installed by `scripts/test` under `target/agents/`), a real Countersign on loopback with a
//! `gates` token as the README tells a user to make, a throwaway `HOME` and project folder, and
//! the agent run as a child process with nothing of the caller's environment.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Api, Lab, Node, SOON, poll_until, str_of};

/// One installed agent, at the version `scripts/agents.txt` pins.
pub struct Installed {
    pub bin: PathBuf,
}

/// `(package, binary)` of an agent named in `scripts/agents.txt`.
fn pinned(name: &str) -> (String, String) {
    let list = include_str!("../../scripts/agents.txt");
    for line in list.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() == Some(&name) {
            return (fields[1].to_owned(), fields[2].to_owned());
        }
    }
    panic!("scripts/agents.txt names no agent `{name}`");
}

/// The agent `name`, installed at its pinned version; `None` (and a note) when it is not
/// installed and the run does not require it. `scripts/test` sets
/// `COUNTERSIGN_REAL_AGENTS=required`, so in CI a missing agent fails the test.
pub fn installed(name: &str) -> Option<Installed> {
    let (package, bin_name) = pinned(name);
    let (package_name, version) = package
        .rsplit_once('@')
        .filter(|(p, _)| !p.is_empty())
        .unwrap_or_else(|| panic!("`{package}` has no @version"));
    let dir = std::env::var_os("COUNTERSIGN_AGENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents"))
        .join(name);
    let bin = dir.join("node_modules/.bin").join(&bin_name);
    let manifest = dir
        .join("node_modules")
        .join(package_name)
        .join("package.json");
    let found = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned));
    match found {
        Some(found) if found == version && bin.exists() => Some(Installed { bin }),
        other => {
            let why = match other {
                Some(found) => format!("{package_name} {found} is installed, not {version}"),
                None => format!("{package} is not installed under {}", dir.display()),
            };
            if std::env::var("COUNTERSIGN_REAL_AGENTS").as_deref() == Ok("required") {
                panic!("{why} (scripts/test installs it: `source scripts/lib.sh; ensure_agents`)");
            }
            eprintln!("skipped: {why}; `source scripts/lib.sh; ensure_agents` installs it");
            None
        }
    }
}

/// A Countersign with a `gates` token, and the agent's throwaway home and project.
pub struct Desk {
    pub lab: Lab,
    pub node: Option<Node>,
    pub base: String,
    pub token: String,
    pub home: PathBuf,
    pub project: PathBuf,
    _dir: tempfile::TempDir,
}

impl Desk {
    pub async fn new() -> Desk {
        let mut lab = Lab::new(None);
        let node = lab.start().await;
        let created = node
            .post(
                "/api/v1/tokens",
                json!({"name": "agent-hook", "scope": "gates"}),
            )
            .await
            .expect(201);
        let token = str_of(&created, "token").to_owned();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Desk {
            lab,
            base: node.base.clone(),
            node: Some(node),
            token,
            home,
            project,
            _dir: dir,
        }
    }

    /// The admin's API (the person answering).
    pub fn admin(&self) -> &Api {
        self.node.as_ref().expect("Countersign is running")
    }

    /// `kill -9` Countersign.
    pub async fn crash(&mut self) {
        if let Some(node) = self.node.take() {
            node.kill9().await;
        }
    }

    /// Starts Countersign again on the same address (the agent's hook kept the URL).
    pub async fn restart(&mut self) {
        let addr = self.base.trim_start_matches("http://").to_owned();
        let node = self.lab.start_at(&addr).await;
        assert_eq!(node.base, self.base);
        self.node = Some(node);
    }

    /// A command with nothing of the caller's environment: the throwaway `HOME`, the project
    /// as its folder, `countersign` and `node` on `PATH`, and Countersign's URL and token as
    /// the README says to export them.
    pub fn command(&self, program: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.env_clear()
            .envs(self.env())
            .current_dir(&self.project)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// The whole environment an agent gets (see [`Desk::command`]).
    pub fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        let countersign_dir = Path::new(env!("CARGO_BIN_EXE_countersign"))
            .parent()
            .unwrap()
            .to_owned();
        let node_dir = which("node")
            .and_then(|p| p.parent().map(Path::to_owned))
            .unwrap_or_else(|| PathBuf::from("/usr/bin"));
        let path =
            std::env::join_paths([countersign_dir, node_dir, "/usr/bin".into(), "/bin".into()])
                .unwrap();
        vec![
            ("HOME".into(), self.home.clone().into()),
            ("PATH".into(), path),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("TMPDIR".into(), std::env::temp_dir().into()),
            ("COUNTERSIGN_URL".into(), self.base.clone().into()),
            ("COUNTERSIGN_TOKEN".into(), self.token.clone().into()),
        ]
    }

    /// `countersign hook install <args…>`, run in the project as the README says.
    pub async fn install_hook(&self, args: &[&str]) -> String {
        let mut cmd = self.command(Path::new(env!("CARGO_BIN_EXE_countersign")));
        cmd.arg("hook").arg("install").args(args);
        let out = cmd.output().await.unwrap();
        assert!(
            out.status.success(),
            "hook install {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(name)).ok()
    }

    /// Waits until exactly one gate is pending, and returns it.
    pub async fn pending_gate(&self) -> Value {
        poll_until("one pending gate", SOON, || async {
            let list = self
                .admin()
                .get("/api/v1/approvals?status=pending")
                .await
                .expect(200);
            match list.as_array().map(Vec::as_slice) {
                Some([one]) => Ok(one.clone()),
                _ => Err(list.to_string()),
            }
        })
        .await
    }

    /// How many gates are pending now.
    pub async fn pending_count(&self) -> usize {
        let list = self
            .admin()
            .get("/api/v1/approvals?status=pending")
            .await
            .expect(200);
        list.as_array().map_or(0, Vec::len)
    }

    /// Answers a gate as the person would.
    pub async fn decide(&self, gate: &Value, body: Value) {
        let (sid, aid) = (str_of(gate, "session_id"), str_of(gate, "approval_id"));
        self.admin()
            .post(&format!("/api/v1/sessions/{sid}/approvals/{aid}"), body)
            .await
            .expect(200);
    }

    /// The events of a gate's session.
    pub async fn session_events(&self, gate: &Value) -> Vec<Value> {
        let snapshot = self
            .admin()
            .get(&format!("/api/v1/sessions/{}", str_of(gate, "session_id")))
            .await
            .expect(200);
        crate::support::events(&snapshot)
    }
}

/// A program on the test's own `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs a child to its end (at most `limit`), returning (exit code, stdout, stderr).
pub async fn finish(
    child: tokio::process::Child,
    limit: Duration,
) -> (Option<i32>, String, String) {
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("the agent did not finish within {limit:?}"))
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What the hook adds, per call: from the model's tool call leaving the scripted server to its
/// card being listed, and from the person's answer to the tool's result reaching the model.
pub struct Latency {
    pub to_card: Vec<Duration>,
    pub to_proceed: Vec<Duration>,
}

impl Latency {
    /// One line of figures (median and worst), as BENCHMARKS.md quotes them.
    pub fn report(&self, agent: &str) -> String {
        fn stats(values: &[Duration]) -> String {
            let mut ms: Vec<f64> = values.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
            ms.sort_by(f64::total_cmp);
            let median = ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN);
            let worst = ms.last().copied().unwrap_or(f64::NAN);
            format!("p50 {median:.0} ms, max {worst:.0} ms")
        }
        format!(
            "figure: {agent}: agent asks → card listed {}; answer → agent proceeds {} (n = {})",
            stats(&self.to_card),
            stats(&self.to_proceed),
            self.to_card.len()
        )
    }
}

/// Approves `n` cards one after another as they come, timing each (see [`Latency`]).
pub async fn approve_each(desk: &Desk, recorder: &crate::script::Recorder, n: usize) -> Latency {
    let mut latency = Latency {
        to_card: Vec::new(),
        to_proceed: Vec::new(),
    };
    for i in 0..n {
        let deadline = std::time::Instant::now() + SOON;
        let gate = loop {
            let list = desk
                .admin()
                .get("/api/v1/approvals?status=pending")
                .await
                .expect(200);
            if let Some([one]) = list.as_array().map(Vec::as_slice) {
                break one.clone();
            }
            assert!(std::time::Instant::now() < deadline, "no card for call {i}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let seen = std::time::Instant::now();
        let (asked, _) = recorder.times();
        latency
            .to_card
            .push(seen.saturating_duration_since(asked.expect("the model asked")));
        let answered = std::time::Instant::now();
        desk.decide(&gate, json!({"decision": "approve"})).await;
        let proceeded = poll_until("the tool result to reach the model", SOON, || async {
            match recorder.times() {
                (_, Some(at)) if recorder.tool_results().len() > i && at >= answered => Ok(at),
                _ => Err(format!("{} results", recorder.tool_results().len())),
            }
        })
        .await;
        latency.to_proceed.push(proceeded - answered);
    }
    latency
}

impl Desk {
    /// Waits for the one pending card, and checks it is the agent's `tool` running `command`.
    pub async fn card_for(&self, tool: &str, command: &str) -> Value {
        let gate = self.pending_gate().await;
        assert_eq!(str_of(&gate, "tool"), tool, "{gate}");
        assert_eq!(gate["args"]["command"], command, "{gate}");
        gate
    }

    /// `kill -9` Countersign while the agent waits on `gate`, start it again, and check the
    /// same card is back (durable, not opened twice); returns it.
    pub async fn crash_and_restart_with(&mut self, gate: &Value) -> Value {
        self.crash().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.restart().await;
        let again = self.pending_gate().await;
        assert_eq!(again["approval_id"], gate["approval_id"], "the same card");
        again
    }

    /// Waits until `gate` is closed as its agent dropped the call (`agent_gone`); a decision
    /// sent then is refused, not recorded.
    pub async fn closed_as_gone(&self, gate: &Value, screen: impl Fn() -> String) {
        let aid = str_of(gate, "approval_id").to_owned();
        let closed = poll_until("the card to close", SOON, || async {
            let state = self
                .admin()
                .get(&format!("/api/v1/gates/{aid}"))
                .await
                .expect(200);
            if state["status"] == "cancelled" {
                Ok(state)
            } else {
                Err(format!("{state}\n{}", screen()))
            }
        })
        .await;
        assert_eq!(closed["reason"], "agent_gone", "{closed}");
        let sid = str_of(gate, "session_id");
        self.admin()
            .post(
                &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
                json!({"decision": "approve"}),
            )
            .await
            .expect(410);
    }

    /// The person presses Esc in the agent's terminal while `gate` waits: the card must close
    /// (`agent_gone`) and `file`, which the call would have written, must not exist.
    pub async fn esc_closes(&self, tui: &crate::tui::Tui, gate: &Value, file: &str) {
        crate::tui::Tui::settle().await;
        tui.press("Escape");
        self.closed_as_gone(gate, || tui.screen()).await;
        assert_eq!(self.file(file), None, "the dropped call never ran");
    }

    /// Who answered each card of `gate`'s session, in order (`user`, `rule`, …).
    pub async fn answered_by(&self, gate: &Value) -> Vec<String> {
        crate::support::of_type(&self.session_events(gate).await, "approval_resolved")
            .iter()
            .map(|e| e["answered_by"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    /// How many cards `gate`'s session opened.
    pub async fn cards_opened(&self, gate: &Value) -> usize {
        crate::support::of_type(&self.session_events(gate).await, "approval_request").len()
    }
}

/// The agent exited 0 and its turn reached the script's end (`DONE`).
#[track_caller]
pub fn assert_ran(agent: &str, (code, stdout, stderr): (Option<i32>, String, String)) {
    assert_eq!(
        code,
        Some(0),
        "{agent} failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("DONE"),
        "the turn did not end: {stdout}\n{stderr}"
    );
}
