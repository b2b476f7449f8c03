//! The history reviewer (issue 40, point 3): no model, only this workspace's past answers. It
//! predicts `approve` when the person approved the same subject — a program and its
//! subcommand, or a file pattern — at least [`MIN_APPROVALS`] times and never denied or edited
//! it; anything else goes to the person.
//!
//! What a card is matched by ([`subject_of`]):
//! - a shell command: its program (`/usr/bin/git` is `git`; `./git` stays `./git`, a program of
//!   the workspace's own), then for programs that have subcommands (`git`, `cargo`, `npm` …,
//!   [`SUBCOMMAND_PROGRAMS`]) the first word after it that is not an option, a path or a number,
//!   skipping the values of the global options that take one (`git -C dir status` is
//!   `git status`). Options are left out (`ls -la` is `ls`, `cargo test -p x` is
//!   `cargo test`) but for the risky ones ([`RISKY_OPTIONS`], and the letters `f r R D` in a
//!   short cluster): they make a subject of their own, so `git push` approved ten times says
//!   nothing of `git push --force`. Variables set for it (`X=1 git status`,
//!   `env X=1 git status`) are named in it (`X=… git status`).
//! - a pipeline or list (`|`, `&&`, `||`, `;`) of plain commands that each have a subject:
//!   the parts' subjects with the operators between (`cargo test | tail`, `cd && cargo
//!   build`) — a subject of its own, approved five times as a whole, never because its parts
//!   were (`curl x | sh` owes nothing to `curl`). Only redirects that write nothing
//!   (`2>&1`, `>/dev/null`, `2>/dev/null`) may stand in it or beside a single command, and
//!   are left out of the subject; a part that writes what is piped to it (`tee`,
//!   [`NOT_IN_COMPOUND`]) or runs code (an interpreter, [`INTERPRETERS`]) leaves the whole
//!   without one.
//! - a command with any other redirect, a substitution, a here-document, a subshell, group,
//!   loop or background `&`, or that runs another command (`sudo`, `bash -c`, `xargs` …,
//!   [`WRAPPERS`]) or code given on the line (`python -c`, `node -e`, [`INLINE_CODE`]), or
//!   whose program or subcommand is only known when it runs, has none: it always goes to the
//!   person.
//! - a file: its folder and extension (`src/server/*.rs`); a file with no extension, or a dot
//!   file, exactly (`Makefile`, `.env`).
//! - decision, config and network cards have none.

use async_trait::async_trait;

use super::{PastAnswer, Prediction, ReviewInput, Reviewer};
use crate::protocol::{ApprovalRequestBody, GateKind, ToolClass};
use crate::server::shell_syntax::{self, Word};
use crate::server::tools::{self, Subject};

mod compound;

/// Approvals of one subject, with no refusal, before the history reviewer predicts `approve`.
pub const MIN_APPROVALS: usize = 5;

/// Programs that take a subcommand, each with its global options that take a value (skipped
/// with that value when looking for the subcommand).
pub const SUBCOMMAND_PROGRAMS: &[(&str, &[&str])] = &[
    (
        "git",
        &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
    ),
    ("cargo", &["-Z", "--config", "-C", "--color"]),
    ("npm", &["--prefix", "-w", "--workspace"]),
    ("pnpm", &["-C", "--dir", "--filter", "-F"]),
    ("yarn", &["--cwd"]),
    ("bun", &["--cwd"]),
    ("npx", &["-p", "--package"]),
    ("go", &[]),
    ("rustup", &[]),
    ("uv", &["--directory", "--project"]),
    ("pip", &[]),
    ("pip3", &[]),
    ("poetry", &["-C", "--directory"]),
    ("docker", &["-H", "--host", "--context", "-c", "--config"]),
    (
        "kubectl",
        &["-n", "--namespace", "--context", "--kubeconfig"],
    ),
    ("gh", &["-R", "--repo"]),
    ("terraform", &[]),
    ("helm", &["-n", "--namespace", "--kube-context"]),
    ("dotnet", &[]),
    ("apt", &[]),
    ("apt-get", &[]),
    ("brew", &[]),
    ("systemctl", &[]),
];

/// Options that change what a command does enough to be a subject of their own (compared
/// before any `=value`).
pub const RISKY_OPTIONS: &[&str] = &[
    "--force",
    "--force-with-lease",
    "--force-if-includes",
    "--hard",
    "--no-verify",
    "--delete",
    "--mirror",
    "--prune",
    "--recursive",
    "--global",
    "--system",
    "--config",
    "-c",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--no-preserve-root",
    "--privileged",
    "-delete",
    "-exec",
    "-execdir",
    "-ok",
];

