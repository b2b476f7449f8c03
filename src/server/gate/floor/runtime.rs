//! What a command's words are when it runs, as far as the script itself says: the values its
//! variables are given (`F=.env`, `for F in …`), the variables every command has from the
//! sandbox's environment, and the folder the commands after a `cd` run in.

use crate::server::shell_syntax::{Script, Word};

/// Variables a tool's process has from its environment (the sandbox's minimal one, the
/// shell's own): their values are the machine's, not the agent's, and name no workspace file.
const ENVIRONMENT: &[&str] = &[
    "HOME", "PATH", "PWD", "OLDPWD", "TMPDIR", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME",
    "SHELL", "HOSTNAME", "IFS", "RANDOM", "LINENO", "SECONDS", "EUID", "UID", "PPID", "BASHPID",
    "?", "$", "!", "#", "-", "0",
];

/// What is known of a variable's value.
pub enum Known<'a> {
    /// From the environment (see [`ENVIRONMENT`]).
    Env,
    /// Every value the script gives it.
    Set(Vec<&'a Word>),
    /// Nothing: a positional argument, or a name the script never sets.
    Never,
}

/// The values the script gives its variables.
pub struct Values<'a> {
    assignments: &'a [(String, Word)],
}

impl<'a> Values<'a> {
    pub fn from_script(script: &'a Script) -> Values<'a> {
        Values {
            assignments: &script.assignments,
        }
    }

    /// What is known of `name`'s value.
    pub fn value_of(&self, name: &str) -> Known<'a> {
        let set: Vec<&'a Word> = self
            .assignments
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, w)| w)
            .collect();
        if !set.is_empty() {
            Known::Set(set)
        } else if ENVIRONMENT.contains(&name) {
            Known::Env
        } else {
            Known::Never
        }
    }
}

/// The folder the next command runs in, relative to where the script started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cwd {
    /// `""` where it started, else the path a literal `cd` went to (`~` for the home folder).
    Known(String),
    /// A `cd` to a folder only known when it runs.
    Unknown,
    /// Where a running shell the text is typed into happens to be: not known, but only a
    /// `cd` earlier in that shell chose it (its relative words are read for what they could
    /// reach from anywhere).
    Shell,
}

impl Cwd {
    pub fn start() -> Cwd {
        Cwd::Known(String::new())
    }

    /// Moves along with a `cd`, `pushd` or `popd` command (program first, also behind
    /// `builtin`/`command`); anything else stays.
    pub fn follow(&mut self, words: &[Word]) {
        let words = match words.first().map(|w| w.text.as_str()) {
            Some("builtin" | "command") => &words[1..],
            _ => words,
        };
        let Some(program) = words.first() else {
            return;
        };
        match program.text.as_str() {
            "cd" | "pushd" => {}
            // Back to a folder of the stack, which only the shell knows.
            "popd" => {
                *self = Cwd::Unknown;
                return;
            }
            _ => return,
        }
        let target = match cd_target(&words[1..]) {
            // `pushd` alone swaps the stack's top two folders.
            CdTarget::Home if program.text == "pushd" => CdTarget::Previous,
            target => target,
        };
        *self = match (std::mem::replace(self, Cwd::Unknown), target) {
            (_, CdTarget::Dynamic | CdTarget::Previous) => Cwd::Unknown,
            // `cd` alone (or `cd --`): the home folder.
            (_, CdTarget::Home) => Cwd::Known("~".to_owned()),
            // `cd /abs`, `cd ~/x`: there, whatever came before (relative words are read
            // there, so one naming an outside agent's floor place is seen where it is).
            (_, CdTarget::Dir(dir)) if dir.starts_with(['/', '~']) => Cwd::Known(dir),
            (Cwd::Unknown, _) => Cwd::Unknown,
            (Cwd::Shell, _) => Cwd::Shell,
            (Cwd::Known(base), CdTarget::Dir(dir)) if base.is_empty() => Cwd::Known(dir),
            (Cwd::Known(base), CdTarget::Dir(dir)) => Cwd::Known(format!("{base}/{dir}")),
        };
    }
}

/// Where a `cd` goes, from its arguments.
enum CdTarget {
    Home,
    /// `cd -`: the folder before, `$OLDPWD`.
    Previous,
    Dynamic,
    Dir(String),
}

fn cd_target(args: &[Word]) -> CdTarget {
    let mut options = true;
    for word in args {
        if word.dynamic {
            return CdTarget::Dynamic;
        }
        match word.text.as_str() {
            "--" if options => options = false,
            "-" => return CdTarget::Previous,
            flag if options && flag.starts_with('-') => {}
            dir => return CdTarget::Dir(dir.to_owned()),
        }
    }
    CdTarget::Home
}
