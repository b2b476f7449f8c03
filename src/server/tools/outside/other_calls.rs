//! A Codex patch, a network call, and a question put to the person.

use super::catalog::Role;
use super::fields::Fields;
use super::{OutsideCall, after_cd, patch, patch_files, path_subjects};
use crate::protocol::ToolClass;
use crate::server::tools::Subject;

/// A patch tool's call: every file the patch touches (it may come as the command that runs
/// it, `apply_patch <<'EOF' …`).
pub fn patch_call(class: ToolClass, fields: &Fields<'_>, cwd: Option<&str>) -> OutsideCall {
    let text = fields.first(Role::Patch).unwrap_or("");
    let (base, body) = match patch::in_command(text) {
        Some((dir, body)) => (after_cd(cwd, dir.as_deref()), body),
        None => (cwd.map(str::to_owned), text.to_owned()),
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
    OutsideCall {
        rule_subject: match files.as_slice() {
            [one] => Some(Subject::Path(one.clone())),
            _ => None,
        },
        floor_contents: vec![super::file_calls::added_lines(&body)],
        floor_subjects: files.iter().flat_map(|f| path_subjects(f)).collect(),
        unreadable,
        diff: (!text.is_empty()).then(|| text.to_owned()),
        ..OutsideCall::of(class, summary)
    }
}

/// A network call: a rule names its URL (or query) exactly, or by a prefix a person writes.
pub fn network_call(class: ToolClass, tool: &str, fields: &Fields<'_>) -> OutsideCall {
    let target = fields.first(Role::Target).map(str::trim);
    OutsideCall {
        rule_subject: target.map(|t| Subject::Command(t.to_owned())),
        ..OutsideCall::of(
            class,
            match target {
                Some(target) => format!("{tool} {target}"),
                None => tool.to_owned(),
            },
        )
    }
}

/// A question put to the person (`request_approval`): its words are read by the floor for
/// the commands and paths they propose, and a command it carries is read as one.
pub fn decision_call(class: ToolClass, tool: &str, fields: &Fields<'_>) -> OutsideCall {
    let title = fields
        .strings(Role::Prose)
        .into_iter()
        .find(|(key, _)| *key == "title")
        .map(|(_, t)| t.to_owned());
    OutsideCall {
        floor_subjects: fields
            .strings(Role::Command)
            .into_iter()
            .map(|(_, c)| Subject::Command(c.trim().to_owned()))
            .collect(),
        floor_texts: fields
            .strings(Role::Prose)
            .into_iter()
            .map(|(_, t)| t.to_owned())
            .collect(),
        ..OutsideCall::of(class, title.unwrap_or_else(|| tool.to_owned()))
    }
}