/// Letters of a short option cluster (`-rf`) that make a subject of their own.
const RISKY_LETTERS: &str = "fFrRD";

/// Programs that run another command, or code given as text: what they run is not their
/// subject, so they have none.
pub const WRAPPERS: &[&str] = &[
    "sudo", "doas", "su", "env", "nice", "nohup", "time", "timeout", "xargs", "exec", "command",
    "builtin", "eval", "source", ".", "export", "bash", "sh", "zsh", "dash", "fish", "ksh", "ssh",
    "watch", "strace", "parallel", "script", "busybox",
];

/// Folders whose programs are the ones their name says (`/usr/bin/git` is `git`).
const SYSTEM_BIN: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/opt/homebrew/bin",
];

/// The key a card is matched by in past answers; `None` when it has none (it then always goes
/// to the person). See the module's comment for the rules.
pub fn subject_of(card: &ApprovalRequestBody) -> Option<String> {
    if card.decision_kind.is_some()
        || matches!(card.kind, GateKind::Decision | GateKind::Budget)
        || !matches!(
            card.class,
            ToolClass::Read | ToolClass::Edit | ToolClass::Exec
        )
    {
        return None;
    }
    let subject = match card.kind {
        GateKind::External => outside_subject(card)?,
        _ => tools::get(&card.tool)?.subject(&card.args)?,
    };
    match subject {
        Subject::Command(command) => command_subject(&command),
        Subject::Path(path) => path_pattern(&path),
    }
}

/// An outside agent's call as its own tool reads it (the subject a standing rule would
/// match); none when it cannot be read the way the agent will run it, or is typed into a
/// running shell.
fn outside_subject(card: &ApprovalRequestBody) -> Option<Subject> {
    let call = tools::outside::describe_as(card.class, &card.tool, &card.args, None);
    if call.unreadable.is_some() || call.unknown_tool.is_some() || call.shell_input {
        return None;
    }
    call.rule_subject
}

/// A file's folder and extension as a glob (`src/server/*.rs`), or the path itself when it
/// has no extension or is a dot file.
fn path_pattern(path: &str) -> Option<String> {
    let path = path.trim_start_matches("./");
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let extension = name
        .rsplit_once('.')
        .filter(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
        .map(|(_, ext)| ext);
    let pattern = match extension {
        Some(ext) if dir.is_empty() => format!("*.{}", globset::escape(ext)),
        Some(ext) => format!("{}/*.{}", globset::escape(dir), globset::escape(ext)),
        None => globset::escape(path),
    };
    (!pattern.is_empty() && !crate::text::has_hidden(&pattern)).then_some(pattern)
}

/// A shell command line's subject: one plain command's (`X=… git push --force`), or for a
/// pipeline or list of them each part's with the operators between (`cd && cargo build`,
/// `cargo test | tail`) — a subject of its own, never covered by its parts' approvals. `None`
/// when the line or any part of it has none, or a part is one a compound must not hold
/// ([`NOT_IN_COMPOUND`], or an interpreter given code: [`runs_code`]).
fn command_subject(command: &str) -> Option<String> {
    shell_syntax::read(command).ok()?;
    let pieces = compound::pieces(command)?;
    let single = pieces.len() == 1;
    let mut subject = String::new();
    for piece in pieces {
        match piece {
            compound::Piece::Command(text) => {
                let (part, words) = plain_subject(text)?;
                if !single && !fits_a_compound(&words) {
                    return None;
                }
                if !subject.is_empty() {
                    subject.push(' ');
                }
                subject.push_str(&part);
            }
            compound::Piece::Operator(";") => subject.push(';'),
            compound::Piece::Operator(op) => {
                subject.push(' ');
                subject.push_str(op);
            }
        }
    }
    Some(subject)
}

/// Programs a pipeline or list may not hold: they write a file from what is piped to them.
pub const NOT_IN_COMPOUND: &[&str] = &["tee", "dd", "sponge", "install", "truncate"];

/// Interpreters: in a pipeline or list they may be running code piped to them or given on
/// the line, which is not what a subject names.
pub const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "perl",
    "ruby",
    "php",
    "lua",
    "Rscript",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "osascript",
    "pwsh",
    "tclsh",
];

