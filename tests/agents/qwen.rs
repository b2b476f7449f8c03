//! Qwen Code, for real: `qwen -p … --approval-mode yolo` against the scripted Chat Completions
//! server, with Countersign's `PreToolUse` hook installed by `countersign hook install qwen`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::kit::{Desk, assert_ran, finish, installed};
use crate::openai_chat::OpenAiChat;

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
        self.desk.card_for(SHELL, command).await
    }
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
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
    assert_eq!(qwen.desk.file("out.txt").as_deref(), Some("approved\n"));

    let child = qwen.start("RUN[echo denied > no.txt]");
    let gate = qwen.card_for("echo denied > no.txt").await;
    qwen.desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "ask the release manager"}),
        )
        .await;
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
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
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
    assert_eq!(
        qwen.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n")
    );
    assert_eq!(qwen.desk.answered_by(&gate).await, ["user", "rule"]);
}

#[tokio::test]
async fn qwen_a_crash_of_countersign_and_countersign_down() {
    let Some(mut qwen) = Qwen::set_up().await else {
        return;
    };
    let child = qwen.start("RUN[echo survived > crash.txt]");
    let gate = qwen.card_for("echo survived > crash.txt").await;
    let again = qwen.desk.crash_and_restart_with(&gate).await;
    qwen.desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
    assert_eq!(qwen.desk.file("crash.txt").as_deref(), Some("survived\n"));
    assert_eq!(qwen.desk.cards_opened(&gate).await, 1);

    // Countersign down: the hook leaves the call to Qwen's own prompt ("ask"), which in `-p`
    // refuses it — never runs it unasked (Qwen runs a call whose hook says nothing).
    qwen.desk.crash().await;
    let child = qwen.start("RUN[echo unasked > down.txt]");
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
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
    assert_ran("Qwen Code", finish(child, RUN_LIMIT).await);
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
    tui.ask("YOLO", "RUN[echo escaped > esc.txt]").await;
    let gate = qwen.card_for("echo escaped > esc.txt").await;
    qwen.desk.esc_closes(&tui, &gate, "esc.txt").await;
}

#[tokio::test]
async fn without_countersign_on_path_qwen_blocks_the_call() {
    // Qwen runs a call whose hook command is missing, unless the hook says no on stderr with
    // exit 2; the installed command does.
    let Some(qwen) = Qwen::set_up().await else {
        return;
    };
    let node = crate::kit::which("node").unwrap();
    let mut cmd = qwen.desk.command(&qwen.bin);
    cmd.args([
        "-p",
        "RUN[echo unguarded > bare.txt]",
        "--approval-mode",
        "yolo",
    ])
    .env("OPENAI_API_KEY", "scripted-key")
    .env("OPENAI_BASE_URL", &qwen.model.base_url)
    .env("OPENAI_MODEL", "scripted")
    .env(
        "PATH",
        format!("{}:/usr/bin:/bin", node.parent().unwrap().display()),
    );
    let child = cmd.spawn().unwrap();
    let (_code, _stdout, _stderr) = finish(child, RUN_LIMIT).await;
    assert_eq!(qwen.desk.file("bare.txt"), None, "the call ran unguarded");
    let results = qwen.model.recorder.tool_results();
    assert!(
        results.last().is_some_and(|r| r.text.contains("blocked")),
        "{results:?}"
    );
}
