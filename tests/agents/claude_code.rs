//! Claude Code, for real: `claude -p` against the scripted Anthropic server, with Countersign's
//! hooks installed by `countersign hook install claude-code` as the README says. Every call
//! Claude is about to make becomes a card, and what the person answers is what happens.

use std::time::Duration;

use serde_json::{Value, json};

use crate::anthropic::Anthropic;
use crate::kit::{Desk, assert_ran, finish, installed};
use crate::support::{SOON, of_type, poll_until, str_of};
use crate::tui::Tui;

/// How long one `claude -p` run may take (it waits on a card meanwhile).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// The scripted server takes any key; Claude remembers an accepted one by its last 20
/// characters, which this is.
const API_KEY: &str = "sk-ant-scripted-0000";

struct Claude {
    desk: Desk,
    model: Anthropic,
    bin: std::path::PathBuf,
}

impl Claude {
    /// Countersign, the scripted model and the hooks installed; `None` when Claude Code is not
    /// installed (and the run does not require it).
    async fn set_up() -> Option<Claude> {
        let agent = installed("claude-code")?;
        let desk = Desk::new().await;
        let model = Anthropic::start().await;
        let printed = desk.install_hook(&["claude-code"]).await;
        assert!(
            desk.project.join(".claude/settings.json").exists(),
            "install wrote nothing: {printed}"
        );
        Some(Claude {
            desk,
            model,
            bin: agent.bin,
        })
    }

    /// `claude -p <prompt> <args…>`, started.
    fn start(&self, prompt: &str, args: &[&str]) -> tokio::process::Child {
        self.command(prompt, args).spawn().expect("start claude")
    }

    /// `claude -p <prompt> <args…>` with the scripted model, telemetry and updates off.
    fn command(&self, prompt: &str, args: &[&str]) -> tokio::process::Command {
        let mut cmd = self.desk.command(&self.bin);
        cmd.arg("-p").arg(prompt).args(args).envs(self.env());
        cmd
    }

    /// Claude's own settings for a run here: the scripted model, nothing else on the network.
    fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        [
            ("ANTHROPIC_BASE_URL", self.model.base_url.as_str()),
            ("ANTHROPIC_API_KEY", API_KEY),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect()
    }

    /// Claude's interactive terminal, past its first-run questions (onboarding done, the
    /// project trusted — Claude runs no hooks in an untrusted folder — and the key accepted).
    fn start_tui(&self) -> Option<Tui> {
        self.start_tui_with(&[])
    }

    /// The same, with `args` (a `--permission-mode`).
    fn start_tui_with(&self, args: &[&str]) -> Option<Tui> {
        let trusted = json!({
            "hasCompletedOnboarding": true, "theme": "dark",
            "customApiKeyResponses": {"approved": [API_KEY], "rejected": []},
            "projects": {self.desk.project.display().to_string(): {
                "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
        });
        std::fs::write(self.desk.home.join(".claude.json"), trusted.to_string()).unwrap();
        let mut env = self.desk.env();
        env.extend(self.env());
        // Claude Code refuses `bypassPermissions` as root unless told it is in a sandbox (the
        // test machine runs as root).
        env.push(("IS_SANDBOX".into(), "1".into()));
        Tui::start(&self.bin, args, &self.desk.project, &env)
    }

    /// Types the person's words once the terminal is ready, and sends them.
    async fn ask(tui: &Tui, prompt: &str) {
        tui.ask("for shortcuts", prompt).await;
    }

    /// Waits until the card `gate` is closed with `reason`; a decision sent then is refused.
    async fn closed_with(&self, gate: &Value, reason: &str, tui: &Tui) {
        let aid = str_of(gate, "approval_id").to_owned();
        let closed = poll_until("the card to close", SOON, || async {
            let state = self
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
        assert_eq!(closed["reason"], reason, "{closed}");
        let sid = str_of(gate, "session_id");
        self.desk
            .admin()
            .post(
                &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
                json!({"decision": "approve"}),
            )
            .await
            .expect(410);
    }
}

/// Claude's own permission dialog.
const DIALOG: &str = "Do you want to proceed?";

/// Waits until the terminal no longer shows `text`.
async fn gone_from(tui: &Tui, text: &str) {
    poll_until(&format!("{text:?} to go"), SOON, || async {
        let screen = tui.screen();
        if screen.contains(text) {
            Err(screen)
        } else {
            Ok(())
        }
    })
    .await;
}

/// Waits until the project holds `name`.
async fn file_appears(claude: &Claude, name: &str, tui: &Tui) {
    poll_until(&format!("{name} to be written"), SOON, || async {
        claude.desk.file(name).map(drop).ok_or_else(|| tui.screen())
    })
    .await;
}

impl Claude {
    /// The one pending card, checked to be Claude's call of `Bash` with `command`.
    async fn card_for(&self, command: &str) -> Value {
        self.desk.card_for("Bash", command).await
    }

    fn results(&self) -> Vec<crate::script::ToolResult> {
        self.model.recorder.tool_results()
    }
}

#[tokio::test]
async fn approve_runs_the_call_and_deny_tells_claude_why() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let child = claude.start("RUN[echo approved > out.txt]", &[]);
    let gate = claude.card_for("echo approved > out.txt").await;
    assert_eq!(
        claude.desk.file("out.txt"),
        None,
        "nothing runs before the answer"
    );
    assert!(
        claude.model.recorder.calls() >= 1,
        "Claude asked the scripted model"
    );
    claude
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(claude.desk.file("out.txt").as_deref(), Some("approved\n"));
    assert!(!claude.results()[0].is_error, "{:?}", claude.results());

    let child = claude.start("RUN[echo denied > no.txt]", &[]);
    let gate = claude.card_for("echo denied > no.txt").await;
    claude
        .desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "write it to the wiki instead"}),
        )
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(claude.desk.file("no.txt"), None, "a denied call never runs");
    let results = claude.results();
    let last = results.last().unwrap();
    assert!(
        last.is_error && last.text.contains("write it to the wiki instead"),
        "the model is told the person's reason: {results:?}"
    );
}

