//! Programs that run another command: `env`, `nice`, `timeout`, `nohup`, `sudo`, `xargs`,
//! `find -exec`, `watch`, `flock`, `runuser`, `su -c`, `ssh host cmd`, `tmux new`, `screen
//! -dm`, `chpst`, `caffeinate`, tool and secret runners (`direnv exec`, `op run --`, …), and
//! the shells' `-c` and `eval`, whose code is read again. The floor looks at the command
//! inside as it looks at the outer one.

use super::pattern::program_name;
use crate::server::shell_syntax::Word;

/// A command another command runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Inner {
    /// Its words (program first).
    Argv(Vec<Word>),
    /// Shell code to read (`sh -c`, `eval`, `env -S`, `watch`).
    Code(Word),
}

/// Shells whose `-c` argument is shell code.
pub const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

fn text(word: &Word) -> &str {
    word.text.as_str()
}

/// A word the wrapper adds at run time (an `xargs` item, `find`'s `{}`).
fn unknown() -> Word {
    Word::unknown()
}

/// Skips a wrapper's options; `with_value` lists those that take the next word as their value
/// (short letters, or long names without `--`). Returns the index of the first operand.
fn skip_options(words: &[Word], with_value: &[&str]) -> usize {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let t = text(word);
        if t == "--" {
            return i + 1;
        }
        if word.dynamic || !t.starts_with('-') || t == "-" {
            return i;
        }
        if let Some(long) = t.strip_prefix("--") {
            if !long.contains('=') && with_value.contains(&long) {
                i += 1;
            }
        } else if let Some(last) = t.chars().last()
            && t.len() == 2
            && with_value.contains(&last.to_string().as_str())
        {
            i += 1;
        }
        i += 1;
    }
    i
}

/// Wrappers that run the argv after their options, with the options that take a value.
const PLAIN: &[(&[&str], &[&str])] = &[
    (&["nice"], &["n", "adjustment"]),
    (
        &["nohup", "builtin", "busybox", "setsid", "doas"],
        &["u", "C"],
    ),
    (&["exec"], &["a"]),
    (&["time"], &["o", "f", "output", "format"]),
    (&["stdbuf"], &["i", "o", "e", "input", "output", "error"]),
    (&["ionice"], &["c", "n", "class", "classdata"]),
    (
        &["sudo"],
        &[
            "u", "g", "C", "D", "h", "p", "r", "t", "T", "U", "user", "group", "chdir",
        ],
    ),
    (
        &["chpst"],
        &[
            "u", "U", "b", "e", "/", "n", "l", "L", "m", "d", "o", "p", "f", "c", "r", "t",
        ],
    ),
    (&["caffeinate"], &["t", "w"]),
    (
        &["systemd-inhibit", "systemd-cat"],
        &[
            "what",
            "who",
            "why",
            "mode",
            "t",
            "identifier",
            "p",
            "priority",
        ],
    ),
    (
        &[
            "setpriv",
            "numactl",
            "proxychains",
            "proxychains4",
            "fakeroot",
            "xvfb-run",
        ],
        &[
            "reuid",
            "regid",
            "groups",
            "inh-caps",
            "ambient-caps",
            "bounding-set",
            "securebits",
            "selinux-label",
            "apparmor-profile",
            "f",
            "l",
            "s",
            "i",
            "n",
            "e",
            "N",
            "C",
            "m",
            "p",
            "faked",
            "server-num",
            "server-args",
            "error-file",
            "auth-file",
            "cpunodebind",
            "membind",
            "physcpubind",
            "interleave",
            "preferred",
        ],
    ),
    // Tracers and isolators run their argv as it is.
    (
        &["strace", "ltrace"],
        &[
            "o", "e", "p", "s", "u", "E", "a", "b", "I", "P", "X", "output",
        ],
    ),
    (
        &[
            "unshare",
            "systemd-run",
            "pkexec",
            "firejail",
            "bwrap",
            "proot",
        ],
        &[
            "u",
            "p",
            "S",
            "G",
            "wd",
            "user",
            "unit",
            "property",
            "p",
            "E",
            "setenv",
            "working-directory",
            "uid",
            "gid",
            "root",
            "bind",
            "ro-bind",
        ],
    ),
    (
        &["uvx", "pnpx", "bunx", "npx"],
        &["p", "package", "from", "with"],
    ),
];

