//! A read or a file change: the paths it touches, the globs it expands, its card's line and
//! diff.

use serde_json::Value;

use super::catalog::Role;
use super::fields::Fields;
use super::{OutsideCall, loose_strings, path_subjects, paths, text};
use crate::protocol::ToolClass;
use crate::server::tools::Subject;
use crate::server::tools::files::{unified_diff, with_newline};

/// Reads a read-class or edit-class call.
pub fn describe(
    class: ToolClass,
    tool: &str,
    fields: &Fields<'_>,
    input: &Value,
    cwd: Option<&str>,
) -> OutsideCall {
    let path = written_path(fields).map(|p| paths::normalize(p, cwd));
    let (floor_subjects, floor_globs) = touched(class, fields, input, cwd);
    // A search reads every file beneath its folder (the agent's own when it names none).
    let searches = fields.spec.is_some_and(|spec| spec.has(Role::Tree));
    let floor_trees: Vec<String> = match fields.strings(Role::Tree).as_slice() {
        [] => cwd
            .filter(|_| searches)
            .map(|c| paths::normalize(c, None))
            .into_iter()
            .collect(),
        trees => trees
            .iter()
            .map(|(_, t)| paths::normalize(t, cwd))
            .collect(),
    };
    let verb = if class == ToolClass::Read {
        tool
    } else {
        "change"
    };
    let summary = match (&path, text(input, &["pattern", "query", "url"])) {
        (Some(path), _) => format!("{verb} {path}"),
        (None, Some(what)) => format!("{tool} {what}"),
        (None, None) => tool.to_owned(),
    };
    OutsideCall {
        floor_subjects,
        floor_globs,
        floor_trees,
        floor_contents: if class == ToolClass::Edit {
            contents(input)
        } else {
            Vec::new()
        },
        rule_subject: path
            .clone()
            .filter(|_| names_one_place(fields))
            .map(Subject::Path),
        diff: (class == ToolClass::Edit)
            .then(|| diff_of(input, path.as_deref()))
            .flatten(),
        ..OutsideCall::of(class, summary)
    }
}

/// Every path the call touches (normalized, and case-folded) and every glob it expands.
fn touched(
    class: ToolClass,
    fields: &Fields<'_>,
    input: &Value,
    cwd: Option<&str>,
) -> (Vec<Subject>, Vec<String>) {
    let mut floor_subjects: Vec<Subject> = Vec::new();
    let mut add = |p: &str| {
        for subject in path_subjects(&paths::normalize(p, cwd)) {
            if !floor_subjects.contains(&subject) {
                floor_subjects.push(subject);
            }
        }
    };
    let mut floor_globs = globs(fields, cwd);
    for role in [
        Role::Path,
        Role::Root,
        Role::Tree,
        Role::Container,
        Role::Paths,
    ] {
        for (_, value) in fields.strings(role) {
            if role == Role::Paths && is_glob(value) {
                floor_globs.push(joined(value, cwd));
            } else {
                add(value);
            }
        }
    }
    // A read runs in every mode, so the floor is all that guards it, and agents name their
    // fields their own way: every string the call carries is checked as a path, and as a glob
    // where it is one. A search pattern that reads as a floor path asks; the floor errs
    // toward asking.
    if class == ToolClass::Read {
        for value in loose_strings(input) {
            if is_glob(value) {
                floor_globs.push(joined(value, cwd));
            } else {
                add(value);
            }
        }
    }
    (floor_subjects, floor_globs)
}

/// The one path a read or a change acts on, as the agent wrote it (two that differ are
/// unreadable: `fields.rs`), else the folder it searches, else opencode's first pattern.
pub fn written_path<'a>(fields: &Fields<'a>) -> Option<&'a str> {
    fields
        .first(Role::Path)
        .or_else(|| fields.first(Role::Root))
        .or_else(|| fields.first(Role::Tree))
        .or_else(|| {
            let named = fields.strings(Role::Paths);
            named.into_iter().map(|(_, p)| p).find(|p| !is_glob(p))
        })
}

/// Whether the call's one path is all it reaches, so a rule or past approvals for that path
/// may answer it: a list of paths (Gemini's `read_many_files`) names one only, and nothing
/// else besides it; no glob it expands is absolute or climbs out with `..` (fast-glob expands
/// `/home/me/thesis/**` and `../thesis/**` whatever its folder).
fn names_one_place(fields: &Fields<'_>) -> bool {
    let listed = fields.strings(Role::Paths);
    let besides = [Role::Path, Role::Root, Role::Tree]
        .into_iter()
        .any(|role| !fields.strings(role).is_empty());
    let one_listed = match listed.as_slice() {
        [] => true,
        [(_, only)] => !besides && !is_glob(only),
        _ => false,
    };
    let reaching_out = fields.strings(Role::Glob).into_iter().any(|(_, glob)| {
        let glob = glob.trim();
        glob.starts_with(['/', '\\', '~']) || glob.get(1..2) == Some(":") || glob.contains("..")
    });
    one_listed && !reaching_out
}

fn is_glob(value: &str) -> bool {
    value.contains(['*', '?', '[', '{'])
}

/// A glob the agent expands relative to its folder, made absolute when it can be.
fn joined(glob: &str, base: Option<&str>) -> String {
    match base {
        Some(base) if !glob.starts_with(['/', '\\']) => {
            format!("{}/{glob}", paths::normalize(base, None))
        }
        _ => glob.to_owned(),
    }
}

/// The globs a search tool expands on its own (`Glob`'s `pattern`, `Grep`'s `glob`, opencode's
/// `include`), joined to the folder it searches.
fn globs(fields: &Fields<'_>, cwd: Option<&str>) -> Vec<String> {
    let base = fields
        .first(Role::Root)
        .or_else(|| fields.first(Role::Tree))
        .map(|root| paths::normalize(root, cwd))
        .or_else(|| cwd.map(|c| paths::normalize(c, None)));
    fields
        .strings(Role::Glob)
        .into_iter()
        .map(|(_, glob)| match &base {
            Some(base) if !glob.starts_with(['/', '\\']) => format!("{base}/{glob}"),
            _ => glob.to_owned(),
        })
        .collect()
}

/// What a file change writes: its content, each new text (`edits` too), a diff's added lines.
pub fn contents(input: &Value) -> Vec<String> {
    const WRITTEN: [&str; 7] = [
        "content",
        "file_text",
        "new_string",
        "newString",
        "new_str",
        "new_source",
        "ai_proposed_content",
    ];
    let texts = |value: &Value| -> Vec<String> {
        WRITTEN
            .iter()
            .filter_map(|key| value.get(*key).and_then(Value::as_str))
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut out = texts(input);
    if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        out.extend(edits.iter().flat_map(texts));
    }
    if let Some(diff) = text(input, &["diff"]) {
        out.push(added_lines(diff));
    }
    out
}

/// The lines a unified diff or a Codex patch adds, joined.
pub fn added_lines(diff: &str) -> String {
    diff.lines()
        .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
        .map(|line| &line[1..])
        .collect::<Vec<_>>()
        .join("\n")
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
