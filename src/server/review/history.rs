//! The history reviewer (issue 40, point 3): no model, only this workspace's past answers. It
//! predicts `approve` only when a person approved the very same command or file — word for
//! word — at least [`MIN_APPROVALS`] times and never denied or edited it; anything else goes
//! to the person. (Issue 40 says "the same program and subcommand"; a red-team showed how far
//! that reaches — `make test` approving `make install PREFIX=/usr`, `git stash list` approving
//! `git stash clear` — so the subject is the exact command: docs/deviations.md.)
//!
//! What a card is matched by ([`subject_of`]):
//! - a shell command: its whole word list, in order — the program (`/usr/bin/git` is `git`;
//!   `./git` stays `./git`, a program of the workspace's own), then every argument as the
//!   program receives it (quoted where it holds anything but plain characters, so two lists
//!   never read the same; a program holding `=` always quoted, so `'X=1' git status`, a
//!   program named `X=1`, never reads as a variable) — after the variables set for it
//!   (`X=1 git status`, `env X=1 git status`), each by name and value.
//! - a pipeline or list (`|`, `|&`, `&&`, `||`, `;`) of plain commands that each have a
//!   subject: the parts' subjects with the operators between — a subject of its own,
//!   approved five times as a whole, never because its parts were (`curl x | sh` owes
//!   nothing to `curl`).
//!   Only redirects that write nothing (`2>&1`, `>/dev/null`, `2>/dev/null`) may stand in it or
//!   beside a single command, and are left out of the subject — but before a pipe `2>&1`
//!   makes it `|&`, and one that empties the pipe leaves no subject ([`compound`]); a part
//!   that writes what is piped to it (`tee`, [`NOT_IN_COMPOUND`]) or runs code (an
//!   interpreter, [`INTERPRETERS`]) leaves the whole without one, and a part that reads the
//!   pipe must be a filter that writes and runs nothing ([`pipe_readers`], an allowlist).
//! - a line holding a blank bash and tree-sitter part words at differently (`\ `, a vertical
//!   tab, a form feed, a no-break space: [`holds_an_odd_blank`]) has none.
//! - a command with any other redirect, a substitution, an expansion or glob, a `~` the
//!   shell expands to a home folder (`ls ~`, `X=~`; `ls '~'` is literal), a `+=` (its value
//!   starts with one only known when it runs), a here-document, a subshell, group, loop or
//!   background `&`, or that runs another command (`sudo`, `bash -c`, `xargs` …,
//!   [`WRAPPERS`]) or code given on the line (`python -c`, `node -e`, [`INLINE_CODE`]), or
//!   whose arguments are code or hidden writes (`awk`, `sed -i` or a `sed` script with
//!   `e`/`w`, `find -exec`/`-delete`: [`programs`]) has none: it always goes to the person.
//! - an outside agent's call is headed by the agent's name, and a command's by its folder and
//!   whether it leaves its agent's sandbox: `⟨codex in /home/me/app, outside the sandbox⟩ npm
//!   test` (no name, or a command with no plain absolute folder: none). Past answers so count
//!   within one agent, one folder and one side of the sandbox.
//! - a file: its exact normalized path — absolute for an outside agent (a relative path has no
//!   subject), relative to the workspace for the built-in agent — never a folder or extension pattern; and none when
//!   the path is not written already normal (a `\`, a `.` or `..` segment, `//`, a trailing
//!   `/`: [`is_normal_path`]), nor for an edit of a file that decides what a later command runs
//!   (`package.json`, a `Makefile`, CI files, hooks, scripts: [`runs_what`]); none for a read
//!   of several paths, nor for a search whose glob is absolute or holds `..`.
//! - decision, config and network cards have none.
//!
//! Its reasons are its own words ("this exact command was approved only 3 times here (5
//! needed)"): nothing of the card's text, which the agent wrote, is in them.

use async_trait::async_trait;

