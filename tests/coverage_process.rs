//! The real `countersign` binary, where coverage was missing: the provider key reported only
//! as set, decision and budget gates that expire while the server is down, a kill -9 in the
//! middle of a model call, and the workspaces `serve` must refuse.
//!
//! Build and run with `cargo test --features ssr --test coverage_process`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::fixtures::{OpenAiFixture, Reply, openai_text_answer, openai_text_start};
use support::*;

// ---------------------------------------------------------------------------------------------
// 3. The provider key is masked
// ---------------------------------------------------------------------------------------------

const KEY_ENV: &str = "CS_COVERAGE_PROVIDER_KEY";
const SECRET: &str = "sk-coverage-SECRET-0f1e2d3c4b5a6978";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_provider_key_is_reported_set_and_masked_and_never_shown() {
    // Nothing calls the model here; the endpoint is a real local port all the same.
    let fixture = OpenAiFixture::start(vec![]).await;
    let mut lab = Lab::new(Some(&fixture.config(KEY_ENV))).with_env(KEY_ENV, SECRET);
    let node = lab.start().await;

    let r = node.get("/api/v1/config").await;
    let view = r.expect(200);
    assert_eq!(view["provider_api_key"], "set (masked)", "{view}");
    assert!(
        !r.body.contains(SECRET),
        "GET /config shows the key: {}",
        r.body
    );
    let kind = view["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "provider.kind")
        .cloned()
        .unwrap();
    assert_eq!(kind["value"], "openai", "the config in force: {kind}");
    // Nor through the UI's doors: its server function and the rendered /config page.
    let r = send(node.req(Method::POST, "/api/ui/config").json(&json!({}))).await;
    assert_eq!(r.expect(200)["provider_api_key"], "set (masked)");
    assert!(!r.body.contains(SECRET), "/api/ui/config shows the key");
    let page = send(node.req(Method::GET, "/config")).await;
    assert_eq!(page.status.as_u16(), 200, "{}", page.body);
    assert!(
        !page.body.contains(SECRET),
        "the /config page shows the key"
    );
    drop(node);
    assert!(!lab.logs().contains(SECRET), "the server logged the key");

    // The same server without the variable says so.
    let mut bare = Lab::new(Some(&fixture.config(KEY_ENV)));
    let node = bare.start().await;
    let view = node.get("/api/v1/config").await.expect(200);
    assert_eq!(view["provider_api_key"], "not set", "{view}");
}

// ---------------------------------------------------------------------------------------------
// 5. Decision and budget gates expiring while the server is down
// ---------------------------------------------------------------------------------------------

/// Kills the server, stays down until the card's deadline has passed, then rewrites the config
/// with an hour-long timeout before starting again: a restart that gave the card a new
/// deadline instead of its stored one would wait that hour (and this test's guard fails it).
/// Returns the new server and when it was started.
async fn down_past_the_deadline(
    lab: &mut Lab,
    node: Node,
    card: &Value,
    config_after: &str,
) -> (Node, chrono::DateTime<chrono::Utc>) {
    node.kill9().await;
    let expires = parse_time(str_of(card, "expires_at"));
    let wait = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(200)).await;
    std::fs::write(lab.dir.path().join("config.toml"), config_after).unwrap();
    let restarted_at = chrono::Utc::now();
    (lab.start().await, restarted_at)
}