/// Whether a part may stand in a pipeline or list: not a program that writes what is piped to
/// it (nor `sed -i`, which rewrites files in place), nor one that runs code (an interpreter).
fn fits_a_compound(words: &[Word]) -> bool {
    let Some(program) = words.first().and_then(program_name) else {
        return false;
    };
    let in_place = program == "sed"
        && words[1..].iter().any(|w| {
            short_cluster(&w.text).is_some_and(|l| l.contains('i'))
                || w.text.starts_with("-i")
                || w.text.starts_with("--in-place")
        });
    !NOT_IN_COMPOUND.contains(&program.as_str()) && !runs_code(&program) && !in_place
}

/// Whether `program` runs code it is given as text or on its input.
fn runs_code(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&name) || INTERPRETERS.contains(&base) || WRAPPERS.contains(&name)
}

/// Options by which an interpreter is given code on the line (`python -c`, `node -e`,
/// `perl -ne` as a cluster holding `c` or `e`).
pub const INLINE_CODE: &[&str] = &[
    "-c",
    "-e",
    "-E",
    "--eval",
    "-p",
    "--print",
    "-r",
    "--command",
];

/// Whether `program` is an interpreter given code on the line: what it runs is that code, not
/// what its name says, so it has no subject (even alone).
fn given_code(program: &str, args: &[Word]) -> bool {
    runs_code(program)
        && args.iter().any(|w| {
            let name = w.text.split_once('=').map_or(w.text.as_str(), |(n, _)| n);
            INLINE_CODE.contains(&name)
                || short_cluster(&w.text).is_some_and(|l| l.contains(['c', 'e']))
        })
}

/// One plain simple command's subject and its words after `env`.
fn plain_subject(command: &str) -> Option<(String, Vec<Word>)> {
    let script = shell_syntax::read(command).ok()?;
    let [only] = script.commands.as_slice() else {
        return None;
    };
    if only.stdin_fed
        || !script.redirect_targets.is_empty()
        || !script.documents.is_empty()
        || only.words.iter().any(|w| w.opaque)
    {
        return None;
    }
    let mut vars: Vec<String> = script.assignments.iter().map(|(n, _)| n.clone()).collect();
    let words = after_env(&only.words, &mut vars)?;
    let (first, args) = words.split_first()?;
    let program = program_name(first)?;
    if WRAPPERS.contains(&program.as_str()) || given_code(&program, args) {
        return None;
    }
    let (subcommand, rest) = subcommand(&program, args)?;
    // A name that reads like shell syntax could forge a compound's subject.
    if [Some(program.as_str()), subcommand]
        .into_iter()
        .flatten()
        .any(|w| {
            w.chars()
                .any(|c| c.is_whitespace() || "|&;<>()`$".contains(c))
        })
    {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    vars.sort();
    vars.dedup();
    parts.extend(vars.iter().map(|v| format!("{v}=…")));
    parts.push(program);
    parts.extend(subcommand.map(str::to_owned));
    parts.extend(risky_options(args, rest));
    let subject = parts.join(" ");
    (!crate::text::has_hidden(&subject)).then_some((subject, words.to_vec()))
}

/// The words after `env NAME=value …` (the names added to `vars`); `None` when `env` is given
/// options (what they do to the command is not read here).
fn after_env<'a>(words: &'a [Word], vars: &mut Vec<String>) -> Option<&'a [Word]> {
    let Some(first) = words.first() else {
        return Some(words);
    };
    if program_name(first).as_deref() != Some("env") {
        return Some(words);
    }
    let mut rest = &words[1..];
    while let Some(word) = rest.first() {
        if word.dynamic || word.text.starts_with('-') {
            return None;
        }
        match word.text.split_once('=') {
            Some((name, _)) if is_variable_name(name) => vars.push(name.to_owned()),
            _ => break,
        }
        rest = &rest[1..];
    }
    Some(rest)
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The program a word names: a system folder's program by its name, any other path as
/// written; `None` when only known when it runs.
fn program_name(word: &Word) -> Option<String> {
    if word.dynamic || word.text.is_empty() {
        return None;
    }
    let text = word.text.as_str();
    match text.rsplit_once('/') {
        Some((dir, name)) if SYSTEM_BIN.contains(&dir) && !name.is_empty() => Some(name.into()),
        _ => Some(text.to_owned()),
    }
}