/// Wrappers whose argv follows one operand after their options (a duration, a priority or
/// mask, a root folder), with the options that take a value.
const PAST_AN_OPERAND: &[(&[&str], &[&str])] = &[
    (&["timeout"], &["s", "k", "signal", "kill-after"]),
    (&["chrt", "taskset"], &[]),
    (&["chroot"], &["userspec", "groups"]),
];

/// `xargs`'s options that take a value.
const XARGS_WITH_VALUE: &[&str] = &[
    "a",
    "d",
    "E",
    "I",
    "L",
    "n",
    "P",
    "s",
    "arg-file",
    "delimiter",
    "eof",
    "replace",
    "max-lines",
    "max-args",
    "max-procs",
    "max-chars",
];

/// The argv from `args[from]` on, as one inner command (none when nothing is left).
fn argv_from(args: &[Word], from: usize) -> Vec<Inner> {
    let inner = args.get(from..).map(<[Word]>::to_vec).unwrap_or_default();
    if inner.is_empty() {
        Vec::new()
    } else {
        vec![Inner::Argv(inner)]
    }
}

/// Where the argv of `name` starts in `args`, if the table lists it.
fn listed(table: &[(&[&str], &[&str])], name: &str, args: &[Word]) -> Option<usize> {
    table
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, with_value)| skip_options(args, with_value))
}

/// The commands `words` (program first) runs inside it, if it is a wrapper.
pub fn inner(words: &[Word]) -> Vec<Inner> {
    let Some((program, args)) = words.split_first() else {
        return Vec::new();
    };
    let name = program_name(text(program));
    if let Some(start) = listed(PLAIN, name, args) {
        return argv_from(args, start);
    }
    if let Some(start) = listed(PAST_AN_OPERAND, name, args) {
        return argv_from(args, start + 1);
    }
    match name {
        "env" => env(args),
        "command" => command(args),
        "xargs" => with_an_item(args, skip_options(args, XARGS_WITH_VALUE), args.len()),
        "find" => find_exec(args),
        "watch" => watch(args),
        "eval" => joined(args),
        "script" => dash_c(args),
        "flock" => flock(args),
        "su" | "runuser" | "sg" => su(args),
        "ssh" => ssh(args),
        "tmux" => tmux(args),
        "screen" => screen(args),
        "unbuffer" | "dbus-run-session" | "tini" | "dumb-init" | "chronic" | "catchsegv"
        | "torsocks" | "valgrind" | "entr" | "bundle" | "rbenv" | "pyenv" | "asdf" => {
            exec_step(args)
        }
        "setarch" | "gosu" | "su-exec" | "setuidgid" | "envdir" | "faketime" | "s6-setuidgid" => {
            // Past the arch, the user, the folder or the time, and the options after it.
            let operand = skip_options(args, &[]) + 1;
            argv_from(
                args,
                operand + skip_options(args.get(operand..).unwrap_or(&[]), &[]),
            )
        }
        "direnv" | "mise" | "rtx" | "op" | "doppler" | "aws-vault" | "dotenv" | "dotenvx" => {
            runner_after_dashes(args)
        }
        "fd" | "fdfind" => fd_exec(args),
        name if SHELLS.contains(&name) => dash_c(args),
        "nix-shell" | "nix" => dash_c_long(args, "--run", "--command"),
        "parallel" => parallel(args),
        // Project runners whose subcommand runs a program given as its argv.
        "uv" | "pnpm" | "yarn" | "bun" | "poetry" | "pipx" | "npm" | "deno" | "pdm" | "hatch"
        | "rye" | "conda" | "mamba" | "pixi" => runner(name, args),
        "git" => git_inner(args),
        "alias" => alias(args),
        _ => Vec::new(),
    }
}

