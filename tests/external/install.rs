//! `hook install claude-code|codex`: merging into real settings files.

use std::path::Path;

use countersign::external::hook::{HookContext, run_with};
use serde_json::{Value, json};

use crate::common::fixture;
use crate::hooks::args;

fn ctx(home: &Path, cwd: &Path) -> HookContext {
    HookContext {
        home: Some(home.to_owned()),
        cwd: cwd.to_owned(),
        ..crate::hooks::ctx()
    }
}

async fn install(words: &[&str], ctx: &HookContext) -> countersign::external::hook::HookOutcome {
    let mut all = vec!["install"];
    all.extend_from_slice(words);
    run_with(args(&all), b"", ctx).await
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A settings file with other keys and other hooks, including another PermissionRequest hook.
fn busy_settings() -> Value {
    json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
        "env": {"FOO": "1"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./scripts/guard.sh", "timeout": 30}]}],
            "PermissionRequest": [{"matcher": "Edit", "hooks": [
                {"type": "command", "command": "notify-send asked"}]}]
        }
    })
}

const OUR_GROUP: &str = r#"{"matcher": "*", "hooks": [{"type": "command",
    "command": "countersign hook claude-code", "timeout": 1800,
    "statusMessage": "Waiting for approval in Countersign"}]}"#;

#[tokio::test]
async fn claude_project_install_merges_once_and_keeps_everything_else() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let path = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&busy_settings()).unwrap(),
    )
    .unwrap();

    let ctx = ctx(home.path(), Path::new("/nonexistent"));
    let dir = project.path().to_str().unwrap();
    let first = install(&["claude-code", "--project", dir], &ctx).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.stdout, "");
    let after_first = std::fs::read(&path).unwrap();

    let mut expected = busy_settings();
    for event in ["PreToolUse", "PermissionRequest"] {
        let groups = expected["hooks"]
            .as_object_mut()
            .unwrap()
            .entry(event)
            .or_insert_with(|| json!([]));
        groups
            .as_array_mut()
            .unwrap()
            .push(serde_json::from_str(OUR_GROUP).unwrap());
    }
    assert_eq!(read(&path), expected);

    let second = install(&["claude-code", "--project", dir], &ctx).await;
    assert_eq!(second.code, 0);
    assert!(
        second.stderr.contains("already has the hook"),
        "{}",
        second.stderr
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        after_first,
        "the second run changed the file"
    );
    assert!(!home.path().join(".claude").exists());
}

#[tokio::test]
async fn claude_install_defaults_to_the_current_directory_and_user_goes_home() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let ctx = ctx(home.path(), project.path());

    let outcome = install(&["claude-code"], &ctx).await;
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        read(&project.path().join(".claude/settings.json")),
        fixture_with_status("claude-code/settings.hooks.json")
    );

    let outcome = install(&["claude-code", "--user"], &ctx).await;
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        read(&home.path().join(".claude/settings.json")),
        fixture_with_status("claude-code/settings.hooks.json")
    );
}

/// The fixture plus the status line this installer adds.
fn fixture_with_status(path: &str) -> Value {
    let mut settings = fixture(path);
    for event in ["PreToolUse", "PermissionRequest"] {
        if settings["hooks"][event].is_array() {
            settings["hooks"][event][0]["hooks"][0]["statusMessage"] =
                json!("Waiting for approval in Countersign");
        }
    }
    settings
}

#[tokio::test]
async fn a_file_that_is_not_json_is_left_untouched() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let broken = b"{ \"model\": \"opus\", // a comment\n";
    std::fs::write(&path, broken).unwrap();
    let outcome = install(&["claude-code", "--user"], &ctx(home.path(), home.path())).await;
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.contains("not valid JSON"),
        "{}",
        outcome.stderr
    );
    assert_eq!(std::fs::read(&path).unwrap(), broken);

    std::fs::write(&path, b"[1, 2]").unwrap();
    let outcome = install(&["claude-code", "--user"], &ctx(home.path(), home.path())).await;
    assert_eq!(outcome.code, 1);
    assert_eq!(std::fs::read(&path).unwrap(), b"[1, 2]");
}

#[tokio::test]
async fn print_shows_the_snippet_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let ctx = ctx(home.path(), home.path());
    let outcome = install(&["claude-code", "--print"], &ctx).await;
    assert_eq!(outcome.code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&outcome.stdout).unwrap(),
        fixture_with_status("claude-code/settings.hooks.json")
    );
    let outcome = install(&["codex", "--print"], &ctx).await;
    assert_eq!(
        serde_json::from_str::<Value>(&outcome.stdout).unwrap(),
        fixture("codex/hooks.json")
    );
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn codex_install_writes_hooks_json_and_asks_for_trust() {
    let home = tempfile::tempdir().unwrap();
    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let config = "model = \"gpt-5\"\n";
    std::fs::write(codex.join("config.toml"), config).unwrap();
    let existing = json!({"description": "mine", "hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "say done"}]}]}});
    std::fs::write(codex.join("hooks.json"), existing.to_string()).unwrap();

    let ctx = ctx(home.path(), home.path());
    for _ in 0..2 {
        let outcome = install(&["codex"], &ctx).await;
        assert_eq!(outcome.code, 0, "{}", outcome.stderr);
        assert!(outcome.stderr.contains("/hooks"), "{}", outcome.stderr);
        assert!(outcome.stderr.contains("trust"), "{}", outcome.stderr);
    }
    let mut expected = existing.clone();
    expected["hooks"]["PermissionRequest"] =
        fixture("codex/hooks.json")["hooks"]["PermissionRequest"].clone();
    assert_eq!(read(&codex.join("hooks.json")), expected);
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        config
    );
}

#[tokio::test]
async fn codex_install_warns_about_keys_codex_would_refuse() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".codex/hooks.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, r#"{"$schema": "x", "hooks": {}}"#).unwrap();
    let outcome = install(&["codex"], &ctx(home.path(), home.path())).await;
    assert_eq!(outcome.code, 0);
    assert!(outcome.stderr.contains("`$schema`"), "{}", outcome.stderr);
    assert_eq!(read(&path)["$schema"], "x");
    // Consent is the person's: nothing that looks like Codex's trust state is written.
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(!written.contains("trusted_hash") && !written.contains("state"));
    assert!(!home.path().join(".codex/config.toml").exists());
}
