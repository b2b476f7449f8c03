//! Outside agents' tools (Claude Code, Codex, opencode, MCP hosts), as far as the gate needs
//! them: the class a tool name means, what the safety floor and standing rules look at, the
//! card's one-line summary and its diff. Nothing here runs them — the outside agent does.
//!
//! Names are matched without regard to case (`Bash` from Claude Code, `bash` from opencode);
//! a name nobody listed is `exec`, the most guarded class that still says "something we
//! cannot vouch for".
//!
//! **Invariant:** an outside call is read the way the agent will run it. An argv command is
//! the command exec runs (quoted word by word, never joined loosely); a Codex patch is parsed
//! as Codex parses it (`patch.rs`), every file it touches checked; every path is normalized as
//! the agent's file system will resolve it (`paths.rs`: `.`/`..`, `\`, drive letters, and the
//! case-folded form too) before the floor and the rules see it. What cannot be read that way
//! is on the floor: it asks.

pub mod patch;
pub mod paths;

use serde_json::Value;

use super::files::{unified_diff, with_newline};
use super::{Subject, SubjectKind};
use crate::protocol::ToolClass;

/// Tools that only read or look things up here.
const READ: [&str; 20] = [
    "read",
    "list_directory",
    "grep_search",
    "read_many_files",
    "view",
    "list_bash",
    "glob",
    "grep",
    "ls",
    "list",
    "todowrite",
    "todoread",
    "notebookread",
    "read_file",
    "list_files",
    "search",
    "view_image",
    "list_dir",
    "grep_files",
    "codesearch",
];

/// Tools that change files.
const EDIT: [&str; 11] = [
    "edit",
    "replace",
    "create",
    "multiedit",
    "write",
    "notebookedit",
    "apply_patch",
    "patch",
    "write_file",
    "edit_file",
    "str_replace_based_edit_tool",
];

/// Tools that read from the network: they change nothing here, but what they send (a URL, a
/// query) can carry anything out.
const NETWORK: [&str; 7] = [
    "webfetch",
    "websearch",
    "web_fetch",
    "web_search",
    "google_web_search",
    "fetch",
    "http_request",
];

/// Tools that put a decision to the person (the MCP server's own `request_approval`).
const DECISION: [&str; 1] = ["request_approval"];

/// What a gate needs to know of one outside call.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideCall {
    pub class: ToolClass,
    /// What the safety floor checks: every path (normalized, and case-folded) and command the
    /// call touches.
    pub floor_subjects: Vec<Subject>,
    /// Why the call cannot be read the way the agent will run it, if it cannot: a floor hit
    /// (it asks).
    pub unreadable: Option<String>,
    /// Globs the agent will expand itself (Claude Code's `Glob` pattern, `Grep`'s `glob`,
    /// opencode's `include`): on the floor when one could match a floor path.
    pub floor_globs: Vec<String>,
    /// What a standing rule matches (one path or one command), when there is one.
    pub rule_subject: Option<Subject>,
    /// The card's one line.
    pub summary: String,
    /// A unified diff, for file changes whose input carries one (or the text to make one).
    pub diff: Option<String>,
}

/// The class of an outside tool name.
pub fn class_of(tool: &str) -> ToolClass {
    let name = tool.to_ascii_lowercase();
    if READ.contains(&name.as_str()) {
        ToolClass::Read
    } else if NETWORK.contains(&name.as_str()) {
        ToolClass::Network
    } else if EDIT.contains(&name.as_str()) {
        ToolClass::Edit
    } else if DECISION.contains(&name.as_str()) {
        ToolClass::Decision
    } else {
        ToolClass::Exec
    }
}

/// The class of an outside call from `source`: a decision only from Countersign's own MCP
/// server; from anyone else a tool named like its `request_approval` is a command, its every
/// string on the floor and shown.
pub fn class_for(source: &str, tool: &str) -> ToolClass {
    match class_of(tool) {
        ToolClass::Decision if source != crate::protocol::MCP_SOURCE => ToolClass::Exec,
        class => class,
    }
}

/// What a standing rule on this tool is written against.
pub fn subject_kind(tool: &str) -> SubjectKind {
    match class_of(tool) {
        ToolClass::Read | ToolClass::Edit => SubjectKind::Path,
        _ => SubjectKind::Command,
    }
}

fn text<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| {
        input
            .get(key)
            .or_else(|| input.get("metadata").and_then(|m| m.get(key)))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    })
}