/// `command CMD` runs it; `command -v CMD` only looks it up.
fn command(args: &[Word]) -> Vec<Inner> {
    let start = skip_options(args, &[]);
    let lookup_only = args[..start.min(args.len())]
        .iter()
        .any(|w| matches!(text(w), "-v" | "-V"));
    if lookup_only {
        Vec::new()
    } else {
        argv_from(args, start)
    }
}

/// The argv `args[start..end]`, with the item the wrapper adds at run time (`xargs` reads
/// its items; `parallel` takes them after `:::`). Alone, `xargs` runs echo: nothing inside.
fn with_an_item(args: &[Word], start: usize, end: usize) -> Vec<Inner> {
    let mut inner: Vec<Word> = args
        .get(start..end)
        .map(<[Word]>::to_vec)
        .unwrap_or_default();
    if inner.is_empty() {
        return Vec::new();
    }
    inner.push(unknown());
    vec![Inner::Argv(inner)]
}

/// `watch CMD…` joins its words into shell code; `watch -x CMD…` runs them as argv.
fn watch(args: &[Word]) -> Vec<Inner> {
    let start = skip_options(args, &["n", "d", "interval", "differences"]);
    let exec = args[..start.min(args.len())]
        .iter()
        .any(|w| matches!(text(w), "-x" | "--exec"));
    if exec {
        argv_from(args, start)
    } else {
        joined(&args.get(start..).map(<[Word]>::to_vec).unwrap_or_default())
    }
}

/// `unbuffer CMD`, `tini CMD` …; `bundle exec CMD`, `asdf exec CMD`: one word more.
fn exec_step(args: &[Word]) -> Vec<Inner> {
    let start = skip_options(args, &["p", "s", "g", "l"]);
    match args.get(start).map(text) {
        Some("exec") => argv_from(args, start + 1),
        _ => argv_from(args, start),
    }
}

/// `parallel CMD … ::: ARGS`: the command is what comes before `:::`.
fn parallel(args: &[Word]) -> Vec<Inner> {
    let start = skip_options(args, &["j", "jobs", "S", "sshlogin"]);
    let end = args
        .iter()
        .position(|w| matches!(text(w), ":::" | "::::" | ":::+"))
        .unwrap_or(args.len());
    with_an_item(args, start, end)
}

/// `alias name='code'`: the code runs wherever the name is used.
fn alias(args: &[Word]) -> Vec<Inner> {
    args.iter()
        .filter_map(|w| w.text.split_once('=').map(|(_, code)| (w, code)))
        .map(|(w, code)| {
            Inner::Code(Word {
                dynamic: w.dynamic,
                ..Word::literal(code)
            })
        })
        .collect()
}

/// `uv run CMD`, `pnpm exec CMD`, `npm exec -c CODE`, `bun x CMD`, `poetry run CMD` …: the
/// command they run.
fn runner(program: &str, args: &[Word]) -> Vec<Inner> {
    let start = skip_options(
        args,
        &["C", "directory", "project", "p", "python", "prefix"],
    );
    let Some(sub) = args.get(start).map(text) else {
        return Vec::new();
    };
    let runs = matches!(
        (program_name(program), sub),
        (_, "run" | "exec" | "x" | "dlx") | ("uv", "tool") | ("pipx", "runpip")
    );
    if !runs {
        return Vec::new();
    }
    let after = &args[start + 1..];
    // `npm exec -c 'code'`, `npm exec --call 'code'`.
    if let Some(i) = after
        .iter()
        .position(|w| matches!(text(w), "-c" | "--call"))
    {
        return after
            .get(i + 1)
            .map(|code| vec![Inner::Code(code.clone())])
            .unwrap_or_default();
    }
    let from = skip_options(
        after,
        &[
            "with",
            "from",
            "package",
            "p",
            "python",
            "env-file",
            "w",
            "workspace",
            "filter",
        ],
    );
    let mut inner: Vec<Word> = after.get(from..).map(<[Word]>::to_vec).unwrap_or_default();
    // `uv tool run X`: one word more.
    if program_name(program) == "uv" && sub == "tool" {
        if inner.first().map(text) != Some("run") {
            return Vec::new();
        }
        inner.remove(0);
    }
    if inner.is_empty() {
        Vec::new()
    } else {
        vec![Inner::Argv(inner)]
    }
}