/// The resolution was made by the restarted server, not by the first one before the kill.
#[track_caller]
fn resolved_after_restart(resolution: &Value, restarted_at: chrono::DateTime<chrono::Utc>) {
    assert!(
        parse_time(str_of(resolution, "at")) >= restarted_at - chrono::Duration::milliseconds(5),
        "the card resolved before the restart (it expired before the kill?): {resolution}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_card_that_expired_while_down_proceeds_flagged_unapproved_on_restart() {
    let mut lab = Lab::new(Some("[approvals]\ntimeout_secs = 2\n"));
    let node = lab.start().await;
    let sid = node.session().await;
    let turn = node
        .send_msg(&sid, "ask prep_plan: Drop nulls | drop rows", Some("ask"))
        .await;
    let (before, card) = node.wait_gate_snapshot(&sid).await;
    assert_eq!(card["kind"], "decision", "{card}");
    assert_eq!(card["decision_kind"], "prep_plan");
    assert_eq!(card["timeout_outcome"], "proceed_unapproved");
    let gate = aid(&card);

    let (node, restarted_at) =
        down_past_the_deadline(&mut lab, node, &card, "[approvals]\ntimeout_secs = 3600\n").await;
    let done = node.wait_released(&sid, &turn).await;
    let evs = events(&done);
    assert_contiguous(&evs);
    assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
    let new = after(&evs, cursor(&before));
    assert_eq!(
        types(&new),
        [
            "approval_resolved",
            "tool_result",
            "assistant_message",
            "turn_finished"
        ],
        "{new:#?}"
    );
    let resolution = &new[0];
    assert_eq!(resolution["approval_id"], gate.as_str());
    assert_eq!(resolution["decision"], "timeout");
    assert_eq!(resolution["answered_by"], "timeout");
    assert_eq!(resolution["actor"], "timeout");
    resolved_after_restart(resolution, restarted_at);
    assert!(
        parse_time(str_of(resolution, "resolved_at")) >= parse_time(str_of(&card, "expires_at")),
        "resolved before its deadline: {resolution}"
    );
    let result = &new[1];
    assert_eq!(result["call_id"], card["call_id"]);
    assert_eq!(result["status"], "timeout");
    let told = str_of(result, "output");
    assert!(
        told.contains("proceed") && told.contains("UNAPPROVED"),
        "{told}"
    );
    assert!(
        str_of(&new[2], "text").contains("UNAPPROVED"),
        "the answer flags the decision: {}",
        new[2]
    );
    assert_eq!(new[3]["status"], "completed");
    assert_eq!(done["pending"], json!([]));
    let gone = node
        .decide(&sid, &gate, json!({"decision": "approve"}))
        .await
        .expect_error(410, "gone");
    assert_eq!(gone["resolution"]["decision"], "timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_card_that_expired_while_down_stops_the_turn_on_restart() {
    let budget = "[budget]\nmax_tool_calls = 1\n";
    let mut lab = Lab::new(Some(&format!("[approvals]\ntimeout_secs = 2\n{budget}")));
    let node = lab.start().await;
    let sid = node.session().await;
    let turn = node.send_msg(&sid, "loop 3", Some("yolo")).await;
    let (before, card) = node.wait_gate_snapshot(&sid).await;
    assert_eq!(card["kind"], "budget", "{card}");
    assert_eq!(card["timeout_outcome"], "deny");
    assert_eq!(of_type(&events(&before), "tool_result").len(), 1);
    let gate = aid(&card);

    let (node, restarted_at) = down_past_the_deadline(
        &mut lab,
        node,
        &card,
        &format!("[approvals]\ntimeout_secs = 3600\n{budget}"),
    )
    .await;
    let done = node.wait_released(&sid, &turn).await;
    let evs = events(&done);
    assert_contiguous(&evs);
    assert_eq!(&evs[..cursor(&before) as usize], &events(&before)[..]);
    let new = after(&evs, cursor(&before));
    assert_eq!(
        types(&new),
        ["approval_resolved", "turn_finished"],
        "nothing more runs: {new:#?}"
    );
    assert_eq!(new[0]["approval_id"], gate.as_str());
    assert_eq!(new[0]["decision"], "timeout");
    assert_eq!(new[0]["answered_by"], "timeout");
    resolved_after_restart(&new[0], restarted_at);
    assert_eq!(new[1]["status"], "stopped");
    assert_eq!(new[1]["turn_id"], turn.as_str());
    node.decide(&sid, &gate, json!({"decision": "approve"}))
        .await
        .expect_error(410, "gone");
}

// ---------------------------------------------------------------------------------------------
// 6. kill -9 during a model call
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_call_cut_by_kill_9_is_made_again_and_the_turn_completes() {
    let fixture = OpenAiFixture::start(vec![
        // The first call streams a little, then never finishes.
        Reply::StreamThenStall(openai_text_start("Let me think about ")),
        Reply::Stream(openai_text_answer("Hello again, after the restart.")),
    ])
    .await;
    let mut lab = Lab::new(Some(&fixture.config(KEY_ENV))).with_env(KEY_ENV, "sk-fixture");
    let node = lab.start().await;
    let sid = node.session().await;
    // Subscribed before the message: deltas are never replayed.
    let mut feed = node.sse(&sid, Some(0), None).await;
    let turn = node.send_msg(&sid, "say hello", None).await;

    // The call is in flight: its first words have streamed and the turn holds the session.
    let frames = feed.until(SOON, |f| f.is("assistant_delta")).await;
    assert!(
        frames.last().unwrap().data.contains("Let me think"),
        "{frames:?}"
    );
    assert_eq!(fixture.requests().len(), 1);
    let before = node.snapshot(&sid).await;
    assert_eq!(types(&events(&before)), ["user_message"], "{before}");
    assert_eq!(before["session"]["running_turn_id"], turn.as_str());

    node.kill9().await;
    drop(feed);
    let node = lab.start().await;
    let done = node.wait_released(&sid, &turn).await;
    let evs = events(&done);
    assert_contiguous(&evs);
    assert_eq!(
        types(&evs),
        ["user_message", "assistant_message", "turn_finished"],
        "{evs:#?}"
    );
    assert!(
        evs.iter().all(|e| e["turn_id"] == turn.as_str()),
        "{evs:#?}"
    );
    assert_eq!(evs[1]["text"], "Hello again, after the restart.");
    assert_eq!(evs[2]["status"], "completed");

    let requests = fixture.requests();
    assert_eq!(requests.len(), 2, "the cut call is made again, once");
    assert_eq!(
        requests[1]["messages"], requests[0]["messages"],
        "the same call: the same conversation"
    );
    assert_eq!(requests[1]["tools"], requests[0]["tools"]);
}

// ---------------------------------------------------------------------------------------------
// 10. Workspaces `serve` refuses
// ---------------------------------------------------------------------------------------------

/// Runs `serve` with these flags (and `HOME`), which must refuse to start: a non-zero exit,
/// an `error: …` line naming the problem, never `listening on`. Returns that line.
fn refused(home: &Path, args: &[&str], words: &[&str]) -> String {
    let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", TOKEN]);
    cmd.args(args).env("HOME", home);
    let out = run(cmd, None);
    assert!(
        !out.stdout.contains("listening on"),
        "serve {args:?} started instead of refusing: {out:#?}"
    );
    assert!(!out.status.success(), "serve {args:?} exited 0: {out:#?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("serve {args:?}: no `error: …` line: {out:#?}"));
    for word in words {
        assert!(
            line.contains(word),
            "serve {args:?}: {line:?} lacks {word:?}"
        );
    }
    line.to_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn serve_refuses_root_home_and_a_workspace_holding_its_own_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    let data = root.join("data");
    std::fs::create_dir_all(&home).unwrap();

    refused(
        &home,
        &["--data-dir", p(&data), "--workspace", "/"],
        &["refusing", "workspace", "/"],
    );
    for spelling in [
        p(&home).to_owned(),
        format!("{}/", p(&home)),
        format!("{}/.", p(&home)),
    ] {
        refused(
            &home,
            &["--data-dir", p(&data), "--workspace", &spelling],
            &["refusing", "workspace", p(&home)],
        );
    }

    // A workspace that holds the data dir, the config file or the database.
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    refused(
        &home,
        &["--data-dir", p(&ws.join("data")), "--workspace", p(&ws)],
        &["workspace", "data directory"],
    );
    let inside = ws.join("countersign.toml");
    std::fs::write(&inside, "").unwrap();
    refused(
        &home,
        &[
            "--data-dir",
            p(&data),
            "--workspace",
            p(&ws),
            "--config",
            p(&inside),
        ],
        &["workspace", "config file"],
    );
    let outside = root.join("db.toml");
    std::fs::write(
        &outside,
        format!(
            "[storage]\ndatabase_url = \"sqlite://{}\"\n",
            p(&ws.join("c.db"))
        ),
    )
    .unwrap();
    refused(
        &home,
        &[
            "--data-dir",
            p(&data),
            "--workspace",
            p(&ws),
            "--config",
            p(&outside),
        ],
        &["workspace", "database"],
    );
}

/// `$HOME` spelled through a symlink (a home folder reached through a link, as on hosts where
/// `/home` is one) is still the home folder.
#[test]
fn serve_refuses_home_as_the_workspace_when_home_is_reached_through_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let real = root.join("real-home");
    std::fs::create_dir_all(&real).unwrap();
    let link = root.join("home");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let data = root.join("data");
    for workspace in [&link, &real] {
        refused(
            &link,
            &["--data-dir", p(&data), "--workspace", p(workspace)],
            &["refusing", "workspace"],
        );
    }
}
