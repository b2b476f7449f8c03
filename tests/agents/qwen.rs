//! Qwen Code, for real: `qwen -p … --approval-mode yolo` against the scripted Chat Completions
//! server, with Countersign's `PreToolUse` hook installed by `countersign hook install qwen`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::kit::{Desk, finish, installed};
use crate::openai_chat::OpenAiChat;
use crate::support::{of_type, str_of};

const RUN_LIMIT: Duration = Duration::from_secs(120);
const SHELL: &str = "run_shell_command";

struct Qwen {
    desk: Desk,
    model: OpenAiChat,
    bin: std::path::PathBuf,
}

impl Qwen {
    async fn set_up() -> Option<Qwen> {
        let agent = installed("qwen")?;
        let desk = Desk::new().await;
        let model = OpenAiChat::start_for(SHELL).await;
        // Qwen's own settings for a run here: the OpenAI-compatible endpoint, no telemetry,
        // update checks, classifier or background model calls.
        let settings = json!({
            "security": {"auth": {"selectedType": "openai"}},
            "model": {"name": "scripted"},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false},
            "tools": {"approvalMode": "default"},
            "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
            "ui": {"enableFollowupSuggestions": false}
        });
        std::fs::create_dir_all(desk.home.join(".qwen")).unwrap();
        std::fs::write(desk.home.join(".qwen/settings.json"), settings.to_string()).unwrap();
        desk.install_hook(&["qwen"]).await;
        assert!(desk.project.join(".qwen/settings.json").exists());
        Some(Qwen {
            desk,
            model,
            bin: agent.bin,
        })
    }

    fn start(&self, prompt: &str) -> tokio::process::Child {
        let mut cmd = self.desk.command(&self.bin);
        cmd.args(["-p", prompt, "--approval-mode", "yolo"])
            .env("OPENAI_API_KEY", "scripted-key")
            .env("OPENAI_BASE_URL", &self.model.base_url)
            .env("OPENAI_MODEL", "scripted");
        cmd.spawn().expect("start qwen")
    }

    async fn card_for(&self, command: &str) -> Value {
        let gate = self.desk.pending_gate().await;
        assert_eq!(str_of(&gate, "tool"), SHELL, "{gate}");
        assert_eq!(gate["args"]["command"], command, "{gate}");
        gate
    }
}

fn assert_ran(code: Option<i32>, stdout: &str, stderr: &str) {
    assert_eq!(
        code,
        Some(0),
        "qwen failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("DONE"),
        "the turn did not end: {stdout}\n{stderr}"
    );
}

#[tokio::test]
async fn qwen_approve_deny_always() {
    let Some(qwen) = Qwen::set_up().await else {
        return;
    };
    let child = qwen.start("RUN[echo approved > out.txt]");
    let gate = qwen.card_for("echo approved > out.txt").await;
    assert_eq!(qwen.desk.file("out.txt"), None);
    // Qwen's PreToolUse cannot run edited input: the card offers no Edit.
    assert!(
        !gate["allowed_decisions"]
            .as_array()
            .unwrap()
            .contains(&json!("edit")),
        "{gate}"
    );
    qwen.desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    assert_eq!(qwen.desk.file("out.txt").as_deref(), Some("approved\n"));

    let child = qwen.start("RUN[echo denied > no.txt]");
    let gate = qwen.card_for("echo denied > no.txt").await;
    qwen.desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "ask the release manager"}),
        )
        .await;
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    assert_eq!(qwen.desk.file("no.txt"), None);
    let results = qwen.model.recorder.tool_results();
    assert!(
        results
            .last()
            .is_some_and(|r| r.text.contains("ask the release manager")),
        "the model is told the reason: {results:?}"
    );

    let chain = "echo one >> log.txt && echo two >> log.txt";
    let child = qwen.start(&format!("RUN[{chain}] RUN[{chain}]"));
    let gate = qwen.card_for(chain).await;
    qwen.desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    assert_eq!(
        qwen.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n")
    );
    let events = qwen.desk.session_events(&gate).await;
    let answers: Vec<&str> = of_type(&events, "approval_resolved")
        .iter()
        .map(|e| e["answered_by"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(answers, ["user", "rule"], "{events:?}");
}

#[tokio::test]
async fn qwen_a_crash_of_countersign_and_countersign_down() {
    let Some(mut qwen) = Qwen::set_up().await else {
        return;
    };
    let child = qwen.start("RUN[echo survived > crash.txt]");
    let gate = qwen.card_for("echo survived > crash.txt").await;
    qwen.desk.crash().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    qwen.desk.restart().await;
    let again = qwen.card_for("echo survived > crash.txt").await;
    assert_eq!(again["approval_id"], gate["approval_id"]);
    qwen.desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    assert_eq!(qwen.desk.file("crash.txt").as_deref(), Some("survived\n"));
    let events = qwen.desk.session_events(&gate).await;
    assert_eq!(of_type(&events, "approval_request").len(), 1);

    // Countersign down: the hook leaves the call to Qwen's own prompt ("ask"), which in `-p`
    // refuses it — never runs it unasked (Qwen runs a call whose hook says nothing).
    qwen.desk.crash().await;
    let child = qwen.start("RUN[echo unasked > down.txt]");
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    assert_eq!(qwen.desk.file("down.txt"), None);
}

#[tokio::test]
async fn qwen_hook_latency_figures() {
    let Some(qwen) = Qwen::set_up().await else {
        return;
    };
    const N: usize = 6;
    let prompt: String = (0..N).map(|i| format!("RUN[touch f{i}] ")).collect();
    let child = qwen.start(&prompt);
    let latency = crate::kit::approve_each(&qwen.desk, &qwen.model.recorder, N).await;
    let (code, stdout, stderr) = finish(child, RUN_LIMIT).await;
    assert_ran(code, &stdout, &stderr);
    eprintln!("{}", latency.report("Qwen Code"));
}

#[tokio::test]
async fn esc_in_qwen_while_its_card_waits_closes_the_card() {
    // Qwen cancels the call on Esc but leaves its hook running; it writes the call's cancelled
    // result to its transcript, and the hook closes its card on seeing it.
    let Some(qwen) = Qwen::set_up().await else {
        return;
    };
    let mut env = qwen.desk.env();
    for (k, v) in [
        ("OPENAI_API_KEY", "scripted-key"),
        ("OPENAI_BASE_URL", qwen.model.base_url.as_str()),
        ("OPENAI_MODEL", "scripted"),
    ] {
        env.push((k.into(), v.into()));
    }
    let Some(tui) = crate::tui::Tui::start(
        &qwen.bin,
        &["--approval-mode", "yolo"],
        &qwen.desk.project,
        &env,
    ) else {
        return;
    };
    tui.shows("YOLO").await;
    tui.type_text("RUN[echo escaped > esc.txt]");
    crate::tui::Tui::settle().await;
    tui.press("Enter");
    let gate = qwen.card_for("echo escaped > esc.txt").await;
    crate::tui::Tui::settle().await;
    tui.press("Escape");
    let aid = str_of(&gate, "approval_id").to_owned();
    let closed = crate::support::poll_until("the card to close", crate::support::SOON, || async {
        let state = qwen
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
    assert_eq!(qwen.desk.file("esc.txt"), None);
}