/// `git -c alias.x='!code' x`: an alias starting with `!` is shell code git runs.
fn git_inner(args: &[Word]) -> Vec<Inner> {
    let mut found = Vec::new();
    let mut words = args.iter().peekable();
    while let Some(word) = words.next() {
        let setting = match text(word) {
            "-c" => words.next().map(text).unwrap_or(""),
            t if t.starts_with("--config-env") => "",
            t => t.strip_prefix("-c").unwrap_or(""),
        };
        if let Some((key, value)) = setting.split_once('=')
            && key.to_ascii_lowercase().starts_with("alias.")
            && let Some(code) = value.strip_prefix('!')
        {
            found.push(Inner::Code(Word::literal(code)));
        }
    }
    found
}

/// `--run CODE` / `--command CODE` (nix-shell, nix develop).
fn dash_c_long(args: &[Word], long: &str, other: &str) -> Vec<Inner> {
    args.windows(2)
        .find(|pair| matches!(text(&pair[0]), t if t == long || t == other))
        .map(|pair| vec![Inner::Code(pair[1].clone())])
        .unwrap_or_default()
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE…] [COMMAND…]`.
fn env(args: &[Word]) -> Vec<Inner> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let t = text(word);
        if word.dynamic {
            break;
        }
        if t == "-S" || t == "--split-string" {
            return args
                .get(i + 1)
                .map(|w| vec![Inner::Code(w.clone())])
                .unwrap_or_default();
        }
        if let Some(code) = t
            .strip_prefix("--split-string=")
            .or_else(|| t.strip_prefix("-S").filter(|s| !s.is_empty()))
        {
            return vec![Inner::Code(Word::literal(code))];
        }
        if matches!(t, "-u" | "-C" | "--unset" | "--chdir") {
            i += 2;
            continue;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with('-') && t != "-" || (t.contains('=') && !t.starts_with('=')) {
            i += 1;
            continue;
        }
        break;
    }
    match args.get(i..) {
        Some(inner) if !inner.is_empty() => vec![Inner::Argv(inner.to_vec())],
        _ => Vec::new(),
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`, ending in `;` or `+`).
fn find_exec(args: &[Word]) -> Vec<Inner> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(text(&args[i]), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let mut command = Vec::new();
            i += 1;
            while let Some(word) = args.get(i) {
                if matches!(text(word), ";" | "+") && !word.dynamic {
                    break;
                }
                command.push(if text(word) == "{}" {
                    unknown()
                } else {
                    word.clone()
                });
                i += 1;
            }
            if !command.is_empty() {
                found.push(Inner::Argv(command));
            }
        }
        i += 1;
    }
    found
}

/// `flock [opts] FILE CMD…`, `flock [opts] FILE -c CODE` (`flock FD` runs nothing).
fn flock(args: &[Word]) -> Vec<Inner> {
    let file = skip_options(args, &["w", "timeout", "wait", "E", "conflict-exit-code"]);
    let after = file + 1;
    match args.get(after).map(text) {
        Some("-c" | "--command") => args
            .get(after + 1)
            .map(|code| vec![Inner::Code(code.clone())])
            .unwrap_or_default(),
        Some(_) => vec![Inner::Argv(args[after..].to_vec())],
        None => Vec::new(),
    }
}

/// `su [USER] -c CODE`, `su --command=CODE`, `runuser -u USER -- CMD…`, `runuser USER -c
/// CODE`, `sg GROUP -c CODE` / `sg GROUP CMD`: the code or command, wherever the user is.
/// `su`'s, `runuser`'s and `sg`'s options that take a value.
const SU_WITH_VALUE: &[&str] = &[
    "u",
    "user",
    "g",
    "group",
    "G",
    "supp-group",
    "s",
    "shell",
    "w",
];