#[tokio::test]
async fn an_edit_runs_the_edited_command_and_always_answers_the_next_identical_call() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let child = claude.start("RUN[echo proposed > out.txt]", &[]);
    let gate = claude.card_for("echo proposed > out.txt").await;
    claude
        .desk
        .decide(
            &gate,
            json!({"decision": "edit", "edits": {"command": "echo edited > out.txt", "description": "edited"}}),
        )
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(claude.desk.file("out.txt").as_deref(), Some("edited\n"));

    // Allow always on a chain: the rule made answers the very same call again, and nothing
    // broader.
    let chain = "echo one >> log.txt && echo two >> log.txt";
    let child = claude.start(&format!("RUN[{chain}] RUN[{chain}]"), &[]);
    let gate = claude.card_for(chain).await;
    claude
        .desk
        .decide(&gate, json!({"decision": "allow_always"}))
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(
        claude.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n"),
        "both calls ran"
    );
    // The second call's card was answered by the rule the moment it opened: nobody was asked.
    assert_eq!(claude.desk.answered_by(&gate).await, ["user", "rule"]);
    assert_eq!(claude.desk.pending_count().await, 0);

    // Countersign's rule is the one grant: Claude saved none of its own, so revoking the rule
    // here brings the card back.
    let local = claude
        .desk
        .file(".claude/settings.local.json")
        .unwrap_or_default();
    assert!(
        !local.contains("echo"),
        "Claude kept a rule of its own: {local}"
    );
    let rules = claude.desk.admin().get("/api/v1/rules").await.expect(200);
    for rule in rules.as_array().unwrap() {
        claude
            .desk
            .admin()
            .delete(&format!("/api/v1/rules/{}", str_of(rule, "id")))
            .await
            .expect(204);
    }
    let child = claude.start(&format!("RUN[{chain}]"), &[]);
    let gate = claude.card_for(chain).await;
    claude
        .desk
        .decide(&gate, json!({"decision": "deny", "reason": "revoked"}))
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(
        claude.desk.file("log.txt").as_deref(),
        Some("one\ntwo\none\ntwo\n"),
        "the revoked grant answered nothing"
    );
}

#[tokio::test]
async fn every_permission_mode_asks_countersign() {
    // Claude Code's `auto` and `bypassPermissions` never raise its own prompt; the
    // PreToolUse hook still brings the call here.
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    for mode in ["bypassPermissions", "auto", "acceptEdits", "default"] {
        let mut cmd = claude.command("RUN[touch should-not-exist]", &["--permission-mode", mode]);
        // Claude Code refuses `bypassPermissions` as root unless told it is in a sandbox (the
        // test machine runs as root).
        cmd.env("IS_SANDBOX", "1");
        let child = cmd.spawn().unwrap();
        let gate = claude.card_for("touch should-not-exist").await;
        claude
            .desk
            .decide(
                &gate,
                json!({"decision": "deny", "reason": format!("not in {mode}")}),
            )
            .await;
        assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
        assert_eq!(claude.desk.file("should-not-exist"), None, "mode {mode}");
    }
}

