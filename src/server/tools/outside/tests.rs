//! The catalog against the calls agents make: what each field is, and what cannot be read.

use super::*;

#[test]
fn a_read_is_checked_on_every_string_it_carries_but_what_it_leaves_out() {
    let call = describe(
        "claude-code",
        "grep",
        &json!({"pattern": "=", "paths": ["src", ".env.production"], "ignore": [".git"]}),
        Some("/w"),
    );
    let paths: Vec<&str> = call
        .floor_subjects
        .iter()
        .filter_map(|s| match s {
            Subject::Path(p) => Some(p.as_str()),
            Subject::Command(_) => None,
        })
        .collect();
    assert!(paths.contains(&"/w/.env.production"), "{paths:?}");
    assert!(
        !paths.contains(&"/w/.git"),
        "an ignore list narrows the read: {paths:?}"
    );
    let globbed = describe(
        "claude-code",
        "grep_search",
        &json!({"include_pattern": ".env.*"}),
        Some("/w"),
    );
    assert!(
        globbed.floor_globs.contains(&"/w/.env.*".to_owned()),
        "{globbed:?}"
    );
}
use serde_json::json;

#[test]
fn classes_follow_the_names_agents_use() {
    for read in ["Read", "Glob", "Grep", "LS", "read", "list"] {
        assert_eq!(class_of(read), ToolClass::Read, "{read}");
    }
    for network in ["WebFetch", "WebSearch", "webfetch", "google_web_search"] {
        assert_eq!(class_of(network), ToolClass::Network, "{network}");
    }
    for edit in [
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "apply_patch",
        "edit",
    ] {
        assert_eq!(class_of(edit), ToolClass::Edit, "{edit}");
    }
    for exec in [
        "Bash",
        "bash",
        "PowerShell",
        "mcp__github__create_issue",
        "Whatever",
    ] {
        assert_eq!(class_of(exec), ToolClass::Exec, "{exec}");
    }
    assert_eq!(class_of("request_approval"), ToolClass::Decision);
    // Only Countersign's own MCP server asks a question by that name; an agent's tool
    // named so is a command like any other, its strings on the floor.
    assert_eq!(
        class_for(crate::protocol::MCP_SOURCE, "request_approval"),
        ToolClass::Decision
    );
    for source in ["gemini-cli", "claude-code", "copilot-cli", "opencode"] {
        assert_eq!(class_for(source, "Request_Approval"), ToolClass::Exec);
    }
    let posing = describe(
        "gemini-cli",
        "request_approval",
        &json!({"title": "Tidy up", "command": "cat ~/.ssh/id_rsa"}),
        None,
    );
    assert_eq!(posing.class, ToolClass::Exec);
    assert!(!posing.floor_subjects.is_empty(), "{posing:?}");
}

#[test]
fn a_bash_call_is_its_command() {
    let call = describe(
        "claude-code",
        "Bash",
        &json!({"command": " npm test ", "description": "x"}),
        None,
    );
    assert_eq!(call.rule_subject, Some(Subject::Command("npm test".into())));
    assert_eq!(call.summary, "npm test");
    let opencode = describe(
        "claude-code",
        "bash",
        &json!({"patterns": ["touch a"], "metadata": {"command": "touch a"}}),
        None,
    );
    assert_eq!(
        opencode.floor_subjects,
        [Subject::Command("touch a".into())]
    );
    let codex = describe(
        "claude-code",
        "exec_command",
        &json!({"command": ["bash", "-lc", "ls -la"]}),
        None,
    );
    assert_eq!(codex.summary, "ls -la");
}

#[test]
fn an_edit_shows_a_diff_of_its_old_and_new_text() {
    let call = describe(
        "claude-code",
        "Edit",
        &json!({"file_path": "/w/src/a.rs", "old_string": "let a = 1;", "new_string": "let a = 2;"}),
        None,
    );
    assert_eq!(call.class, ToolClass::Edit);
    assert_eq!(call.rule_subject, Some(Subject::Path("/w/src/a.rs".into())));
    let diff = call.diff.unwrap();
    assert!(
        diff.contains("-let a = 1;") && diff.contains("+let a = 2;"),
        "{diff}"
    );
    let multi = describe(
        "claude-code",
        "MultiEdit",
        &json!({"file_path": "f", "edits": [
            {"old_string": "a", "new_string": "b"},
            {"old_string": "c", "new_string": "d"}
        ]}),
        None,
    );
    let diff = multi.diff.unwrap();
    assert!(diff.contains("+b") && diff.contains("+d"), "{diff}");
    let write = describe(
        "claude-code",
        "Write",
        &json!({"file_path": "n.txt", "content": "hi"}),
        None,
    );
    assert!(write.diff.unwrap().contains("+hi"));
}

