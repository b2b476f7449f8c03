//! Gemini CLI, for real: `gemini -p … --approval-mode yolo` against the scripted Gemini API, with
//! Countersign's `BeforeTool` hook installed by `countersign hook install gemini`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::gemini_api::GeminiApi;
use crate::kit::{Desk, assert_ran, finish, installed};

const RUN_LIMIT: Duration = Duration::from_secs(120);

struct Gemini {
    desk: Desk,
    model: GeminiApi,
    bin: std::path::PathBuf,
}

impl Gemini {
    async fn set_up() -> Option<Gemini> {
        let agent = installed("gemini")?;
        let desk = Desk::new().await;
        let model = GeminiApi::start().await;
        // Gemini's own settings for a run here: the key's auth, no telemetry or update
        // checks, and folder trust off (Gemini runs no hooks in an untrusted folder).
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "model": {"name": "gemini-2.5-flash"}
        });
        std::fs::create_dir_all(desk.home.join(".gemini")).unwrap();
        std::fs::write(
            desk.home.join(".gemini/settings.json"),
            settings.to_string(),
        )
        .unwrap();
        desk.install_hook(&["gemini"]).await;
        assert!(desk.project.join(".gemini/settings.json").exists());
        Some(Gemini {
            desk,
            model,
            bin: agent.bin,
        })
    }

    fn start(&self, prompt: &str) -> tokio::process::Child {
        let mut cmd = self.desk.command(&self.bin);
        cmd.args(["-p", prompt, "--approval-mode", "yolo"])
            .env("GEMINI_API_KEY", "scripted-key")
            .env("GOOGLE_GEMINI_BASE_URL", &self.model.base_url);
        cmd.spawn().expect("start gemini")
    }

    /// Gemini's terminal, in yolo mode (Countersign the one prompt).
    fn start_tui(&self) -> Option<crate::tui::Tui> {
        let mut env = self.desk.env();
        env.push(("GEMINI_API_KEY".into(), "scripted-key".into()));
        env.push((
            "GOOGLE_GEMINI_BASE_URL".into(),
            self.model.base_url.clone().into(),
        ));
        crate::tui::Tui::start(
            &self.bin,
            &["--approval-mode", "yolo"],
            &self.desk.project,
            &env,
        )
    }

    async fn card_for(&self, command: &str) -> Value {
        self.desk.card_for("run_shell_command", command).await
    }
}

#[tokio::test]
async fn gemini_approve_deny_and_edit() {
    let Some(gemini) = Gemini::set_up().await else {
        return;
    };
    let child = gemini.start("RUN[echo approved > out.txt]");
    let gate = gemini.card_for("echo approved > out.txt").await;
    assert_eq!(gemini.desk.file("out.txt"), None);
    gemini
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(gemini.desk.file("out.txt").as_deref(), Some("approved\n"));

    let child = gemini.start("RUN[echo denied > no.txt]");
    let gate = gemini.card_for("echo denied > no.txt").await;
    gemini
        .desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "not on a Friday"}),
        )
        .await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(gemini.desk.file("no.txt"), None);
    let results = gemini.model.recorder.tool_results();
    let last = results.last().unwrap();
    assert!(
        last.is_error && last.text.contains("not on a Friday"),
        "the model is told the reason: {results:?}"
    );

    let child = gemini.start("RUN[echo proposed > edit.txt]");
    let gate = gemini.card_for("echo proposed > edit.txt").await;
    gemini
        .desk
        .decide(
            &gate,
            json!({"decision": "edit", "edits": {"command": "echo edited > edit.txt", "description": "edited"}}),
        )
        .await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(gemini.desk.file("edit.txt").as_deref(), Some("edited\n"));
}

#[tokio::test]
async fn gemini_always_and_a_crash_of_countersign() {
    let Some(mut gemini) = Gemini::set_up().await else {
        return;
    };
    let chain = "echo one >> log.txt && echo two >> log.txt";
    let child = gemini.start(&format!("RUN[{chain}] RUN[{chain}]"));
    let gate = gemini.card_for(chain).await;
    gemini
        .desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(
        gemini.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n")
    );
    assert_eq!(gemini.desk.answered_by(&gate).await, ["user", "rule"]);

    let child = gemini.start("RUN[echo survived > crash.txt]");
    let gate = gemini.card_for("echo survived > crash.txt").await;
    let again = gemini.desk.crash_and_restart_with(&gate).await;
    gemini
        .desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    assert_eq!(gemini.desk.file("crash.txt").as_deref(), Some("survived\n"));
    assert_eq!(gemini.desk.cards_opened(&gate).await, 1);
}

#[tokio::test]
async fn gemini_hook_latency_figures() {
    let Some(gemini) = Gemini::set_up().await else {
        return;
    };
    const N: usize = 6;
    let prompt: String = (0..N).map(|i| format!("RUN[touch f{i}] ")).collect();
    let child = gemini.start(&prompt);
    let latency = crate::kit::approve_each(&gemini.desk, &gemini.model.recorder, N).await;
    assert_ran("Gemini CLI", finish(child, RUN_LIMIT).await);
    eprintln!("{}", latency.report("Gemini CLI"));
}

#[tokio::test]
async fn with_countersign_down_gemini_asks_in_its_own_prompt() {
    // Gemini runs a call whose hook says nothing; this hook says "ask" instead, and Gemini's
    // own confirmation comes up (in its terminal: in `-p`, Gemini would wait on it forever).
    let Some(mut gemini) = Gemini::set_up().await else {
        return;
    };
    gemini.desk.crash().await;
    let Some(tui) = gemini.start_tui() else {
        return;
    };
    tui.ask("YOLO", "RUN[echo unasked > down.txt]").await;
    tui.shows("echo unasked > down.txt").await;
    tui.shows("Allow execution of").await;
    assert_eq!(gemini.desk.file("down.txt"), None, "nothing ran unasked");
}

#[tokio::test]
async fn esc_in_gemini_while_its_card_waits_closes_the_card() {
    // Gemini cancels the request on Esc but leaves its hook running; the hook reads
    // "Request cancelled." in Gemini's chat log and closes its card.
    let Some(gemini) = Gemini::set_up().await else {
        return;
    };
    let Some(tui) = gemini.start_tui() else {
        return;
    };
    tui.ask("YOLO", "RUN[echo escaped > esc.txt]").await;
    let gate = gemini.card_for("echo escaped > esc.txt").await;
    gemini.desk.esc_closes(&tui, &gate, "esc.txt").await;
}
