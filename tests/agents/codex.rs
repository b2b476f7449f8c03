//! Codex, for real: its interactive terminal (driven with tmux) against the scripted OpenAI
//! Responses server, with Countersign's hook installed by `countersign hook install codex` and
//! trusted in Codex's "Hooks need review" dialog, as the README says. `codex exec` is not the
//! way: it forces the approval policy `never`, so nothing there asks anyone (the last test).
//!
//! Codex asks a person (and so its `PermissionRequest` hook) only about a call it would not run
//! on its own — one the model asks to run outside Codex's sandbox — so every scripted call asks
//! for that (see [`crate::openai_responses`]). The TUI does not run the hook itself: its
//! app-server daemon does (started by the first TUI, outliving it), with the daemon's
//! environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::kit::{Desk, finish, installed};
use crate::openai_responses::{MODEL, OpenAiResponses};
use crate::support::{SOON, of_type, poll_until, str_of};
use crate::tui::Tui;

/// The scripted server takes any key; Codex reads it from the provider's `env_key`.
const API_KEY_ENV: &str = "SCRIPTED_API_KEY";

struct Codex {
    desk: Desk,
    model: OpenAiResponses,
    bin: PathBuf,
}

impl Codex {
    /// Countersign, the scripted model, Codex's configuration and the hook installed; `None`
    /// when Codex is not installed (and the run does not require it).
    async fn set_up() -> Option<Codex> {
        let agent = installed("codex")?;
        let desk = Desk::new().await;
        let model = OpenAiResponses::start().await;
        let codex_home = desk.home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        std::fs::write(
            codex_home.join("config.toml"),
            config(&model.base_url, &desk.project),
        )
        .unwrap();
        let printed = desk.install_hook(&["codex"]).await;
        assert!(
            codex_home.join("hooks.json").exists(),
            "install wrote nothing: {printed}"
        );
        Some(Codex {
            desk,
            model,
            bin: agent.bin,
        })
    }

    /// The environment a person's shell gives Codex: the README's `COUNTERSIGN_URL` and
    /// `COUNTERSIGN_TOKEN`, and the provider's key.
    fn env(&self) -> Vec<(String, OsString)> {
        let mut env = self.desk.env();
        env.push((API_KEY_ENV.into(), "sk-scripted".into()));
        env
    }

    /// The same without Countersign's variables (a shell that never exported them).
    fn env_without_countersign(&self) -> Vec<(String, OsString)> {
        self.env()
            .into_iter()
            .filter(|(k, _)| !k.starts_with("COUNTERSIGN_"))
            .collect()
    }

    /// Codex's terminal, past the one question it asks here at start: the new hook, which it
    /// runs only once trusted ("Trust all and continue", as a person would answer).
    async fn start_tui(&self) -> Option<Tui> {
        let tui = Tui::start(&self.bin, &[], &self.desk.project, &self.env())?;
        tui.shows("Hooks need review").await;
        let ready = format!("{MODEL} default");
        poll_until("Codex to trust the hook and be ready", SOON, || async {
            Tui::settle().await;
            let screen = tui.screen();
            if screen.contains("Trust all and continue") {
                tui.press("2");
                Tui::settle().await;
                if tui.screen().contains("Trust all and continue") {
                    tui.press("Enter");
                }
            } else if screen.contains("t trust all") {
                // The review list (`/hooks`): trust all there, then close it.
                tui.press("t");
                Tui::settle().await;
                tui.press("Escape");
            } else if screen.contains(&ready) {
                return Ok(());
            }
            Err(screen)
        })
        .await;
        Some(tui)
    }

    /// Types the person's words and sends them.
    async fn ask(tui: &Tui, prompt: &str) {
        tui.type_text(prompt);
        Tui::settle().await;
        tui.press("Enter");
    }

    /// The one pending card, checked to be Codex's call of `Bash` with `command`.
    async fn card_for(&self, command: &str) -> Value {
        let gate = self.desk.pending_gate().await;
        assert_eq!(str_of(&gate, "tool"), "Bash", "{gate}");
        assert_eq!(gate["args"]["command"], command, "{gate}");
        gate
    }

    fn results(&self) -> Vec<crate::script::ToolResult> {
        self.model.recorder.tool_results()
    }

    /// `codex <args…>` run to its end with exactly `env`.
    async fn codex(&self, args: &[&str], env: &[(String, OsString)]) -> std::process::Output {
        tokio::process::Command::new(&self.bin)
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.desk.project)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("run codex")
    }

    /// The pid Codex's app-server daemon recorded, when one runs.
    fn daemon_pid(&self) -> Option<u32> {
        pid_in(&self.desk.home.join(".codex/app-server-daemon/daemon.pid"))
            .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
    }
}