fn command_of(input: &Value) -> Option<String> {
    if let Some(command) = text(input, &["command", "cmd"]) {
        return Some(command.trim().to_owned());
    }
    // Codex's exec form: `["bash", "-lc", "npm test"]`.
    let words = input.get("command").and_then(Value::as_array)?;
    let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
    match words.as_slice() {
        [shell, flag, script] if flag.starts_with('-') && flag.contains('c') && is_shell(shell) => {
            Some((*script).to_owned())
        }
        [] => None,
        // Exec runs the words as they are: quoted one by one, so the floor reads the same
        // argv (`["env", "bash", "-c", "rm -rf x"]` is not `bash -c rm …`).
        _ => Some(words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")),
    }
}

/// One argv word as a shell reads it back: bare when it holds nothing a shell treats
/// specially, else single-quoted (`'` written as `'\''`).
fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh" | "dash")
}

/// The path a file tool's input names, normalized against the agent's working folder.
fn path_of(input: &Value, cwd: Option<&str>) -> Option<String> {
    text(
        input,
        &["file_path", "filePath", "filepath", "notebook_path", "path"],
    )
    .map(|path| paths::normalize(path, cwd))
}

/// What an opencode permission names when its metadata says nothing: its `patterns` (the
/// file a `read` or `edit` asks for, the command a `bash` runs).
fn patterns(input: &Value) -> Vec<String> {
    input
        .get("patterns")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The globs a search tool expands on its own (`Glob`'s `pattern`, `Grep`'s `glob`, opencode's
/// `include`), joined to the folder it searches.
fn globs_of(tool: &str, input: &Value, cwd: Option<&str>) -> Vec<String> {
    let keys: &[&str] = match tool.to_ascii_lowercase().as_str() {
        "glob" => &["pattern", "glob"],
        "grep" | "grep_files" | "codesearch" => &["glob", "include"],
        _ => &[],
    };
    let base = path_of(input, cwd).or_else(|| cwd.map(|c| paths::normalize(c, None)));
    keys.iter()
        .filter_map(|key| text(input, &[key]))
        .map(|glob| match &base {
            Some(base) if !glob.starts_with(['/', '\\']) => format!("{base}/{glob}"),
            _ => glob.to_owned(),
        })
        .collect()
}

/// The folders a shell call says to run in (Gemini's `dir_path`, Qwen's `directory`, Codex's
/// `workdir`), top-level only, each non-empty value once.
fn folder_fields(input: &Value) -> Vec<&str> {
    let mut folders: Vec<&str> = Vec::new();
    for key in ["workdir", "dir_path", "directory", "cwd"] {
        if let Some(dir) = input.get(key).and_then(Value::as_str)
            && !dir.trim().is_empty()
            && !folders.contains(&dir)
        {
            folders.push(dir);
        }
    }
    folders
}

/// Every string a call's input carries at its top level, alone or in a list — but for what
/// it leaves out (`ignore`, `exclude`: a narrower read, never a wider one).
fn loose_strings(input: &Value) -> Vec<&str> {
    let Some(fields) = input.as_object() else {
        return Vec::new();
    };
    fields
        .iter()
        .filter(|(key, _)| {
            let key = key.to_ascii_lowercase();
            !(key.starts_with("ignore") || key.starts_with("exclude"))
        })
        .flat_map(|(_, value)| match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        })
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// What the floor checks of a path: the path, and its case-folded form when that differs
/// (`.ENV` is `.env` to a file system that ignores case).
fn path_subjects(path: &str) -> Vec<Subject> {
    let folded = paths::folded(path);
    let mut subjects = vec![Subject::Path(path.to_owned())];
    if folded != path {
        subjects.push(Subject::Path(folded));
    }
    subjects
}

/// The files a Codex patch touches, normalized against `base` (the agent's folder, and a
/// `cd` the command made); `Err` when Codex would not read it as a patch.
fn patch_files(patch: &str, base: Option<&str>) -> Result<Vec<String>, String> {
    let touches = patch::parse(patch).map_err(|e| e.to_string())?;
    Ok(patch::paths(&touches)
        .iter()
        .map(|path| paths::normalize(path, base))
        .collect())
}

/// Where a `cd <dir> &&` of the command leaves the agent (joined to its folder).
fn after_cd(cwd: Option<&str>, dir: Option<&str>) -> Option<String> {
    match (cwd, dir) {
        (Some(cwd), Some(dir)) => Some(paths::normalize(dir, Some(cwd))),
        (None, Some(dir)) => Some(paths::normalize(dir, None)),
        (cwd, None) => cwd.map(str::to_owned),
    }
}

fn edit_diff(path: &str, input: &Value) -> Option<String> {
    let pair = |edit: &Value| {
        let old = text(edit, &["old_string", "oldString", "old_str"]).unwrap_or("");
        let new = ["new_string", "newString", "new_str"]
            .iter()
            .find_map(|key| edit.get(*key))
            .and_then(Value::as_str)?;
        Some(unified_diff(path, &with_newline(old), &with_newline(new)))
    };
    if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        let hunks: Vec<String> = edits.iter().filter_map(pair).collect();
        return (!hunks.is_empty()).then(|| hunks.join(""));
    }
    pair(input)
}

/// The diff a file-changing call's input shows: one it carries (opencode), the patch itself
/// (Codex), or one made from the old and new text (Claude Code's Edit, MultiEdit, Write).
fn diff_of(input: &Value, path: Option<&str>) -> Option<String> {
    if let Some(diff) = text(input, &["diff"]) {
        return Some(diff.to_owned());
    }
    if let Some(patch) = text(input, &["patch", "patchText", "input"]) {
        return Some(patch.to_owned());
    }
    let path = path?;
    if let Some(content) = ["content", "file_text"]
        .iter()
        .find_map(|key| input.get(*key))
        .and_then(Value::as_str)
    {
        return Some(unified_diff(path, "", &with_newline(content)));
    }
    if let Some(source) = input.get("new_source").and_then(Value::as_str) {
        return Some(unified_diff(path, "", &with_newline(source)));
    }
    edit_diff(path, input)
}

/// Reads one outside call from `source`; `cwd` is the folder the agent runs in, when it said.
pub fn describe(source: &str, tool: &str, input: &Value, cwd: Option<&str>) -> OutsideCall {
    describe_as(class_for(source, tool), tool, input, cwd)
}

/// Reads one outside call as `class` (a card's stored class, when its edits are read again).
pub fn describe_as(class: ToolClass, tool: &str, input: &Value, cwd: Option<&str>) -> OutsideCall {
    let lower = tool.to_ascii_lowercase();
    if lower == "apply_patch" || lower == "patch" {
        let patch = text(input, &["command", "patch", "patchText", "input"]).unwrap_or("");
        // The patch may come as the command that runs it (`apply_patch <<'EOF' …`).
        let (base, body) = match patch::in_command(patch) {
            Some((dir, body)) => (after_cd(cwd, dir.as_deref()), body),
            None => (cwd.map(str::to_owned), patch.to_owned()),
        };
        let (files, unreadable) = match patch_files(&body, base.as_deref()) {
            Ok(files) => (files, None),
            Err(why) => (
                Vec::new(),
                Some(format!("is not a patch that can be read ({why})")),
            ),
        };
        let summary = match files.as_slice() {
            [] => "apply a patch".to_owned(),
            [one] => format!("patch {one}"),
            [first, rest @ ..] => format!("patch {first} and {} more", rest.len()),
        };
        return OutsideCall {
            class,
            rule_subject: match files.as_slice() {
                [one] => Some(Subject::Path(one.clone())),
                _ => None,
            },
            floor_subjects: files.iter().flat_map(|f| path_subjects(f)).collect(),
            floor_globs: Vec::new(),
            unreadable,
            summary,
            diff: (!patch.is_empty()).then(|| patch.to_owned()),
        };
    }
    match class {
        ToolClass::Read | ToolClass::Edit => {
            let named = patterns(input);
            // A path field, or else opencode's patterns: every one is checked.
            let path = path_of(input, cwd)
                .or_else(|| named.first().map(|first| paths::normalize(first, cwd)));
            let all_paths: Vec<String> = path
                .iter()
                .cloned()
                .chain(named.iter().skip(1).map(|p| paths::normalize(p, cwd)))
                .collect();
            let verb = if class == ToolClass::Read {
                tool
            } else {
                "change"
            };
            let mut floor_subjects: Vec<Subject> =
                all_paths.iter().flat_map(|p| path_subjects(p)).collect();
            let mut floor_globs = globs_of(tool, input, cwd);
            // A read runs in every mode, so the floor is all that guards it, and agents name
            // their fields their own way (Gemini's `include_pattern`, Copilot's `paths`): every
            // string the call carries is checked as a path, and as a glob where it is one. A
            // search pattern that reads as a floor path asks; the floor errs toward asking.
            if class == ToolClass::Read {
                for value in loose_strings(input) {
                    if value.contains(['*', '?', '[', '{']) {
                        floor_globs.push(match cwd {
                            Some(cwd) if !value.starts_with(['/', '\\']) => {
                                format!("{}/{value}", paths::normalize(cwd, None))
                            }
                            _ => value.to_owned(),
                        });
                    } else {
                        for subject in path_subjects(&paths::normalize(value, cwd)) {
                            if !floor_subjects.contains(&subject) {
                                floor_subjects.push(subject);
                            }
                        }
                    }
                }
            }
            OutsideCall {
                class,
                floor_subjects,
                floor_globs,
                unreadable: None,
                rule_subject: path.clone().map(Subject::Path),
                summary: match (&path, text(input, &["pattern", "query", "url"])) {
                    (Some(path), _) => format!("{verb} {path}"),
                    (None, Some(what)) => format!("{tool} {what}"),
                    (None, None) => tool.to_owned(),
                },
                diff: (class == ToolClass::Edit)
                    .then(|| diff_of(input, path.as_deref()))
                    .flatten(),
            }
        }
        ToolClass::Decision => OutsideCall {
            class,
            floor_subjects: Vec::new(),
            floor_globs: Vec::new(),
            unreadable: None,
            rule_subject: None,
            summary: text(input, &["title"]).unwrap_or(tool).to_owned(),
            diff: None,
        },
        ToolClass::Network => {
            // A rule names the URL (or query) exactly, or by a prefix a person writes.
            let target = text(input, &["url", "query", "uri"]).map(str::trim);
            OutsideCall {
                class,
                floor_subjects: Vec::new(),
                floor_globs: Vec::new(),
                unreadable: None,
                rule_subject: target.map(|t| Subject::Command(t.to_owned())),
                summary: match target {
                    Some(target) => format!("{tool} {target}"),
                    None => tool.to_owned(),
                },
                diff: None,
            }
        }
        ToolClass::Exec | ToolClass::Config => {
            let named = patterns(input);
            let command = command_of(input).or_else(|| named.first().cloned());
            // A shell tool told to run in another folder (Gemini's `dir_path`, Qwen's
            // `directory`, Codex's `workdir`) runs there: the floor, the rules and the card
            // read the command as `cd <folder> && <command>`, so a path relative to that folder
            // is seen where it is.
            let folders = folder_fields(input);
            let mut unreadable = match folders.as_slice() {
                [_, _, ..] => Some(
                    "names more than one folder to run in, and which one the agent uses cannot \
                     be told, so it always asks"
                        .to_owned(),
                ),
                [one] if one.trim() != *one => Some(
                    "names its folder with spaces around it, which may not be the folder it runs \
                     in, so it always asks"
                        .to_owned(),
                ),
                _ => None,
            };
            let command = match (command, folders.first()) {
                (Some(command), Some(dir)) => Some(format!("cd {} && {command}", quote(dir))),
                (command, _) => command,
            };
            // Every command opencode's patterns name is checked, not only the first.
            let mut floor_subjects: Vec<Subject> = command
                .iter()
                .cloned()
                .chain(named.iter().skip(1).cloned())
                .map(Subject::Command)
                .collect();
            // PowerShell is not the shell the floor reads (`\\` is no escape there, cmdlets are
            // not programs): every one of its commands asks.
            if matches!(lower.as_str(), "powershell" | "pwsh" | "cmd") {
                unreadable = Some(format!(
                    "is a {tool} command, which the safety floor does not read, so it always asks"
                ));
            }
            // A command that runs apply_patch writes files: every one it names is checked, and
            // one whose patch cannot be read asks.
            if let Some(command) = command.as_deref()
                && (command.contains("apply_patch") || command.contains("applypatch"))
            {
                match patch::in_command(command) {
                    Some((dir, body)) => {
                        match patch_files(&body, after_cd(cwd, dir.as_deref()).as_deref()) {
                            Ok(files) => {
                                floor_subjects.extend(files.iter().flat_map(|f| path_subjects(f)))
                            }
                            Err(why) => {
                                unreadable =
                                    Some(format!("runs a patch that cannot be read ({why})"))
                            }
                        }
                    }
                    None => {
                        unreadable =
                            Some("runs apply_patch in a form that cannot be read".to_owned())
                    }
                }
            }
            OutsideCall {
                class,
                floor_subjects,
                floor_globs: Vec::new(),
                unreadable,
                rule_subject: command.clone().map(Subject::Command),
                summary: command.unwrap_or_else(|| tool.to_owned()),
                diff: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
}