use super::{PastAnswer, Prediction, ReviewInput, Reviewer};
use crate::protocol::{ApprovalRequestBody, GateKind, ToolClass};
use crate::server::shell_syntax::{self, Word};
use crate::server::tools::{self, Subject};

mod compound;
pub mod pipe_readers;
pub mod programs;
pub mod runs_what;

/// Approvals of one subject, with no refusal, before the history reviewer predicts `approve`.
pub const MIN_APPROVALS: usize = 5;

/// Programs that run another command, or code given as text: what they run is not their
/// subject, so they have none.
pub const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "su",
    "env",
    "nice",
    "nohup",
    "time",
    "timeout",
    "xargs",
    "exec",
    "command",
    "builtin",
    "eval",
    "source",
    ".",
    "export",
    "bash",
    "sh",
    "zsh",
    "dash",
    "fish",
    "ksh",
    "ssh",
    "watch",
    "strace",
    "parallel",
    "script",
    "busybox",
    "mksh",
    "tcsh",
    "csh",
    "ash",
    "yash",
    "posh",
    "nu",
    "elvish",
    "xonsh",
    "stdbuf",
    "setsid",
    "flock",
    "ionice",
    "taskset",
    "unshare",
    "chrt",
    "systemd-run",
    "firejail",
    "coproc",
    "nsenter",
    "chroot",
    "runuser",
    "setpriv",
    "bwrap",
    "ltrace",
    "unbuffer",
    "rlwrap",
    "xvfb-run",
    "dbus-run-session",
    "npx",
    "bunx",
    "pnpx",
    "uvx",
    "pipx",
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
    let outside = card.kind == GateKind::External;
    if outside {
        return outside_agents_subject(card);
    }
    match tools::get(&card.tool)?.subject(&card.args)? {
        Subject::Command(command) => command_subject(&command),
        Subject::Path(path) => file_subject(card, &path, false),
    }
}

/// An outside agent's subject: which agent, where, and whether it leaves its sandbox, then
/// the command or the absolute path — `⟨codex in /home/me/app⟩ git status`. Past answers
/// count only within one agent (its tool, its sandbox), one folder and one side of the
/// sandbox. A built-in subject never holds an unquoted `⟨`, so never reads as one of these.
/// None without the agent's name or a plain folder for a command.
fn outside_agents_subject(card: &ApprovalRequestBody) -> Option<String> {
    let source = card.source.as_deref().filter(|s| is_plain_source(s))?;
    match outside_subject(card)? {
        Subject::Command(command) => {
            let folder = working_folder(card)?;
            let sandbox = match leaves_sandbox(card) {
                true => ", outside the sandbox",
                false => "",
            };
            let command = command_subject(&command)?;
            Some(format!(
                "⟨{source} in {}{sandbox}⟩ {command}",
                quoted(folder)
            ))
        }
        Subject::Path(path) => {
            let path = file_subject(card, &path, true)?;
            Some(format!("⟨{source}⟩ {path}"))
        }
    }
}