impl Drop for Codex {
    /// The daemon and its updater outlive the terminal: stop them (only this test's, by the
    /// pids they recorded under this test's `HOME`). `daemon stop` asks the daemon to finish
    /// first, which a daemon that a terminal reconnected to can take a minute to do; after a
    /// few seconds it is killed.
    fn drop(&mut self) {
        let home = self.desk.home.join(".codex/app-server-daemon");
        let ours = |pid: u32| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(&*self.desk.home.to_string_lossy())
        };
        let daemon = self.daemon_pid().filter(|pid| ours(*pid));
        let stop = std::process::Command::new(&self.bin)
            .args(["app-server", "daemon", "stop"])
            .env_clear()
            .envs(self.env())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut stop) = stop {
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(stop.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if matches!(stop.try_wait(), Ok(None))
                && let Some(pid) = daemon
            {
                // SAFETY: a plain signal to a process this test started.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = stop.wait();
        }
        if let Some(pid) = pid_in(&home.join("daemon-updater.pid")).filter(|pid| ours(*pid)) {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
}

/// `{"pid": N, …}` in one of the daemon's pid files.
fn pid_in(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value["pid"].as_u64().map(|pid| pid as u32)
}

/// `~/.codex/config.toml`: the scripted provider, the project trusted (Codex asks about an
/// untrusted folder first), and nothing else on the network that can be turned off.
fn config(base_url: &str, project: &Path) -> String {
    format!(
        r#"model = "{MODEL}"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "Scripted"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{API_KEY_ENV}"

[analytics]
enabled = false

[features]
plugins = false
apps = false

[projects."{project}"]
trust_level = "trusted"
"#,
        project = project.display()
    )
}

/// Waits until the project holds `name` with exactly `content`.
async fn file_holds(codex: &Codex, name: &str, content: &str) {
    poll_until(&format!("{name} to hold {content:?}"), SOON, || async {
        match codex.desk.file(name) {
            Some(text) if text == content => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// Waits until Codex has sent back `count` tool results.
async fn results_reach(codex: &Codex, count: usize, tui: &Tui) -> Vec<crate::script::ToolResult> {
    poll_until(&format!("{count} tool results"), SOON, || async {
        let results = codex.results();
        if results.len() >= count {
            Ok(results)
        } else {
            Err(format!("{results:?}\n{}", tui.screen()))
        }
    })
    .await
}

fn ms(from: Instant, to: Instant) -> u128 {
    to.saturating_duration_since(from).as_millis()
}

#[tokio::test]
async fn approve_runs_the_call_and_deny_tells_codex_why() {
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    Codex::ask(&tui, "RUN[echo approved > out.txt]").await;
    let gate = codex.card_for("echo approved > out.txt").await;
    let card_seen = Instant::now();
    assert_eq!(gate["args"]["description"], "step 0", "{gate}");
    assert_eq!(
        codex.desk.file("out.txt"),
        None,
        "nothing runs before the answer"
    );
    codex
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    let answered = Instant::now();
    file_holds(&codex, "out.txt", "approved\n").await;
    let results = results_reach(&codex, 1, &tui).await;
    assert!(
        results[0].text.contains("exited with code 0"),
        "{results:?}"
    );
    let clock = &codex.model.clock;
    eprintln!(
        "latency: Codex asked → card visible {} ms; answer → Codex ran it and reported {} ms",
        ms(clock.asked(0).unwrap(), card_seen),
        ms(answered, clock.answered(0).unwrap()),
    );

    // Deny, with a reason: the command never runs, and the model reads the reason.
    Codex::ask(&tui, "RUN[echo denied > no.txt]").await;
    let gate = codex.card_for("echo denied > no.txt").await;
    tui.shows("Waiting for approval in Countersign").await;
    codex
        .desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "write it to the wiki instead"}),
        )
        .await;
    let results = results_reach(&codex, 2, &tui).await;
    assert!(
        results[1].text.contains("write it to the wiki instead"),
        "the model is told the person's reason: {results:?}"
    );
    tui.shows("DONE").await;
    tui.shows("Blocked by hook").await;
    assert_eq!(codex.desk.file("no.txt"), None, "a denied call never runs");
}

#[tokio::test]
async fn always_answers_the_next_identical_call_and_no_card_offers_an_edit() {
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    let chain = "echo one >> log.txt && echo two >> log.txt";
    Codex::ask(&tui, &format!("RUN[{chain}] RUN[{chain}]")).await;
    let gate = codex.card_for(chain).await;
    // Codex cannot run an edited input, so the card does not offer one.
    assert_eq!(
        gate["allowed_decisions"],
        json!(["approve", "deny", "allow_always"]),
        "{gate}"
    );
    codex
        .desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    results_reach(&codex, 2, &tui).await;
    file_holds(&codex, "log.txt", "one\ntwo\none\ntwo\n").await;
    tui.shows("DONE").await;
    // Codex asked again for the second call, and the rule made answered it at once.
    let events = codex.desk.session_events(&gate).await;
    let answers: Vec<&str> = of_type(&events, "approval_resolved")
        .iter()
        .map(|e| e["answered_by"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(answers, ["user", "rule"], "{events:?}");
    assert_eq!(codex.desk.pending_count().await, 0);
}

#[tokio::test]
async fn a_crash_of_countersign_while_codex_waits_leaves_one_card_answered_once() {
    let Some(mut codex) = Codex::set_up().await else {
        return;
    };
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    Codex::ask(&tui, "RUN[echo survived > out.txt]").await;
    let gate = codex.card_for("echo survived > out.txt").await;
    codex.desk.crash().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    codex.desk.restart().await;
    let again = codex.card_for("echo survived > out.txt").await;
    assert_eq!(again["approval_id"], gate["approval_id"], "the same card");
    codex
        .desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    file_holds(&codex, "out.txt", "survived\n").await;
    tui.shows("DONE").await;
    let events = codex.desk.session_events(&gate).await;
    assert_eq!(of_type(&events, "approval_request").len(), 1);
    assert_eq!(of_type(&events, "approval_resolved").len(), 1);
}

#[tokio::test]
async fn esc_in_codex_while_its_card_waits_closes_the_card() {
    // Codex shows no prompt of its own while its hook runs ("Waiting for approval in
    // Countersign"), so the call cannot be answered there first; Esc interrupts the turn, and
    // Codex kills the hook outright (it cannot close its card itself): the server sees the
    // hook's long-poll connection close and closes the card within 5 s.
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    Codex::ask(&tui, "RUN[touch tui.txt]").await;
    let gate = codex.card_for("touch tui.txt").await;
    tui.shows("Waiting for approval in Countersign").await;
    // The hook's long-poll has begun (the card shows just before it).
    tokio::time::sleep(Duration::from_millis(500)).await;
    tui.press("Escape");
    let pressed = Instant::now();
    let aid = str_of(&gate, "approval_id").to_owned();
    let closed = poll_until("the card to close", SOON, || async {
        let state = codex
            .desk
            .admin()
            .get(&format!("/api/v1/gates/{aid}"))
            .await
            .expect(200);
        if state["status"] == "cancelled" {
            Ok(state)
        } else {
            Err(format!("{state}\n{}", tui.screen()))
        }
    })
    .await;
    assert_eq!(closed["reason"], "agent_gone", "{closed}");
    let took = pressed.elapsed();
    eprintln!("Esc → card closed: {} ms", took.as_millis());
    assert!(took <= Duration::from_secs(5), "closed {took:?} after Esc");
    // An answer now reaches no one, and is refused rather than recorded.
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    codex
        .desk
        .admin()
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await
        .expect(410);
    assert_eq!(codex.desk.file("tui.txt"), None);
}

#[tokio::test]
async fn with_countersign_down_codex_asks_in_its_own_prompt() {
    let Some(mut codex) = Codex::set_up().await else {
        return;
    };
    codex.desk.crash().await;
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    let started = Instant::now();
    Codex::ask(&tui, "RUN[echo unasked > out.txt]").await;
    // The hook gives up on an absent Countersign (no decision) and says why; Codex asks
    // the person itself, and nothing crashes.
    tui.shows("Would you like to run the following command?")
        .await;
    tui.shows("Countersign gave no decision").await;
    assert!(started.elapsed() < SOON, "the hook gave up in time");
    assert_eq!(codex.desk.file("out.txt"), None);
    tui.press("y");
    file_holds(&codex, "out.txt", "unasked\n").await;
    tui.shows("DONE").await;
}

#[tokio::test]
async fn a_daemon_started_without_the_token_is_named_and_a_restart_fixes_it() {
    // Codex runs hooks in its app-server daemon, with the environment of the Codex that started
    // it. A daemon started from a shell without Countersign's variables asks Countersign
    // nothing, whatever the environment of the Codex started later.
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let out = codex
        .codex(
            &["app-server", "daemon", "start"],
            &codex.env_without_countersign(),
        )
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = codex.daemon_pid().expect("the daemon runs");

    // `hook install codex`, run where the variables are exported, sees it.
    let mut install = codex
        .desk
        .command(Path::new(env!("CARGO_BIN_EXE_countersign")));
    install.args(["hook", "install", "codex"]);
    let out = install.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("pid {pid}")) && said.contains("without COUNTERSIGN_TOKEN"),
        "{said}"
    );
    assert!(said.contains("codex app-server daemon restart"), "{said}");

    // The hook, run by that daemon, says so in Codex, and Codex asks in its own prompt.
    let Some(tui) = codex.start_tui().await else {
        return;
    };
    Codex::ask(&tui, "RUN[touch first.txt]").await;
    tui.shows("Would you like to run the following command?")
        .await;
    tui.shows("Countersign was not asked").await;
    tui.shows("codex app-server daemon restart").await;
    assert_eq!(codex.desk.pending_count().await, 0, "no card");
    tui.press("y");
    results_reach(&codex, 1, &tui).await;
    assert!(
        codex.desk.file("first.txt").is_some(),
        "Codex's own yes ran it"
    );

    // The restart the note names, from the person's shell: the next call gets a card.
    let out = codex
        .codex(&["app-server", "daemon", "restart"], &codex.env())
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(codex.daemon_pid(), Some(pid), "a new daemon");
    // The terminal notices its server went away and reconnects to the new one.
    let t0 = Instant::now();
    let mut seen = false;
    poll_until("Codex to reconnect to its new daemon", SOON, async || {
        let screen = tui.screen();
        seen |= screen.contains("Reconnecting to server");
        let settled = seen || t0.elapsed() > Duration::from_secs(5);
        if settled && !screen.contains("Reconnecting") && screen.contains("? for shortcuts") {
            Ok(())
        } else {
            Err(screen)
        }
    })
    .await;
    Codex::ask(&tui, "RUN[touch second.txt]").await;
    let gate = codex.card_for("touch second.txt").await;
    codex
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    file_holds(&codex, "second.txt", "").await;
    tui.shows("DONE").await;
}

#[tokio::test]
async fn an_ephemeral_codex_sends_no_transcript_and_still_gets_a_card() {
    // `--ephemeral` keeps no session file, so Codex's hook input carries
    // `transcript_path: null` (its schema allows it); `--approve-for-me` routes approvals to
    // its reviewer, whose path asks the PermissionRequest hook first. A second hook beside
    // Countersign's records what Codex sent.
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let sent = codex.desk.project.join("permission-request.json");
    let hooks = codex.desk.home.join(".codex/hooks.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&hooks).unwrap()).unwrap();
    config["hooks"]["PermissionRequest"]
        .as_array_mut()
        .unwrap()
        .insert(
            0,
            json!({"matcher": "*", "hooks": [{"type": "command",
                "command": format!("cat > '{}'", sent.display())}]}),
        );
    std::fs::write(&hooks, config.to_string()).unwrap();
    let mut cmd = codex.desk.command(&codex.bin);
    cmd.envs(codex.env()).args([
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
        "--ephemeral",
        "--approve-for-me",
        "RUN[touch ephemeral.txt]",
    ]);
    let child = cmd.spawn().unwrap();
    let gate = codex.card_for("touch ephemeral.txt").await;
    // Codex runs both hooks at once: the record may land a moment after the card.
    let input: Value = poll_until("Codex's hook input on record", SOON, || async {
        let text = std::fs::read_to_string(&sent).map_err(|e| e.to_string())?;
        serde_json::from_str::<Value>(&text).map_err(|e| e.to_string())
    })
    .await;
    assert!(input["transcript_path"].is_null(), "{input}");
    assert_eq!(input["tool_name"], "Bash", "{input}");
    codex
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    let (code, stdout, stderr) = finish(child, Duration::from_secs(120)).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    file_holds(&codex, "ephemeral.txt", "").await;
}

#[tokio::test]
async fn codex_exec_asks_nobody_so_the_terminal_is_the_way() {
    // `codex exec` forces the approval policy `never`: the call the model asks to run outside
    // the sandbox is refused on the spot, and no hook is asked (hook trust bypassed here, so
    // only the policy can be why).
    let Some(codex) = Codex::set_up().await else {
        return;
    };
    let mut cmd = codex.desk.command(&codex.bin);
    cmd.envs(codex.env()).args([
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
        "RUN[touch exec.txt]",
    ]);
    let (code, stdout, stderr) = finish(cmd.spawn().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("approval: never"), "{stderr}");
    let results = codex.results();
    assert!(
        results.len() == 1 && results[0].text.contains("approval policy is Never"),
        "{results:?}"
    );
    let gates = codex
        .desk
        .admin()
        .get("/api/v1/approvals")
        .await
        .expect(200);
    assert_eq!(gates, json!([]), "no card was ever opened");
    assert_eq!(codex.desk.file("exec.txt"), None);
}