#[test]
fn a_codex_patch_names_every_file_it_touches() {
    let patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: .env\n+K=1\n*** End Patch\n";
    let call = describe(
        "claude-code",
        "apply_patch",
        &json!({"command": patch}),
        None,
    );
    assert_eq!(
        call.floor_subjects,
        [
            Subject::Path("src/app.py".into()),
            Subject::Path(".env".into())
        ]
    );
    assert_eq!(call.rule_subject, None, "two files: no one-path rule");
    assert_eq!(call.diff.as_deref(), Some(patch));
    assert_eq!(call.summary, "patch src/app.py and 1 more");
}

/// Read as the agent runs it: argv words stay words, paths are normalized (and folded), a
/// patch in a command is parsed, and what cannot be read is unreadable (it asks).
#[test]
fn outside_calls_are_read_as_the_agent_runs_them() {
    let floor_paths = |call: &OutsideCall| -> Vec<String> {
        call.floor_subjects
            .iter()
            .filter_map(|s| match s {
                Subject::Path(p) => Some(p.clone()),
                Subject::Command(_) => None,
            })
            .collect()
    };
    let argv = describe(
        "claude-code",
        "exec_command",
        &json!({"command": ["env", "bash", "-c", "rm -rf ~/work"]}),
        None,
    );
    assert_eq!(argv.summary, "env bash -c 'rm -rf ~/work'");
    let read = describe(
        "claude-code",
        "Read",
        &json!({"file_path": "C:\\Repo\\App\\..\\.ENV"}),
        None,
    );
    assert_eq!(floor_paths(&read), ["/c:/Repo/.ENV", "/c:/repo/.env"]);
    let relative = describe(
        "claude-code",
        "Write",
        &json!({"file_path": "./a/../.git//config"}),
        Some("/w"),
    );
    assert_eq!(floor_paths(&relative), ["/w/.git/config"]);
    let command = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ../.env\n+K=1\n*** End Patch\nEOF";
    let shell = describe(
        "claude-code",
        "Bash",
        &json!({"command": command}),
        Some("/w/app"),
    );
    assert_eq!(floor_paths(&shell), ["/w/app/.env"]);
    assert_eq!(shell.unreadable, None);
    let hidden = describe(
        "claude-code",
        "Bash",
        &json!({"command": "echo x | apply_patch"}),
        Some("/w"),
    );
    assert!(hidden.unreadable.is_some(), "{hidden:?}");
    let broken = describe(
        "claude-code",
        "apply_patch",
        &json!({"input": "*** Add File: .env\n+x"}),
        None,
    );
    assert!(broken.unreadable.is_some(), "{broken:?}");
}

#[test]
fn opencode_carries_its_own_diff() {
    let call = describe(
        "claude-code",
        "edit",
        &json!({"metadata": {"filepath": "/p/h.txt", "diff": "--- a\n+++ b\n"}}),
        None,
    );
    assert_eq!(call.diff.as_deref(), Some("--- a\n+++ b\n"));
    assert_eq!(call.rule_subject, Some(Subject::Path("/p/h.txt".into())));
}

fn paths_of(call: &OutsideCall) -> Vec<String> {
    call.floor_subjects
        .iter()
        .filter_map(|s| match s {
            Subject::Path(p) => Some(p.clone()),
            Subject::Command(_) => None,
        })
        .collect()
}

fn commands_of(call: &OutsideCall) -> Vec<String> {
    call.floor_subjects
        .iter()
        .filter_map(|s| match s {
            Subject::Command(c) => Some(c.clone()),
            Subject::Path(_) => None,
        })
        .collect()
}