fn su(args: &[Word]) -> Vec<Inner> {
    let mut words = args.iter().enumerate();
    while let Some((i, word)) = words.next() {
        let t = text(word);
        if let Some(code) = t
            .strip_prefix("--command=")
            .or_else(|| t.strip_prefix("--session-command="))
        {
            return vec![Inner::Code(Word {
                dynamic: word.dynamic,
                ..Word::literal(code)
            })];
        }
        let short_c = t.starts_with('-') && !t.starts_with("--") && t.ends_with('c');
        if short_c || matches!(t, "--command" | "--session-command") {
            return args
                .get(i + 1)
                .map(|code| vec![Inner::Code(code.clone())])
                .unwrap_or_default();
        }
        if matches!(
            t,
            "-u" | "--user" | "-g" | "--group" | "-G" | "--supp-group" | "-s" | "--shell" | "-w"
        ) {
            words.next();
            continue;
        }
        if t == "--" {
            let rest = args[i + 1..].to_vec();
            return if rest.is_empty() {
                Vec::new()
            } else {
                vec![Inner::Argv(rest)]
            };
        }
    }
    // `runuser -u USER CMD…` without `--`, `sg GROUP CMD`: what follows the user or group.
    let start = skip_options(args, SU_WITH_VALUE);
    let user_given = args[..start.min(args.len())]
        .iter()
        .any(|w| matches!(text(w), "-u" | "--user"));
    argv_from(args, if user_given { start } else { start + 1 })
}

/// `ssh [opts] HOST CMD…`: the remote command, which the host's shell reads (this machine's
/// included).
fn ssh(args: &[Word]) -> Vec<Inner> {
    let host = skip_options(
        args,
        &[
            "b", "c", "D", "E", "e", "F", "I", "i", "J", "L", "l", "m", "O", "o", "p", "Q", "R",
            "S", "W", "w",
        ],
    );
    joined(args.get(host + 1..).unwrap_or(&[]))
}

/// `tmux new[-session]|new-window|split-window|respawn-pane|run-shell [opts] [CODE]` and
/// `tmux send-keys [opts] KEYS…` (typed into a pane), each command of a `\;` chain.
fn tmux(args: &[Word]) -> Vec<Inner> {
    const RUNS: [&str; 14] = [
        "new",
        "new-session",
        "new-window",
        "neww",
        "split-window",
        "splitw",
        "respawn-pane",
        "respawnp",
        "respawn-window",
        "respawnw",
        "run-shell",
        "run",
        "if-shell",
        "if",
    ];
    const VALUES: [&str; 16] = [
        "-t", "-s", "-n", "-c", "-x", "-y", "-e", "-F", "-l", "-p", "-T", "-f", "-N", "-b", "-L",
        "-S",
    ];
    let mut found = Vec::new();
    for command in args.split(|w| matches!(text(w), ";" | "\\;")) {
        let Some(sub) = command.iter().position(|w| !text(w).starts_with('-')) else {
            continue;
        };
        let name = text(&command[sub]);
        let mut operands: Vec<Word> = Vec::new();
        let mut rest = command[sub + 1..].iter();
        while let Some(word) = rest.next() {
            if VALUES.contains(&text(word)) {
                rest.next();
            } else if !text(word).starts_with('-') || word.dynamic {
                operands.push(word.clone());
            }
        }
        if RUNS.contains(&name) || name.starts_with("send") {
            let keys: Vec<Word> = operands
                .into_iter()
                .map(|w| match text(&w) {
                    "Enter" | "C-m" | "KPEnter" | "C-j" => Word::literal(";"),
                    _ => w,
                })
                .collect();
            found.extend(joined(&keys));
        }
    }
    found
}