#[tokio::test]
async fn a_crash_of_countersign_while_claude_waits_leaves_one_card_answered_once() {
    let Some(mut claude) = Claude::set_up().await else {
        return;
    };
    let child = claude.start("RUN[echo survived > out.txt]", &[]);
    let gate = claude.card_for("echo survived > out.txt").await;
    claude.desk.crash().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    claude.desk.restart().await;
    let again = claude.card_for("echo survived > out.txt").await;
    assert_eq!(again["approval_id"], gate["approval_id"], "the same card");
    claude
        .desk
        .decide(&again, json!({"decision": "approve"}))
        .await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    assert_eq!(claude.desk.file("out.txt").as_deref(), Some("survived\n"));
    let events = claude.desk.session_events(&gate).await;
    assert_eq!(of_type(&events, "approval_request").len(), 1);
    assert_eq!(of_type(&events, "approval_resolved").len(), 1);
}

#[tokio::test]
async fn with_countersign_down_a_claude_that_would_ask_nobody_is_denied() {
    // `claude -p` has nobody to ask, and `bypassPermissions` runs a call whose hook says
    // nothing: with Countersign unreachable the hook denies, saying how to go on, and nothing
    // runs unasked. Nothing crashes, and the turn ends.
    let Some(mut claude) = Claude::set_up().await else {
        return;
    };
    claude.desk.crash().await;
    for mode in ["default", "bypassPermissions"] {
        let started = std::time::Instant::now();
        let file = format!("unasked-{mode}.txt");
        let mut cmd = claude.command(
            &format!("RUN[echo unasked > {file}]"),
            &["--permission-mode", mode],
        );
        cmd.env("IS_SANDBOX", "1");
        assert_ran("Claude Code", finish(cmd.spawn().unwrap(), RUN_LIMIT).await);
        assert_eq!(claude.desk.file(&file), None, "{mode}");
        let results = claude.results();
        let result = results.last().unwrap();
        assert!(result.is_error, "{mode}: {result:?}");
        assert!(
            result.text.contains("start Countersign again") && result.text.contains(mode),
            "{mode}: {result:?}"
        );
        assert!(
            started.elapsed() < SOON,
            "the hook gave up on an absent Countersign"
        );
    }
}

#[tokio::test]
async fn esc_in_claude_while_its_card_waits_closes_the_card() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let Some(tui) = claude.start_tui() else {
        return;
    };
    tui.shows("auto mode").await;
    tui.type_text("RUN[touch tui.txt]");
    Tui::settle().await;
    tui.press("Enter");
    let gate = claude.card_for("touch tui.txt").await;
    tui.shows("$ touch tui.txt").await;
    Tui::settle().await;
    // The person answers in Claude instead: Esc stops the call, and Claude stops its hook.
    tui.press("Escape");
    let aid = str_of(&gate, "approval_id").to_owned();
    let closed = poll_until("the card to close", SOON, || async {
        let state = claude
            .desk
            .admin()
            .get(&format!("/api/v1/gates/{aid}"))
            .await
            .expect(200);
        if state["status"] == "cancelled" {
            Ok(state)
        } else {
            Err(state.to_string())
        }
    })
    .await;
    assert_eq!(closed["reason"], "agent_gone", "{closed}");
    // An answer now reaches no one, and is refused rather than recorded.
    let (sid, aid) = (str_of(&gate, "session_id"), str_of(&gate, "approval_id"));
    claude
        .desk
        .admin()
        .post(
            &format!("/api/v1/sessions/{sid}/approvals/{aid}"),
            json!({"decision": "approve"}),
        )
        .await
        .expect(410);
    assert_eq!(claude.desk.file("tui.txt"), None);
}

/// The figures BENCHMARKS.md quotes (`-- --nocapture` prints them); it asserts only that every
/// call was asked and ran.
#[tokio::test]
async fn hook_latency_figures() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    const N: usize = 8;
    let prompt: String = (0..N).map(|i| format!("RUN[touch f{i}] ")).collect();
    let child = claude.start(&prompt, &[]);
    let latency = crate::kit::approve_each(&claude.desk, &claude.model.recorder, N).await;
    assert_ran("Claude Code", finish(child, RUN_LIMIT).await);
    for i in 0..N {
        assert!(claude.desk.project.join(format!("f{i}")).exists());
    }
    eprintln!("{}", latency.report("Claude Code"));
}