/// Every agent's path field is a floor subject (Copilot's `path`, Gemini's `file_path`,
/// opencode's `filepath`), and a call that carries two that differ cannot be read.
#[test]
fn every_path_field_is_read_and_two_that_differ_ask() {
    for (tool, input) in [
        (
            "create",
            json!({"path": "/w/.git/hooks/pre-commit", "file_text": "x"}),
        ),
        (
            "edit",
            json!({"path": "/w/.git/hooks/pre-commit", "old_str": "a", "new_str": "b"}),
        ),
        (
            "str_replace_editor",
            json!({"command": "create", "path": "/w/.git/hooks/pre-commit", "file_text": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "/w/.git/hooks/pre-commit", "content": "x"}),
        ),
        (
            "edit",
            json!({"metadata": {"filepath": "/w/.git/hooks/pre-commit", "diff": "-a\n+b"}}),
        ),
    ] {
        let call = describe("copilot-cli", tool, &input, Some("/w"));
        assert_eq!(call.class, ToolClass::Edit, "{tool} {input}");
        assert_eq!(call.unreadable, None, "{tool} {input}");
        assert!(
            paths_of(&call).contains(&"/w/.git/hooks/pre-commit".to_owned()),
            "{tool} {input}: {call:?}"
        );
    }
    for (tool, input) in [
        (
            "create",
            json!({"path": ".env", "file_path": "notes.md", "file_text": "K=v"}),
        ),
        (
            "edit",
            json!({"path": "src/a.rs", "file_path": "src/b.rs", "old_str": "a", "new_str": "b"}),
        ),
        (
            "write_file",
            json!({"file_path": "a.txt", "absolute_path": "/w/b.txt", "content": ""}),
        ),
        (
            "Read",
            json!({"file_path": "README.md", "path": "/home/me/.ssh/id_ed25519"}),
        ),
        (
            "edit",
            json!({"filePath": "a", "metadata": {"filepath": "b", "diff": ""}}),
        ),
        (
            "glob",
            json!({"pattern": "*.rs", "path": "src", "dir_path": "/"}),
        ),
        ("Bash", json!({"command": "ls", "cmd": "rm -rf ~/work"})),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch", "patch": "*** Begin Patch\n*** Add File: .env\n+x\n*** End Patch"}),
        ),
        (
            "WebFetch",
            json!({"url": "https://example.com", "uri": "https://evil.example"}),
        ),
    ] {
        let call = describe("copilot-cli", tool, &input, Some("/w"));
        let why = call.unreadable.clone().unwrap_or_default();
        assert!(why.contains("carries two"), "{tool} {input}: {call:?}");
    }
    // The same path twice, spelled two ways, is one path.
    let same = describe(
        "copilot-cli",
        "create",
        &json!({"path": "./src/a.rs", "file_path": "/w/src/a.rs", "file_text": ""}),
        Some("/w"),
    );
    assert_eq!(same.unreadable, None, "{same:?}");
    // opencode's folder holds its file.
    let outside = describe(
        "opencode",
        "read",
        &json!({"filepath": "/x/y/z.md", "parentDir": "/x/y"}),
        Some("/w"),
    );
    assert_eq!(outside.unreadable, None, "{outside:?}");
}

/// Text typed into a running shell is the command lines it submits; keys whose effect cannot
/// be read, and text left without Enter, ask.
#[test]
fn shell_input_is_a_command() {
    let typed = describe(
        "copilot-cli",
        "write_bash",
        &json!({"shellId": "1", "input": "sudo rm -rf ~/work{enter}", "delay": 5}),
        None,
    );
    assert_eq!(typed.class, ToolClass::Exec);
    assert_eq!(commands_of(&typed), ["sudo rm -rf ~/work"]);
    assert_eq!(
        typed.rule_subject,
        Some(Subject::Command("sudo rm -rf ~/work".into()))
    );
    let codex = describe(
        "codex",
        "write_stdin",
        &json!({"session_id": 3, "chars": "cat .env\n"}),
        None,
    );
    assert_eq!(commands_of(&codex), ["cat .env"]);
    for (tool, input) in [
        (
            "write_bash",
            json!({"shellId": "1", "input": "{up}{enter}"}),
        ),
        ("write_bash", json!({"shellId": "1", "input": "rm -r"})),
        ("write_stdin", json!({"session_id": 1, "chars": "\u{3}"})),
        (
            "write_powershell",
            json!({"shellId": "1", "input": "Remove-Item -Recurse x{enter}"}),
        ),
    ] {
        let call = describe("copilot-cli", tool, &input, None);
        assert!(call.unreadable.is_some(), "{tool} {input}: {call:?}");
    }
}

/// A `request_approval`, from Countersign's MCP server or posing as it: its words are read
/// for what they propose, a command it carries is a command, and a field it does not have
/// cannot be read.
#[test]
fn every_string_of_a_request_approval_is_read() {
    let asked = describe(
        crate::protocol::MCP_SOURCE,
        "request_approval",
        &json!({"title": "Clean the server", "details_markdown": "I'll run `sudo rm -rf /srv/app` now."}),
        None,
    );
    assert_eq!(asked.class, ToolClass::Decision);
    assert_eq!(asked.unreadable, None);
    assert_eq!(asked.floor_texts.len(), 2, "{asked:?}");
    for source in [crate::protocol::MCP_SOURCE, "gemini-cli"] {
        let hidden = describe(
            source,
            "request_approval",
            &json!({"title": "Tidy up", "script": "sudo rm -rf /srv/app"}),
            None,
        );
        assert!(
            hidden
                .unreadable
                .as_deref()
                .unwrap_or("")
                .contains("`script`"),
            "{source}: {hidden:?}"
        );
    }
}

