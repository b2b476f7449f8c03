//! Outside agents' tools (Claude Code, Codex, opencode, Gemini CLI, Qwen Code, Copilot CLI,
//! MCP hosts), as far as the gate needs them: the class a tool name means, what the safety
//! floor and standing rules look at, the card's one-line summary and its diff. Nothing here
//! runs them — the outside agent does.
//!
//! Names are matched without regard to case (`Bash` from Claude Code, `bash` from opencode);
//! each tool's fields are read by what they are to the agent (`catalog.rs`: a path, a command,
//! text typed into a shell, a proposal, inert text). A name nobody listed is `exec`, the most
//! guarded class that still says "something we cannot vouch for".
//!
//! **Invariants 55, 56** ([ARCHITECTURE.md](../../../../ARCHITECTURE.md#invariants)): an outside call is read the way the agent will run it.
//!
//! How: `patch.rs` parses a Codex patch as Codex does, `paths.rs` normalizes every path as the
//! agent's file system resolves it, `keys.rs` reads text typed into a running shell as the
//! command lines it submits.

mod catalog;
mod command_calls;
mod fields;
mod file_calls;
mod keys;
mod other_calls;
pub mod patch;
pub mod paths;

use serde_json::Value;

use super::{Subject, SubjectKind};
use crate::protocol::ToolClass;
use fields::Fields;

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
    /// Words put to the person (a `request_approval`'s title and details): on the floor when
    /// they propose a floor command or name a floor path.
    pub floor_texts: Vec<String>,
    /// Folders a search reads everything beneath (normalized): on the floor when one holds
    /// Countersign's own places, the home folder and `/` included.
    pub floor_trees: Vec<String>,
    /// What a file change writes (content, new text, a patch's added lines): on the floor
    /// when it names Countersign's own places or runs its CLI to change state.
    pub floor_contents: Vec<String>,
    /// Its command is text typed into a running shell, whose folder and environment are not
    /// known here.
    pub shell_input: bool,
    /// Why the tool cannot be read at all (the catalog does not know it; `unreadable` says the
    /// same): it asks in every mode unless a standing rule for this very tool answers it.
    pub unknown_tool: Option<String>,
    /// The agent's folder (normalized), where its relative paths and commands start.
    pub cwd: Option<String>,
    /// What a standing rule matches (one path or one command), when there is one.
    pub rule_subject: Option<Subject>,
    /// It asks to run outside its agent's sandbox, or with the sandbox widened (Claude Code's
    /// `dangerouslyDisableSandbox`, Codex's `sandbox_permissions: "require_escalated"`): the
    /// history reviewer keeps such runs apart from sandboxed ones of the same words.
    pub leaves_sandbox: bool,
    /// The card's one line.
    pub summary: String,
    /// A unified diff, for file changes whose input carries one (or the text to make one).
    pub diff: Option<String>,
}

impl OutsideCall {
    /// A call of `class` shown as `summary`, touching nothing yet.
    fn of(class: ToolClass, summary: String) -> OutsideCall {
        OutsideCall {
            class,
            floor_subjects: Vec::new(),
            unreadable: None,
            floor_globs: Vec::new(),
            floor_texts: Vec::new(),
            floor_trees: Vec::new(),
            floor_contents: Vec::new(),
            shell_input: false,
            unknown_tool: None,
            cwd: None,
            rule_subject: None,
            leaves_sandbox: false,
            summary,
            diff: None,
        }
    }
}

/// The class of an outside tool name.
pub fn class_of(tool: &str) -> ToolClass {
    catalog::spec(tool).map_or(ToolClass::Exec, |spec| spec.class)
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

/// The first non-empty string among `keys`, at the top level or in opencode's `metadata`.
fn text<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| {
        input
            .get(key)
            .or_else(|| input.get("metadata").and_then(|m| m.get(key)))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    })
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

/// The one file a read, change or patch call acts on, as the agent wrote it (before it is
/// normalized): the history reviewer gives no subject to a path that is not already normal.
/// `None` when there is not exactly one.
pub fn written_path(tool: &str, input: &Value) -> Option<String> {
    let fields = Fields::read(tool, input);
    if !fields.spec.is_some_and(|s| s.has(catalog::Role::Patch)) {
        return file_calls::written_path(&fields).map(str::to_owned);
    }
    let text = fields.first(catalog::Role::Patch)?;
    let body = patch::in_command(text).map_or_else(|| text.to_owned(), |(_, body)| body);
    match patch::paths(&patch::parse(&body).ok()?).as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// Reads one outside call from `source`; `cwd` is the folder the agent runs in, when it said.
pub fn describe(source: &str, tool: &str, input: &Value, cwd: Option<&str>) -> OutsideCall {
    describe_as(class_for(source, tool), tool, input, cwd)
}

/// Reads one outside call as `class` (a card's stored class, when its edits are read again):
/// its fields by role, then the reading of its class; what cannot be read comes first.
pub fn describe_as(class: ToolClass, tool: &str, input: &Value, cwd: Option<&str>) -> OutsideCall {
    let fields = Fields::read(tool, input);
    let is_patch = fields
        .spec
        .is_some_and(|spec| spec.has(catalog::Role::Patch));
    let mut call = match class {
        _ if is_patch => other_calls::patch_call(class, &fields, cwd),
        ToolClass::Read | ToolClass::Edit => file_calls::describe(class, tool, &fields, input, cwd),
        ToolClass::Decision => other_calls::decision_call(class, tool, &fields),
        ToolClass::Network => other_calls::network_call(class, tool, &fields),
        ToolClass::Exec | ToolClass::Config => command_calls::describe(class, tool, &fields, cwd),
    };
    call.cwd = cwd.map(|c| paths::normalize(c, None));
    // A command sent to a named shell that lives on (Copilot's `shellId`) runs wherever that
    // shell's earlier commands left it, with what they exported: read as typed text is.
    let named_shell = ["shellId", "shell_id"].iter().any(|key| {
        input
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|id| !id.trim().is_empty())
    });
    if named_shell {
        call.shell_input = true;
    }
    if let Some(why) = fields.unreadable(tool, cwd) {
        call.unreadable = Some(why);
    }
    if let Some(why) = fields.unknown_tool(tool) {
        call.unreadable = Some(why.clone());
        call.unknown_tool = Some(why);
        // A standing rule for it names the tool, whatever its input.
        call.rule_subject = Some(Subject::Command(tool.to_owned()));
        read_every_string(&mut call, input, cwd);
    }
    call
}

/// An unknown tool's input, read whole before any rule may answer it: every string, at any
/// depth, as a path it may act on, as text it may write and as words that may name a command
/// or a place (a rule for `mcp__fs__write_file` does not cover a write to the config).
fn read_every_string(call: &mut OutsideCall, input: &Value, cwd: Option<&str>) {
    for text in fields::every_string(input) {
        call.floor_subjects
            .extend(path_subjects(&paths::normalize(text, cwd)));
        call.floor_contents.push(text.to_owned());
        call.floor_texts.push(text.to_owned());
    }
}

#[cfg(test)]
mod tests;