#[tokio::test]
async fn in_default_mode_claudes_own_dialog_answers_and_the_card_closes() {
    // The person answers in Claude's dialog, which shows beside the card: Yes runs the call and
    // the card closes (`answered_elsewhere`) once it has run; No stops the call, Claude stops
    // its hook, and the card closes (`agent_gone`). Neither card takes an answer afterwards.
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let Some(tui) = claude.start_tui_with(&["--permission-mode", "default"]) else {
        return;
    };
    Claude::ask(&tui, "RUN[touch yes.txt]").await;
    let gate = claude.card_for("touch yes.txt").await;
    tui.shows(DIALOG).await;
    tui.shows("Countersign asks too").await;
    Tui::settle().await;
    tui.press("Enter");
    file_appears(&claude, "yes.txt", &tui).await;
    claude.closed_with(&gate, "answered_elsewhere", &tui).await;
    tui.shows("DONE").await;

    Claude::ask(&tui, "RUN[touch no.txt]").await;
    let gate = claude.card_for("touch no.txt").await;
    tui.shows(DIALOG).await;
    Tui::settle().await;
    tui.press("2");
    Tui::settle().await;
    if tui.screen().contains(DIALOG) {
        tui.press("Enter");
    }
    claude.closed_with(&gate, "agent_gone", &tui).await;
    assert_eq!(claude.desk.file("no.txt"), None, "No ran nothing");

    // Esc on the dialog is a No as well.
    Claude::ask(&tui, "RUN[touch esc.txt]").await;
    let gate = claude.card_for("touch esc.txt").await;
    tui.shows(DIALOG).await;
    claude.desk.esc_closes(&tui, &gate, "esc.txt").await;
}

#[tokio::test]
async fn in_default_mode_the_card_answers_and_claudes_dialog_closes() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let Some(tui) = claude.start_tui_with(&["--permission-mode", "default"]) else {
        return;
    };
    Claude::ask(&tui, "RUN[touch card.txt]").await;
    let gate = claude.card_for("touch card.txt").await;
    tui.shows(DIALOG).await;
    claude
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    file_appears(&claude, "card.txt", &tui).await;
    gone_from(&tui, DIALOG).await;
    tui.shows("DONE").await;
    assert_eq!(
        claude.desk.cards_opened(&gate).await,
        1,
        "one card per call"
    );

    Claude::ask(&tui, "RUN[touch denied.txt]").await;
    let gate = claude.card_for("touch denied.txt").await;
    tui.shows(DIALOG).await;
    claude
        .desk
        .decide(
            &gate,
            json!({"decision": "deny", "reason": "not on a Friday"}),
        )
        .await;
    gone_from(&tui, DIALOG).await;
    poll_until("the model to hear the reason", SOON, || async {
        let results = claude.results();
        match results.last() {
            Some(last) if last.text.contains("not on a Friday") => Ok(()),
            _ => Err(format!("{results:?}\n{}", tui.screen())),
        }
    })
    .await;
    assert_eq!(claude.desk.file("denied.txt"), None);
}

#[tokio::test]
async fn in_bypass_and_auto_modes_the_terminal_waits_on_the_card() {
    // No dialog of Claude's in these modes: every call still reaches Countersign, and only the
    // card answers.
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    for (mode, ready) in [
        ("bypassPermissions", "bypass permissions on"),
        ("auto", "auto mode"),
    ] {
        let Some(tui) = claude.start_tui_with(&["--permission-mode", mode]) else {
            return;
        };
        if mode == "bypassPermissions" {
            // Claude asks once whether the person accepts the mode, as anyone starting it would.
            tui.shows("Yes, I accept").await;
            tui.press("Down");
            Tui::settle().await;
            tui.press("Enter");
        }
        let file = format!("{mode}.txt");
        tui.ask(ready, &format!("RUN[touch {file}]")).await;
        let gate = claude.card_for(&format!("touch {file}")).await;
        tui.shows("Waiting for approval in Countersign").await;
        assert!(!tui.screen().contains(DIALOG), "{mode}: {}", tui.screen());
        assert_eq!(claude.desk.file(&file), None, "{mode}: nothing ran yet");
        claude
            .desk
            .decide(&gate, json!({"decision": "approve"}))
            .await;
        file_appears(&claude, &file, &tui).await;
        drop(tui);
    }
}

#[tokio::test]
async fn in_accept_edits_mode_too_the_dialog_shows_beside_the_card() {
    let Some(claude) = Claude::set_up().await else {
        return;
    };
    let Some(tui) = claude.start_tui_with(&["--permission-mode", "acceptEdits"]) else {
        return;
    };
    tui.ask("accept edits on", "RUN[touch edits.txt]").await;
    let gate = claude.card_for("touch edits.txt").await;
    tui.shows(DIALOG).await;
    claude
        .desk
        .decide(&gate, json!({"decision": "approve"}))
        .await;
    file_appears(&claude, "edits.txt", &tui).await;
    gone_from(&tui, DIALOG).await;
}
