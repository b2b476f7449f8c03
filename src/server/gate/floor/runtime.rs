//! What a command's words are when it runs, as far as the script itself says: the values its
//! variables are given (`F=.env`, `for F in …`), the variables every command has from the
//! sandbox's environment, and the folder the commands after a `cd` run in.

use super::super::shell_syntax::{Script, Word};

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
    /// `""` where it started, else the path a literal `cd` went to.
    Known(String),
    /// A `cd` to a folder only known when it runs.
    Unknown,
}

impl Cwd {
    pub fn start() -> Cwd {
        Cwd::Known(String::new())
    }

    /// Moves along with a `cd` or `pushd` command (program first); anything else stays.
    pub fn follow(&mut self, words: &[Word]) {
        let Some(program) = words.first() else {
            return;
        };
        if !matches!(program.text.as_str(), "cd" | "pushd") {
            return;
        }
        let target = words
            .iter()
            .skip(1)
            .find(|w| !w.text.starts_with('-') || w.dynamic);
        *self = match (std::mem::replace(self, Cwd::Unknown), target) {
            (_, Some(dir)) if dir.dynamic => Cwd::Unknown,
            // `cd` alone: home, away from the workspace's relative paths.
            (_, None) => Cwd::Known(String::new()),
            // `cd /abs`, `cd ~/x`: there, whatever came before (relative words are read
            // there, so one naming an outside agent's floor place is seen where it is).
            (_, Some(dir)) if dir.text.starts_with(['/', '~']) => Cwd::Known(dir.text.clone()),
            (Cwd::Unknown, _) => Cwd::Unknown,
            (Cwd::Known(base), Some(dir)) if base.is_empty() => Cwd::Known(dir.text.clone()),
            (Cwd::Known(base), Some(dir)) => Cwd::Known(format!("{base}/{}", dir.text)),
        };
    }
}