/// `screen [-dmS NAME …] CMD…` and `screen -X stuff TEXT` (typed into a window).
fn screen(args: &[Word]) -> Vec<Inner> {
    if let Some(at) = args.iter().position(|w| text(w) == "-X") {
        let command = &args[at + 1..];
        return match command.first().map(text) {
            Some("stuff") => joined(&command[1..]),
            Some("exec" | "screen") => vec![Inner::Argv(command[1..].to_vec())],
            _ => Vec::new(),
        };
    }
    // Options, some grouped (`-dmS NAME`): one ending in a letter that takes a value takes
    // the next word.
    let mut start = 0;
    while let Some(word) = args
        .get(start)
        .filter(|w| text(w).starts_with('-') && !w.dynamic)
    {
        let t = text(word);
        start += 1;
        if t == "--" {
            break;
        }
        if !t.starts_with("--") && t.ends_with(['S', 'c', 'e', 'h', 'p', 's', 'T', 't']) {
            start += 1;
        }
    }
    match args.get(start..) {
        Some(rest) if !rest.is_empty() => vec![Inner::Argv(rest.to_vec())],
        _ => Vec::new(),
    }
}

/// `direnv exec DIR CMD…`, `mise exec … -- CMD…`, `op run … -- CMD…`, `doppler run -- CMD…`,
/// `aws-vault exec PROFILE -- CMD…`, `dotenv -- CMD…`: what follows `--`, else what follows
/// the subcommand and its operand.
fn runner_after_dashes(args: &[Word]) -> Vec<Inner> {
    if let Some(at) = args.iter().position(|w| text(w) == "--") {
        let rest = args[at + 1..].to_vec();
        return if rest.is_empty() {
            Vec::new()
        } else {
            vec![Inner::Argv(rest)]
        };
    }
    let sub = skip_options(args, &["e", "env-file", "f"]);
    match args.get(sub).map(text) {
        Some("exec" | "run" | "x") => {
            // `direnv exec DIR CMD`, `aws-vault exec PROFILE CMD`: past their operand.
            let from = skip_options(&args[sub + 1..], &[]) + sub + 2;
            match args.get(from..) {
                Some(rest) if !rest.is_empty() => vec![Inner::Argv(rest.to_vec())],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// `fd … -x CMD …` / `-X CMD …` (`--exec`, `--exec-batch`): the command runs on each name found.
fn fd_exec(args: &[Word]) -> Vec<Inner> {
    let Some(at) = args
        .iter()
        .position(|w| matches!(text(w), "-x" | "-X" | "--exec" | "--exec-batch"))
    else {
        return Vec::new();
    };
    let mut command: Vec<Word> = args[at + 1..]
        .iter()
        .take_while(|w| text(w) != ";")
        .map(|w| {
            if text(w).starts_with('{') && text(w).ends_with('}') {
                unknown()
            } else {
                w.clone()
            }
        })
        .collect();
    if command.is_empty() {
        return Vec::new();
    }
    command.push(unknown());
    vec![Inner::Argv(command)]
}

/// `-c CODE` of a shell (flags may be grouped: `-ec`, `-lc`), or of `script`.
fn dash_c(args: &[Word]) -> Vec<Inner> {
    let mut wants_code = false;
    for word in args {
        let t = text(word);
        if !wants_code && !word.dynamic && t.starts_with('-') && t != "-" && t != "--" {
            if !t.starts_with("--") && t.contains('c') || t == "--command" {
                wants_code = true;
            }
            continue;
        }
        if wants_code {
            return vec![Inner::Code(word.clone())];
        }
        // A script file or other operand: code we cannot see.
        return Vec::new();
    }
    Vec::new()
}

/// Arguments joined with spaces, read as shell code (`eval`, `watch`).
fn joined(args: &[Word]) -> Vec<Inner> {
    if args.is_empty() {
        return Vec::new();
    }
    vec![Inner::Code(Word {
        text: args.iter().map(text).collect::<Vec<_>>().join(" "),
        dynamic: args.iter().any(|w| w.dynamic),
        ..Word::default()
    })]
}