/// The subcommand of `program` among `args` (for programs that take one), and where the
/// words after it start; `None` when the subcommand is only known when it runs.
fn subcommand<'a>(program: &str, args: &'a [Word]) -> Option<(Option<&'a str>, usize)> {
    let Some((_, takes_value)) = SUBCOMMAND_PROGRAMS.iter().find(|(p, _)| *p == program) else {
        return Some((None, 0));
    };
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if word.dynamic {
            return None;
        }
        if text == "--" {
            return Some((None, at));
        }
        if text.starts_with('-') || text.starts_with('+') {
            at += if takes_value.contains(&text) { 2 } else { 1 };
            continue;
        }
        if looks_like_path_or_number(text) {
            return Some((None, at));
        }
        return Some((Some(text), at + 1));
    }
    Some((None, at))
}

fn looks_like_path_or_number(text: &str) -> bool {
    text.contains('/')
        || text.starts_with('.')
        || text.starts_with('~')
        || text.chars().all(|c| c.is_ascii_digit())
}

/// The risky options among `args` (up to a `--`), sorted, each once; and a `+ref` after the
/// subcommand (`git push origin +main` forces).
fn risky_options(args: &[Word], after_subcommand: usize) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (at, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        let name = text.split_once('=').map_or(text, |(name, _)| name);
        if RISKY_OPTIONS.contains(&name) {
            found.push(name.to_owned());
        } else if let Some(letters) = short_cluster(text) {
            found.extend(
                letters
                    .chars()
                    .filter(|c| RISKY_LETTERS.contains(*c))
                    .map(|c| format!("-{c}")),
            );
        } else if at >= after_subcommand && text.starts_with('+') && text.len() > 1 {
            found.push("+…".into());
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The letters of a short option cluster (`-la` → `la`), not a number (`-20`).
fn short_cluster(text: &str) -> Option<&str> {
    let letters = text.strip_prefix('-')?;
    (!letters.is_empty()
        && !letters.starts_with('-')
        && letters.chars().all(|c| c.is_ascii_alphabetic()))
    .then_some(letters)
}

/// Pure: the history reviewer's prediction for `card`, its reason naming the evidence.
pub fn predict(card: &ApprovalRequestBody, past: &[PastAnswer]) -> Prediction {
    let Some(subject) = subject_of(card) else {
        return Prediction::escalate(no_subject_reason(card));
    };
    let same: Vec<&PastAnswer> = past
        .iter()
        .filter(|p| p.subject.as_deref() == Some(subject.as_str()))
        .collect();
    let refused = same
        .iter()
        .filter(|p| p.class == card.class && p.refused)
        .count();
    let approved = same
        .iter()
        .filter(|p| p.tool.eq_ignore_ascii_case(&card.tool) && p.approved && !p.refused)
        .count();
    let shown = shown_subject(&subject);
    if refused > 0 {
        return Prediction::escalate(format!(
            "{shown} was denied or edited here before ({refused} {})",
            times(refused)
        ));
    }
    match approved {
        0 => Prediction::escalate(format!("{shown} never approved here before")),
        n if n < MIN_APPROVALS => Prediction::escalate(format!(
            "{shown} approved only {n} {} here ({MIN_APPROVALS} needed)",
            times(n)
        )),
        n => Prediction::approve(format!("{shown} approved {n} times here, never denied")),
    }
}

fn times(n: usize) -> &'static str {
    if n == 1 { "time" } else { "times" }
}

/// The subject in backticks, cut to one short line.
fn shown_subject(subject: &str) -> String {
    const MAX: usize = 80;
    let text: String = subject.chars().take(MAX).collect();
    let cut = if subject.chars().count() > MAX {
        "…"
    } else {
        ""
    };
    format!("`{}{cut}`", text.replace('`', "'"))
}

fn no_subject_reason(card: &ApprovalRequestBody) -> String {
    match card.class {
        _ if card.decision_kind.is_some() => "a decision is always the person's to make".into(),
        ToolClass::Decision => "a decision is always the person's to make".into(),
        ToolClass::Config => "a configuration change always goes to the person".into(),
        ToolClass::Network => "a network call always goes to the person".into(),
        ToolClass::Exec => "not a plain command, pipeline or list the history reviewer can match \
             (a substitution, a redirect to a file, a here-document, a wrapped command or code \
             given to an interpreter): it goes to the person"
            .into(),
        ToolClass::Read | ToolClass::Edit => {
            "the history reviewer cannot read which file this is".into()
        }
    }
}

/// The history reviewer: [`predict`] on the input's past answers. It never fails.
#[derive(Clone, Copy, Debug, Default)]
pub struct HistoryReviewer;

#[async_trait]
impl Reviewer for HistoryReviewer {
    async fn predict(&self, input: &ReviewInput) -> Option<Prediction> {
        Some(predict(&input.card, &input.past))
    }
}

#[cfg(test)]
mod tests;