/// An agent's name as a gate checks it: lowercase letters, digits and `-`.
fn is_plain_source(source: &str) -> bool {
    !source.is_empty()
        && source
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A read or edit's subject: the exact path when written plainly, never for an edit of a file
/// that decides what runs.
fn file_subject(card: &ApprovalRequestBody, path: &str, outside: bool) -> Option<String> {
    if !written_plainly(card) {
        return None;
    }
    let path = exact_path(path, outside)?;
    let runs = card.class == ToolClass::Edit && runs_what::decides_what_runs(&path);
    (!runs).then_some(path)
}

/// Where an outside agent's command runs, when its card names it plainly: an absolute,
/// already normal folder ([`is_normal_path`], no hidden character). The same words in
/// another folder are another command (`git clean -fdx` in a scratch folder and in a
/// thesis), so a command without one has no subject.
fn working_folder(card: &ApprovalRequestBody) -> Option<&str> {
    let folder = card.cwd.as_deref()?;
    let plain =
        folder.starts_with('/') && is_normal_path(folder) && !crate::text::has_hidden(folder);
    plain.then_some(folder)
}

/// Whether the card's one path is written as it is meant, already normal: no `\`, no `.` or
/// `..` segment, no `//`, no trailing `/`, nothing normalizing would change (a Windows name's
/// trailing dot). Else normalizing its text could make it another file's subject
/// (`a/../b.rs` is `b.rs` only if `a` is no symlink), so it has none.
fn written_plainly(card: &ApprovalRequestBody) -> bool {
    let written = match card.kind {
        GateKind::External => tools::outside::written_path(&card.tool, &card.args),
        _ => card
            .args
            .get("path")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
    };
    written.is_some_and(|path| is_normal_path(&path))
}

/// `path` is already normal: what [`written_plainly`] asks of a card's path.
pub fn is_normal_path(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && !path.contains("//")
        && (path == "/" || !path.ends_with('/'))
        && path
            .split('/')
            .all(|segment| segment != "." && segment != "..")
        && {
            // A drive's path (`C:/x`) is normalized as `/c:/x` (only the letter's case
            // changes), and is otherwise as written.
            let normal = tools::outside::paths::normalize(path, None);
            normal == path
                || normal
                    .strip_prefix('/')
                    .is_some_and(|n| n.eq_ignore_ascii_case(path))
        }
}

/// The file a read or edit card acts on, normalized (`./a/../b.rs` is `b.rs`), whether or not
/// it is a subject: what the model reviewer is shown as `path`, so it judges the file the
/// card's tool will touch rather than a name in the arguments.
pub fn file_path(card: &ApprovalRequestBody) -> Option<String> {
    if !matches!(card.class, ToolClass::Read | ToolClass::Edit) {
        return None;
    }
    let subject = match card.kind {
        GateKind::External => outside_subject(card)?,
        _ => tools::get(&card.tool)?.subject(&card.args)?,
    };
    match subject {
        Subject::Path(path) => Some(tools::outside::paths::normalize(&path, None)),
        Subject::Command(_) => None,
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

/// Whether an outside call asks to leave its sandbox: such a run is another command than the
/// same words inside it, so five sandboxed approvals say nothing of it.
fn leaves_sandbox(card: &ApprovalRequestBody) -> bool {
    card.kind == GateKind::External
        && tools::outside::describe_as(card.class, &card.tool, &card.args, None).leaves_sandbox
}

/// A file's exact normalized path: never a pattern, so five approved writes of one file say
/// nothing of its neighbours. An outside agent's path must be absolute: the gate's working
/// directory is not kept on its card, and a relative path read against none could name any
/// file (`settings.json` in `/root/.config/Code/User`), so it has no subject.
fn exact_path(path: &str, outside: bool) -> Option<String> {
    let path = tools::outside::paths::normalize(path, None);
    // Normalized, every absolute path (a drive's, a share's) starts with `/`.
    let absolute = path.starts_with('/');
    if (outside && !absolute) || path == "." || crate::text::has_hidden(&path) {
        return None;
    }
    Some(path)
}

/// A shell command line's subject: one plain command's (`X=… git push --force`), or for a
/// pipeline or list of them each part's with the operators between (`cd && cargo build`,
/// `cargo test | tail`) — a subject of its own, never covered by its parts' approvals. `None`
/// when the line or any part of it has none, or a part is one a compound must not hold
/// ([`NOT_IN_COMPOUND`], or an interpreter given code: [`runs_code`]).
fn command_subject(command: &str) -> Option<String> {
    if holds_an_odd_blank(command) {
        return None;
    }
    shell_syntax::read(command).ok()?;
    let pieces = compound::pieces(command)?;
    let single = pieces.len() == 1;
    let mut subject = String::new();
    let mut after_pipe = false;
    for piece in pieces {
        match piece {
            compound::Piece::Command(text) => {
                let part = plain_subject(text)?;
                if !single && !fits_a_compound(&part.words) {
                    return None;
                }
                if after_pipe && !reads_a_pipe_plainly(&part) {
                    return None;
                }
                if !subject.is_empty() {
                    subject.push(' ');
                }
                subject.push_str(&part.subject);
            }
            compound::Piece::Operator(op) => {
                after_pipe = matches!(op, "|" | "|&");
                if op != ";" {
                    subject.push(' ');
                }
                subject.push_str(op);
            }
        }
    }
    Some(subject)
}

/// Whether the line holds a blank that bash and the tree-sitter reader part words at
/// differently: a `\` before a space or tab (bash keeps the blank in the word; the reader
/// drops both), or any blank but space, tab and newline (a vertical tab, a form feed, a
/// carriage return, a no-break space: the reader may split a word bash keeps whole). `rm \ x`
/// removes ` x`, not `x`; such a line has no subject.
fn holds_an_odd_blank(command: &str) -> bool {
    command.contains("\\ ")
        || command.contains("\\\t")
        || command
            .chars()
            .any(|c| c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n'))
}

/// Whether a part after `|` or `|&` may read what is piped to it: a filter that writes and
/// runs nothing ([`pipe_readers`]), with no variables set for it (`LESSOPEN=…`,
/// `RIPGREP_CONFIG_PATH=…` would make it run what they name).
fn reads_a_pipe_plainly(part: &Part) -> bool {
    let Some((first, args)) = part.words.split_first() else {
        return false;
    };
    !part.sets_variables
        && program_name(first).is_some_and(|program| pipe_readers::only_filters(&program, args))
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
    "powershell",
    "tclsh",
    "wish",
    "bun",
    "tsx",
    "ts-node",
    "pypy",
    "pypy3",
    "luajit",
    "julia",
    "irb",
    "expect",
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "duckdb",
    "mongosh",
    "redis-cli",
    "guile",
    "racket",
    "sbcl",
    "ghci",
    "runghc",
    "elixir",
    "iex",
    "erl",
    "escript",
    "groovy",
    "jshell",
    "scala",
    "R",
    "octave",
    "gdb",
    "lldb",
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

/// One plain command of a line, as [`plain_subject`] reads it.
struct Part {
    /// The variables set for it by name and value, then its program and every argument.
    subject: String,
    /// Its words after `env` and the variables.
    words: Vec<Word>,
    /// Whether any variable is set for it (`X=1 cmd`, `env X=1 cmd`).
    sets_variables: bool,
}

/// One plain simple command's subject and its words after `env`: the variables set for it by
/// name and value, then its program and every argument, in order.
fn plain_subject(command: &str) -> Option<Part> {
    let script = shell_syntax::read(command).ok()?;
    let [only] = script.commands.as_slice() else {
        return None;
    };
    if only.stdin_fed
        || !script.redirect_targets.is_empty()
        || !script.documents.is_empty()
        || only.words.iter().any(|w| w.opaque || w.dynamic || w.tilde)
        || script
            .assignments
            .iter()
            .any(|(_, v)| v.opaque || v.dynamic || v.tilde)
    {
        return None;
    }
    let mut vars: Vec<String> = script
        .assignments
        .iter()
        .map(|(n, v)| format!("{n}={}", quoted(&v.text)))
        .collect();
    let words = after_env(&only.words, &mut vars)?;
    let (first, args) = words.split_first()?;
    let program = program_name(first)?;
    if WRAPPERS.contains(&program.as_str())
        || given_code(&program, args)
        || programs::hides_its_effect(&program, args)
        || args.iter().any(names_what_runs)
    {
        return None;
    }
    let sets_variables = !vars.is_empty();
    let mut parts = vars;
    parts.push(quoted_program(&program));
    parts.extend(args.iter().map(|w| quoted(&w.text)));
    let subject = parts.join(" ");
    (!crate::text::has_hidden(&subject)).then(|| Part {
        subject,
        words: words.to_vec(),
        sets_variables,
    })
}

/// Whether an argument names a file that decides what runs ([`runs_what`]) — as itself, as
/// an option's value (`--output=Makefile`) or attached to a short option (`-oMakefile`): a
/// command that may write one (`cp x package.json`, `mv`, `ln -sf`, `git checkout -- …`) is
/// matched by its words though the file's next content is not, so it has no subject, like
/// an edit of that file.
fn names_what_runs(word: &Word) -> bool {
    let text = word.text.as_str();
    let value = text.split_once('=').map(|(_, v)| v);
    let attached = text
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))
        .and_then(|rest| rest.get(1..));
    [Some(text), value, attached]
        .into_iter()
        .flatten()
        .any(|candidate| runs_what::decides_what_runs(candidate.trim_start_matches("./")))
}

/// A word as the subject shows it: as is when it holds only plain characters, else in single
/// quotes (a `'` in it as `'\''`), so no two word lists are written alike.
fn quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./,:=+@%^".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The program as the subject shows it: like any word, but always quoted when it holds an
/// `=`, so a program named `X=1` (`'X=1' git status`, `\X=1 git status`) never reads as the
/// variable `X=1` set for `git status`.
fn quoted_program(program: &str) -> String {
    if program.contains('=') {
        format!("'{}'", program.replace('\'', "'\\''"))
    } else {
        quoted(program)
    }
}

/// The words after `env NAME=value …` (each added to `vars` by name and value); `None` when
/// `env` is given options (what they do to the command is not read here).
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
            Some((name, value)) if is_variable_name(name) => {
                vars.push(format!("{name}={}", quoted(value)));
            }
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
    // The reviewer's own words only, never the card's text: a reason quoting the agent's
    // command would let the agent write the start of the person's concern line.
    let what = match card.class {
        ToolClass::Exec => "command",
        _ => "file",
    };
    if refused > 0 {
        return Prediction::escalate(format!(
            "this exact {what} was denied or edited here before ({refused} {})",
            times(refused)
        ));
    }
    match approved {
        0 => Prediction::escalate(format!("this exact {what} was never approved here before")),
        n if n < MIN_APPROVALS => Prediction::escalate(format!(
            "this exact {what} was approved only {n} {} here ({MIN_APPROVALS} needed)",
            times(n)
        )),
        n => Prediction::approve(format!(
            "this exact {what} was approved {n} times here, never denied"
        )),
    }
}

fn times(n: usize) -> &'static str {
    if n == 1 { "time" } else { "times" }
}

/// Why a card has no subject, in the reviewer's own words (nothing of the card's text).
fn no_subject_reason(card: &ApprovalRequestBody) -> String {
    match card.class {
        _ if card.decision_kind.is_some() => "a decision is always the person's to make".into(),
        ToolClass::Decision => "a decision is always the person's to make".into(),
        ToolClass::Config => "a configuration change always goes to the person".into(),
        ToolClass::Network => "a network call always goes to the person".into(),
        ToolClass::Exec => "not a plain command, pipeline or list the history reviewer can match \
             (a substitution, an expansion, a `~`, a `+=`, a redirect to a file, a \
             here-document, a wrapped command, code given to an interpreter, awk, sed that may \
             write or run, find that runs or deletes, a pipe into anything but a plain filter, \
             a blank the shell keeps in a word, a run outside the agent's sandbox): it goes to \
             the person"
            .into(),
        ToolClass::Edit
            if file_path(card).is_some_and(|path| runs_what::decides_what_runs(&path)) =>
        {
            "a file that decides what commands run always goes to the person".into()
        }
        ToolClass::Read | ToolClass::Edit => {
            "the history reviewer cannot read which file this is (it matches only a path \
             written plainly — no `\\`, `.` or `..` segment, `//` or trailing `/` — and an \
             outside agent's only when absolute)"
                .into()
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
