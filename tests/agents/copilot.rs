//! GitHub Copilot CLI, for real: `copilot -p …` offline against the scripted Chat Completions
//! server (Copilot's own "bring your own key" provider), with Countersign's `preToolUse` hook
//! installed by `countersign hook install copilot`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::kit::{Desk, assert_ran, finish, installed};
use crate::openai_chat::OpenAiChat;

const RUN_LIMIT: Duration = Duration::from_secs(180);

struct Copilot {
    desk: Desk,
    model: OpenAiChat,
    bin: std::path::PathBuf,
}

impl Copilot {
    async fn set_up() -> Option<Copilot> {
        let agent = installed("copilot")?;
        let desk = Desk::new().await;
        let model = OpenAiChat::start_for("bash").await;
        desk.install_hook(&["copilot"]).await;
        assert!(desk.home.join(".copilot/hooks/countersign.json").exists());
        Some(Copilot {
            desk,
            model,
            bin: agent.bin,
        })
    }

    fn start(&self, prompt: &str) -> tokio::process::Child {
        let mut cmd = self.desk.command(&self.bin);
        // Copilot unpacks its runtime (~235 MB) into the cache on first run: one cache for
        // every test, beside the installed agent, not one per throwaway HOME.
        let cache = self.bin.ancestors().nth(3).unwrap().join("cache");
        cmd.args([
            "-p",
            prompt,
            "--disable-client-telemetry",
            "--no-auto-update",
        ])
        .env("XDG_CACHE_HOME", cache)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PROVIDER_BASE_URL", &self.model.base_url)
        .env("COPILOT_PROVIDER_API_KEY", "scripted-key")
        .env("COPILOT_MODEL", "gpt-4.1");
        cmd.spawn().expect("start copilot")
    }

    async fn card_for(&self, command: &str) -> Value {
        self.desk.card_for("bash", command).await
    }
}

#[tokio::test]
async fn copilot_approve_deny_edit_always() {
    let Some(copilot) = Copilot::set_up().await else {
        return;
    };
    let child = copilot.start("RUN[echo approved > out.txt]");
    let gate = copilot.card_for("echo approved > out.txt").await;
    assert_eq!(copilot.desk.file("out.txt"), None);
    copilot
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(copilot.desk.file("out.txt").as_deref(), Some("approved\n"));

    let child = copilot.start("RUN[echo denied > no.txt]");
    let gate = copilot.card_for("echo denied > no.txt").await;
    copilot
        .desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "use the staging box"}),
        )
        .await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(copilot.desk.file("no.txt"), None);
    let results = copilot.model.recorder.tool_results();
    assert!(
        results
            .last()
            .is_some_and(|r| r.text.contains("use the staging box")),
        "the model is told the reason: {results:?}"
    );

    let child = copilot.start("RUN[echo proposed > edit.txt]");
    let gate = copilot.card_for("echo proposed > edit.txt").await;
    let mut edited = gate["args"].clone();
    edited["command"] = json!("echo edited > edit.txt");
    copilot
        .desk
        .decide(&gate, json!({"decision": "edit", "edits": edited}))
        .await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(copilot.desk.file("edit.txt").as_deref(), Some("edited\n"));

    let chain = "echo one >> log.txt && echo two >> log.txt";
    let child = copilot.start(&format!("RUN[{chain}] RUN[{chain}]"));
    let gate = copilot.card_for(chain).await;
    copilot
        .desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(
        copilot.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n")
    );
    assert_eq!(copilot.desk.answered_by(&gate).await, ["user", "rule"]);
}

#[tokio::test]
async fn copilot_a_crash_of_countersign_and_countersign_down() {
    let Some(mut copilot) = Copilot::set_up().await else {
        return;
    };
    let child = copilot.start("RUN[echo survived > crash.txt]");
    let gate = copilot.card_for("echo survived > crash.txt").await;
    let again = copilot.desk.crash_and_restart_with(&gate).await;
    copilot
        .desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(
        copilot.desk.file("crash.txt").as_deref(),
        Some("survived\n")
    );
    assert_eq!(copilot.desk.cards_opened(&gate).await, 1);

    // Countersign down: Copilot would run an "ask" unasked under --allow-all-tools, which its
    // hook cannot see, so the hook denies, saying how to go on.
    copilot.desk.crash().await;
    let child = copilot.start("RUN[echo unasked > down.txt]");
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(copilot.desk.file("down.txt"), None);
    let results = copilot.model.recorder.tool_results();
    assert!(
        results
            .last()
            .is_some_and(|r| r.text.contains("start Countersign again")),
        "{results:?}"
    );
}

#[tokio::test]
async fn copilot_hook_latency_figures() {
    let Some(copilot) = Copilot::set_up().await else {
        return;
    };
    const N: usize = 6;
    let prompt: String = (0..N).map(|i| format!("RUN[touch f{i}] ")).collect();
    let child = copilot.start(&prompt);
    let latency = crate::kit::approve_each(&copilot.desk, &copilot.model.recorder, N).await;
    assert_ran("Copilot CLI", finish(child, RUN_LIMIT).await);
    eprintln!("{}", latency.report("Copilot CLI"));
}