/// A tool nobody listed, a string in a field its tool does not have, and a command run by a
/// program the floor does not read are unreadable; numbers and flags are not.
#[test]
fn what_the_catalog_cannot_read_asks() {
    for (tool, input) in [
        ("mcp__github__create_issue", json!({"title": "x"})),
        ("SlashCommand", json!({"command": "/deploy"})),
        (
            "Read",
            json!({"file_path": "README.md", "then": "cat ~/.ssh/id_rsa"}),
        ),
        (
            "Bash",
            json!({"command": "ls", "extra": {"nested": ["rm -rf /"]}}),
        ),
        (
            "exec_command",
            json!({"cmd": "print(1)", "shell": "/usr/bin/python3"}),
        ),
        ("pwsh", json!({"command": "Get-ChildItem"})),
    ] {
        let call = describe("claude-code", tool, &input, None);
        assert!(call.unreadable.is_some(), "{tool} {input}: {call:?}");
    }
    for (tool, input) in [
        (
            "Bash",
            json!({"command": "npm test", "timeout": 1000, "run_in_background": false, "future_flag": true}),
        ),
        (
            "exec_command",
            json!({"cmd": "ls", "shell": "/bin/bash", "login": true}),
        ),
        (
            "TodoWrite",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
        ),
        ("report_intent", json!({"intent": "Exploring"})),
        (
            "Agent",
            json!({"description": "d", "prompt": "p", "subagent_type": "general"}),
        ),
    ] {
        let call = describe("claude-code", tool, &input, None);
        assert_eq!(call.unreadable, None, "{tool} {input}");
    }
}

/// What a shell asks a sandbox to open up (Gemini's `additional_permissions`) is checked as
/// paths.
#[test]
fn paths_a_command_asks_to_write_are_floor_paths() {
    let call = describe(
        "gemini-cli",
        "run_shell_command",
        &json!({"command": "make", "additional_permissions": {"network": false, "fileSystem": {"write": ["~/.ssh/authorized_keys"]}}}),
        Some("/w"),
    );
    assert!(
        paths_of(&call).contains(&"/w/~/.ssh/authorized_keys".to_owned()),
        "{call:?}"
    );
}

/// A path a command-class tool names is a floor path like any other.
#[test]
fn paths_named_by_other_tools_are_floor_paths() {
    let plan = describe(
        "gemini-cli",
        "exit_plan_mode",
        &json!({"plan_filename": "../.ssh/authorized_keys"}),
        Some("/home/me/app"),
    );
    assert!(
        paths_of(&plan).contains(&"/home/me/.ssh/authorized_keys".to_owned()),
        "{plan:?}"
    );
    let outside = describe(
        "opencode",
        "external_directory",
        &json!({"filepath": "/home/me/.env", "parentDir": "/home/me"}),
        Some("/home/me/app"),
    );
    assert_eq!(outside.unreadable, None, "{outside:?}");
    assert!(
        paths_of(&outside).contains(&"/home/me/.env".to_owned()),
        "{outside:?}"
    );
}

/// A call asking to run outside its sandbox, or to widen it, has no rule subject: a standing
/// rule made for the sandboxed command never answers the escape, and none is offered for it.
#[test]
fn a_sandbox_escape_is_marked_as_one() {
    for input in [
        json!({"command": "npm test", "dangerouslyDisableSandbox": true}),
        json!({"command": "npm test", "sandbox_permissions": "require_escalated"}),
        json!({"command": "npm test", "sandbox_permissions": "with_additional_permissions"}),
        json!({"command": "npm test", "with_escalated_permissions": true}),
        json!({"command": "npm test", "additional_permissions": {"network": true}}),
    ] {
        let call = describe("claude-code", "Bash", &input, Some("/w"));
        assert!(call.leaves_sandbox, "{input}");
    }
    let stays = describe(
        "codex",
        "shell",
        &json!({"command": "npm test", "sandbox_permissions": "use_default"}),
        Some("/w"),
    );
    assert_eq!(
        stays.rule_subject,
        Some(Subject::Command("npm test".into()))
    );
    assert!(!stays.leaves_sandbox);
}

/// A read of several paths, or a glob reaching out of its folder, has no one-path rule subject.
#[test]
fn a_read_reaching_past_its_one_path_has_no_rule_subject() {
    let many = |paths: Value| {
        describe(
            "gemini-cli",
            "read_many_files",
            &json!({ "paths": paths }),
            None,
        )
    };
    assert_eq!(
        many(json!(["/w/README.md"])).rule_subject,
        Some(Subject::Path("/w/README.md".into()))
    );
    assert_eq!(many(json!(["/w/README.md", "/w/b.md"])).rule_subject, None);
    let glob = |pattern: &str| {
        describe(
            "claude-code",
            "Glob",
            &json!({"path": "/w", "pattern": pattern}),
            None,
        )
        .rule_subject
    };
    assert_eq!(glob("*.md"), Some(Subject::Path("/w".into())));
    for pattern in ["/etc/**", "../x/**", "{..,a}/*", "~/x", "C:/x/*"] {
        assert_eq!(glob(pattern), None, "{pattern}");
    }
}
