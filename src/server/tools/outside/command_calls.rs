//! A command: the shell code it runs (an argv quoted as exec runs it), where it runs, what a
//! patch it applies touches; and text typed into a running shell, read as the command lines
//! it submits.

use super::catalog::Role;
use super::fields::Fields;
use super::{OutsideCall, after_cd, keys, patch, patch_files, path_subjects, paths, quote};
use crate::protocol::ToolClass;
use crate::server::tools::Subject;

/// Reads an exec-class call (or a config one).
pub fn describe(
    class: ToolClass,
    tool: &str,
    fields: &Fields<'_>,
    cwd: Option<&str>,
) -> OutsideCall {
    if fields.spec.is_some_and(|spec| spec.has(Role::ShellInput)) {
        return typed(class, tool, fields);
    }
    let named: Vec<&str> = fields
        .strings(Role::Commands)
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    let command = command_of(fields).or_else(|| named.first().map(|c| (*c).to_owned()));
    // A shell tool told to run in another folder (Gemini's `dir_path`, Qwen's `directory`,
    // Codex's `workdir`) runs there: the floor, the rules and the card read the command as
    // `cd <folder> && <command>`, so a path relative to that folder is seen where it is.
    let folders = folder_fields(fields);
    let command = match (command, folders.first()) {
        (Some(command), Some(dir)) => Some(format!("cd {} && {command}", quote(dir))),
        (command, _) => command,
    };
    // Every command opencode's patterns name is checked, not only the first.
    let mut floor_subjects: Vec<Subject> = command
        .iter()
        .cloned()
        .chain(named.iter().skip(1).map(|c| (*c).to_owned()))
        .map(Subject::Command)
        .collect();
    let (named_subjects, floor_globs, floor_trees) = named_paths(fields, cwd);
    floor_subjects.extend(named_subjects);
    let patched = command.as_deref().map(|c| patched_files(c, cwd));
    if let Some(Ok(files)) = &patched {
        floor_subjects.extend(files.iter().flat_map(|f| path_subjects(f)));
    }
    let unreadable = patched
        .and_then(Result::err)
        .or_else(|| fields.spec.and_then(|spec| spec.unread).map(str::to_owned))
        .or_else(|| program_unread(fields))
        .or_else(|| folders_unread(&folders));
    OutsideCall {
        floor_subjects,
        floor_globs,
        floor_trees,
        unreadable,
        // A grant covers its command in the sandbox or out (Codex asks only about runs out of
        // it, so its grants are made for those); the history reviewer keeps them apart.
        rule_subject: command.clone().map(Subject::Command),
        leaves_sandbox: leaves_the_sandbox(fields),
        floor_texts: fields
            .strings(Role::Prose)
            .into_iter()
            .map(|(_, t)| t.to_owned())
            .collect(),
        ..OutsideCall::of(class, command.unwrap_or_else(|| tool.to_owned()))
    }
}

/// Whether the call asks to run outside its agent's sandbox, or with the sandbox widened
/// (`additional_permissions` granting anything): any such field set to other than `false`,
/// nothing or Codex's `use_default`.
fn leaves_the_sandbox(fields: &Fields<'_>) -> bool {
    fields
        .values(Role::SandboxEscape)
        .chain(fields.values(Role::NestedPaths))
        .any(grants_anything)
}

/// Whether a sandbox field's value asks for anything: `true`, a number but 0, a string but
/// `false`/`use_default`, or a list or object holding one of these.
fn grants_anything(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => {
            let s = s.trim();
            !(s.is_empty() || s.eq_ignore_ascii_case("false") || s == "use_default")
        }
        Value::Array(items) => items.iter().any(grants_anything),
        Value::Object(fields) => fields.values().any(grants_anything),
    }
}

/// Every path a command call names (opencode's `external_directory`, Gemini's
/// `plan_filename`), and the paths a sandbox is asked to open up for the command (Gemini's
/// `additional_permissions`): as floor subjects, and, where they hold a wildcard, as globs
/// and the folders before them. opencode's `external_directory` patterns are globs whose `*`
/// crosses `/` and dots (`/home/me/*` grants all of the home folder): read as globs, and the
/// folder before the first wildcard as a whole tree.
fn named_paths(fields: &Fields<'_>, cwd: Option<&str>) -> (Vec<Subject>, Vec<String>, Vec<String>) {
    let named = [
        Role::Path,
        Role::Root,
        Role::Tree,
        Role::Container,
        Role::Paths,
    ]
    .into_iter()
    .flat_map(|role| fields.strings(role).into_iter().map(|(_, p)| p))
    .chain(fields.nested_strings(Role::NestedPaths));
    let (mut subjects, mut globs, mut trees) = (Vec::new(), Vec::new(), Vec::new());
    for path in named {
        let Some(wild) = path.find(['*', '?', '[', '{']) else {
            subjects.extend(path_subjects(&paths::normalize(path, cwd)));
            continue;
        };
        globs.push(paths::normalize(path, cwd));
        let folder = path[..wild].rsplit_once(['/', '\\']).map_or("", |(f, _)| f);
        let folder = if folder.is_empty() && path.starts_with('/') {
            "/"
        } else {
            folder
        };
        trees.push(paths::normalize(
            if folder.is_empty() { "." } else { folder },
            cwd,
        ));
    }
    (subjects, globs, trees)
}

