//! Programs that run another command: `env`, `nice`, `timeout`, `nohup`, `sudo`, `xargs`,
//! `find -exec`, `watch`, and the shells' `-c` and `eval`, whose code is read again. The floor
//! looks at the command inside as it looks at the outer one.

use super::super::shell_syntax::Word;
use super::pattern::program_name;

/// A command another command runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Inner {
    /// Its words (program first).
    Argv(Vec<Word>),
    /// Shell code to read (`sh -c`, `eval`, `env -S`, `watch`).
    Code(Word),
}

/// Shells whose `-c` argument is shell code.
const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

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

/// The commands `words` (program first) runs inside it, if it is a wrapper.
pub fn inner(words: &[Word]) -> Vec<Inner> {
    let Some((program, args)) = words.split_first() else {
        return Vec::new();
    };
    let rest = |from: usize| args.get(from..).map(<[Word]>::to_vec).unwrap_or_default();
    let argv = |from: usize| {
        let inner = rest(from);
        if inner.is_empty() {
            Vec::new()
        } else {
            vec![Inner::Argv(inner)]
        }
    };
    match program_name(text(program)) {
        "env" => env(args),
        "nice" => argv(skip_options(args, &["n", "adjustment"])),
        "nohup" | "builtin" | "busybox" | "setsid" | "doas" => {
            argv(skip_options(args, &["u", "C"]))
        }
        "exec" => argv(skip_options(args, &["a"])),
        "time" => argv(skip_options(args, &["o", "f", "output", "format"])),
        "stdbuf" => argv(skip_options(
            args,
            &["i", "o", "e", "input", "output", "error"],
        )),
        "ionice" => argv(skip_options(args, &["c", "n", "class", "classdata"])),
        "command" => {
            let start = skip_options(args, &[]);
            let lookup_only = args[..start.min(args.len())]
                .iter()
                .any(|w| matches!(text(w), "-v" | "-V"));
            if lookup_only { Vec::new() } else { argv(start) }
        }
        "timeout" => {
            let start = skip_options(args, &["s", "k", "signal", "kill-after"]);
            argv(start + 1) // past the duration
        }
        "chrt" | "taskset" => argv(skip_options(args, &[]) + 1), // past the priority / mask
        "sudo" => argv(skip_options(
            args,
            &[
                "u", "g", "C", "D", "h", "p", "r", "t", "T", "U", "user", "group", "chdir",
            ],
        )),
        "xargs" => {
            let start = skip_options(
                args,
                &[
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
                ],
            );
            let mut inner = rest(start);
            if inner.is_empty() {
                return Vec::new(); // `xargs` alone runs echo
            }
            inner.push(unknown()); // the items it reads
            vec![Inner::Argv(inner)]
        }
        "find" => find_exec(args),
        "watch" => {
            let start = skip_options(args, &["n", "d", "interval", "differences"]);
            let exec = args[..start.min(args.len())]
                .iter()
                .any(|w| matches!(text(w), "-x" | "--exec"));
            if exec {
                argv(start)
            } else {
                joined(&rest(start))
            }
        }
        "eval" => joined(args),
        "flock" | "script" | "su" => dash_c(args),
        name if SHELLS.contains(&name) => dash_c(args),
        // Tracers and isolators run their argv as it is.
        "strace" | "ltrace" => argv(skip_options(
            args,
            &[
                "o", "e", "p", "s", "u", "E", "a", "b", "I", "P", "X", "output",
            ],
        )),
        "unshare" | "systemd-run" | "pkexec" | "firejail" | "bwrap" | "proot" => {
            argv(skip_options(
                args,
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
            ))
        }
        "chroot" => argv(skip_options(args, &["userspec", "groups"]) + 1), // past the root
        "nix-shell" | "nix" => dash_c_long(args, "--run", "--command"),
        "parallel" => {
            // `parallel CMD … ::: ARGS`: the command is what comes before `:::`.
            let start = skip_options(args, &["j", "jobs", "S", "sshlogin"]);
            let end = args
                .iter()
                .position(|w| matches!(text(w), ":::" | "::::" | ":::+"))
                .unwrap_or(args.len());
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
        // Project runners whose subcommand runs a program given as its argv.
        "uv" | "pnpm" | "yarn" | "bun" | "poetry" | "pipx" | "npm" | "deno" | "pdm" | "hatch"
        | "rye" | "conda" | "mamba" | "pixi" => runner(text(program), args),
        "uvx" | "pnpx" | "bunx" | "npx" => {
            argv(skip_options(args, &["p", "package", "from", "with"]))
        }
        "git" => git_inner(args),
        // `alias name='code'`: the code runs wherever the name is used.
        "alias" => args
            .iter()
            .filter_map(|w| w.text.split_once('=').map(|(_, code)| (w, code)))
            .map(|(w, code)| {
                Inner::Code(Word {
                    dynamic: w.dynamic,
                    ..Word::literal(code)
                })
            })
            .collect(),
        _ => Vec::new(),
    }
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

/// `-c CODE` of a shell (flags may be grouped: `-ec`, `-lc`), or of `su`/`flock`/`script`.
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