/// Why the folders a call names to run in cannot be read as the one it runs in.
fn folders_unread(folders: &[&str]) -> Option<String> {
    match folders {
        [_, _, ..] => Some(
            "names more than one folder to run in, and which one the agent uses cannot be told, \
             so it always asks"
                .to_owned(),
        ),
        [one] if one.trim() != *one => Some(
            "names its folder with spaces around it, which may not be the folder it runs in, so \
             it always asks"
                .to_owned(),
        ),
        _ => None,
    }
}

/// Codex's exec runs the command with the program it names: only a shell the floor reads.
fn program_unread(fields: &Fields<'_>) -> Option<String> {
    let program = fields.first(Role::Program)?;
    (!is_shell(program)).then(|| {
        format!(
            "runs its command with `{program}`, which the safety floor does not read as a shell, so it always asks"
        )
    })
}

/// Whether a shell's one flag makes it run the next word as a command line: a short-option
/// cluster holding `c` (`-c`, `-lc`, `-ec`). A long option that merely spells a `c`
/// (`--norc`, `--restricted`) makes it run the FILE of that name as a script instead.
fn runs_its_argument(flag: &str) -> bool {
    flag.strip_prefix('-').is_some_and(|letters| {
        !letters.is_empty()
            && letters.chars().all(|c| c.is_ascii_alphabetic())
            && letters.contains('c')
    })
}

/// The command the input runs: a string (trimmed), or Codex's exec form: `["bash", "-lc",
/// "npm test"]` is its script, any other argv is run word by word, so it is quoted word by
/// word (`["env", "bash", "-c", "rm -rf x"]` is not `bash -c rm …`).
fn command_of(fields: &Fields<'_>) -> Option<String> {
    if let Some(command) = fields
        .values(Role::Command)
        .filter_map(|v| v.as_str())
        .find(|c| !c.trim().is_empty())
    {
        return Some(command.trim().to_owned());
    }
    let words = fields.values(Role::Command).find_map(|v| v.as_array())?;
    let words: Vec<&str> = words.iter().filter_map(|w| w.as_str()).collect();
    match words.as_slice() {
        [shell, flag, script] if runs_its_argument(flag) && is_shell(shell) => {
            Some((*script).to_owned())
        }
        [] => None,
        _ => Some(words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")),
    }
}

/// Whether `program` is a shell the floor reads (by name or path).
pub fn is_shell(program: &str) -> bool {
    // A shell by its bare name (found on PATH) or in a system folder: `./bash` or
    // `/tmp/x/sh` is a program of the agent's own, whatever its name says.
    let (folder, name) = program.rsplit_once('/').unwrap_or(("", program));
    let system = matches!(
        folder,
        "" | "/bin" | "/usr/bin" | "/usr/local/bin" | "/opt/homebrew/bin"
    ) && !(folder.is_empty() && program.contains('/'));
    system && matches!(name, "bash" | "sh" | "zsh" | "dash")
}

/// The folders a shell call says to run in, each non-empty value once.
fn folder_fields<'a>(fields: &Fields<'a>) -> Vec<&'a str> {
    let mut folders: Vec<&str> = Vec::new();
    for (_, dir) in fields.strings(Role::RunIn) {
        if !folders.contains(&dir) {
            folders.push(dir);
        }
    }
    folders
}

/// A command that runs apply_patch writes files: every one it names; `Err` when its patch
/// cannot be read.
fn patched_files(command: &str, cwd: Option<&str>) -> Result<Vec<String>, String> {
    if !(command.contains("apply_patch") || command.contains("applypatch")) {
        return Ok(Vec::new());
    }
    match patch::in_command(command) {
        Some((dir, body)) => patch_files(&body, after_cd(cwd, dir.as_deref()).as_deref())
            .map_err(|why| format!("runs a patch that cannot be read ({why})")),
        None => Err("runs apply_patch in a form that cannot be read".to_owned()),
    }
}

/// Text typed into a running shell: the command lines it submits, read like any command.
fn typed(class: ToolClass, tool: &str, fields: &Fields<'_>) -> OutsideCall {
    let input = fields.first(Role::ShellInput).unwrap_or("");
    let unread = fields.spec.and_then(|spec| spec.unread).map(str::to_owned);
    match keys::typed(input) {
        Ok(lines) if unread.is_none() => OutsideCall {
            floor_subjects: vec![Subject::Command(lines.clone())],
            shell_input: true,
            rule_subject: Some(Subject::Command(lines.clone())),
            ..OutsideCall::of(
                class,
                format!("type into a running shell: {}", lines.replace('\n', " ⏎ ")),
            )
        },
        Ok(_) => OutsideCall {
            unreadable: unread,
            ..OutsideCall::of(class, format!("{tool}: {input}"))
        },
        Err(why) => OutsideCall {
            unreadable: Some(format!(
                "types into a running shell and {why}, so it always asks"
            )),
            ..OutsideCall::of(class, format!("{tool}: {input}"))
        },
    }
}
