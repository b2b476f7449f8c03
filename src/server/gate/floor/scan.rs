//! Reads shell code for the floor: every simple command, as written and as it may be when it
//! runs (`Pass`), through the programs that run programs (`wrappers`).
//!
//! A `Reader` is the floor with what it reads for: the built-in agent (the configured floor
//! and the agents' settings), or an outside agent, whose reading adds Countersign's own places
//! and commands (`own`) and the folder its relative words start in.

use super::super::shell_syntax::{self, Word};
use super::own::{self, OwnPlaces};
use super::pattern::program_name;
use super::runtime;
use super::wrappers::{self, Inner};

/// How deep `sh -c "… sh -c '…'"` is followed before the command counts as unreadable.
const MAX_NESTING: usize = 8;

/// What the reading asks of the floor it reads for (the configured paths and command
/// entries, and the built-in agents' settings).
pub trait Floor {
    /// A path on the floor, itself or as a folder whose contents are.
    fn path_hit(&self, path: &str) -> Option<String>;
    /// A glob a search tool expands that could match a floor path.
    fn search_glob_hit(&self, glob: &str) -> Option<String>;
    /// One path a floor glob names that the glob `pattern` could match.
    fn probe_hit(&self, pattern: &str) -> Option<String>;
    /// The command entry the command `words` matches.
    fn command_entry_hit(&self, words: &[Word], fed: bool) -> Option<String>;
}

/// The floor, reading for one caller.
pub struct Reader<'a> {
    pub floor: &'a dyn Floor,
    /// For an outside agent: Countersign's own places and the agent's folder.
    pub outside: Option<Outside<'a>>,
}

/// What an outside agent's reading adds.
#[derive(Clone, Copy)]
pub struct Outside<'a> {
    pub own: &'a OwnPlaces,
    /// The agent's folder (normalized): where its relative words start.
    pub base: Option<&'a str>,
}

/// Which reading of a script's words a pass makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// As written: floor paths named outright, the command entries.
    Written,
    /// As they may be when they run: globs, variables, substitutions, after a `cd`.
    Running,
}

impl Reader<'_> {
    /// Why a shell command hits the floor, in words; `None` when it does not.
    pub fn check_command(&self, command: &str) -> Option<String> {
        match self.scan(command, false, 0) {
            Ok(hit) => hit,
            Err(why) => Some(format!(
                "cannot be read safely as a shell command ({why}), so it always asks"
            )),
        }
    }

    /// The first floor hit in text that reads as shell code; `None` when it does not hit or
    /// does not read as code (free text read word by word instead).
    pub fn scan_code(&self, code: &str) -> Option<String> {
        self.scan(code, false, 0).ok().flatten()
    }

    /// A word of free text as a path, or naming one of Countersign's places.
    pub fn word_text_hit(&self, word: &Word) -> Option<String> {
        self.word_hit(word)
    }

    /// A path on the floor: the floor's own, or (for an outside agent) one of Countersign's.
    pub fn path_hit(&self, path: &str) -> Option<String> {
        self.floor.path_hit(path).or_else(|| {
            let outside = self.outside?;
            outside.own.path_hit(path, outside.base)
        })
    }

    /// A glob the agent will expand (a search tool's, or a shell's after a `cd`) that could
    /// reach a floor path.
    pub fn glob_hit(&self, glob: &str) -> Option<String> {
        self.floor.search_glob_hit(glob).or_else(|| {
            let outside = self.outside?;
            outside.own.glob_hit(glob, outside.base)
        })
    }

    /// A word that names a floor path: itself, or the value of `--opt=value`; for an outside
    /// agent also one of Countersign's places named anywhere in it, or through `$HOME`.
    fn word_hit(&self, word: &Word) -> Option<String> {
        self.text_hit(&word.text).or_else(|| {
            let outside = self.outside?;
            outside.own.word_hit(word, outside.base)
        })
    }

    /// A word's text as a path: itself, the value of `--opt=value`, what follows a `:`
    /// (`git show HEAD:.env`, `host:.ssh/id_rsa`), each also with `\` read as `/` and
    /// case-folded (a file system that ignores case opens `.ENV` as `.env`).
    fn text_hit(&self, text: &str) -> Option<String> {
        let mut forms = vec![text.to_owned()];
        if let Some((flag, value)) = text.split_once('=')
            && flag.starts_with('-')
        {
            forms.push(value.to_owned());
        }
        if !text.contains("://")
            && let Some((_, after)) = text.rsplit_once(':')
            && !after.is_empty()
        {
            forms.push(after.to_owned());
        }
        let slashed: Vec<String> = forms.iter().map(|f| f.replace('\\', "/")).collect();
        let folded: Vec<String> = forms
            .iter()
            .chain(&slashed)
            .map(|f| f.to_lowercase())
            .collect();
        forms
            .iter()
            .chain(&slashed)
            .chain(&folded)
            .find_map(|form| self.path_hit(form))
    }

    /// The first floor hit in shell code; `Err` when it cannot be read. What the words say
    /// as written is read first, everywhere (so a reason names the command, not a variable
    /// next to it); then what they may be when they run.
    fn scan(&self, code: &str, fed: bool, depth: usize) -> Result<Option<String>, String> {
        if depth > MAX_NESTING {
            return Err(format!("shells nested more than {MAX_NESTING} deep"));
        }
        let script = shell_syntax::read(code)?;
        let values = runtime::Values::from_script(&script);
        // A value a variable is given is a word like any other (`GIT_DIR=.git git …`).
        if let Some(hit) = script.assignments.iter().find_map(|(name, value)| {
            self.word_hit(value)
                .map(|hit| format!("sets `{name}`, which {hit}"))
        }) {
            return Ok(Some(hit));
        }
        for pass in [Pass::Written, Pass::Running] {
            let start = runtime::Cwd::start();
            for target in &script.redirect_targets {
                let hit = match pass {
                    Pass::Written => self.word_hit(target),
                    Pass::Running => self.runtime_hit(target, &values, &start),
                };
                if hit.is_some() {
                    return Ok(hit);
                }
            }
            let mut cwd = start;
            for command in &script.commands {
                let fed = fed || command.stdin_fed;
                let words = &command.words;
                if let Some(hit) = self.scan_words(words, fed, depth, pass, &values, &cwd)? {
                    return Ok(Some(hit));
                }
                cwd.follow(words);
            }
        }
        Ok(None)
    }

    /// One command (program first), and what it runs inside it, in one pass.
    fn scan_words(
        &self,
        words: &[Word],
        fed: bool,
        depth: usize,
        pass: Pass,
        values: &runtime::Values,
        cwd: &runtime::Cwd,
    ) -> Result<Option<String>, String> {
        let Some(program) = words.first() else {
            return Ok(None);
        };
        if program.dynamic {
            return Err("the program it runs is only known when it runs".into());
        }
        if changes_globbing(words) {
            return Err(format!(
                "`{}` changes how the shell expands globs",
                program.text
            ));
        }
        let hit = match pass {
            Pass::Written => words
                .iter()
                .find_map(|w| self.word_hit(w))
                .or_else(|| self.floor.command_entry_hit(words, fed))
                .or_else(|| {
                    let outside = self.outside?;
                    own::command_hit(words, outside.own.on_postgres())
                        .or_else(|| own::tree_hit(words, outside.own, outside.base))
                }),
            Pass::Running => words
                .iter()
                .skip(1)
                .find_map(|w| self.runtime_hit(w, values, cwd))
                .or_else(|| unknown_items(words)),
        };
        if hit.is_some() {
            return Ok(hit);
        }
        for inner in wrappers::inner(words) {
            let hit = match inner {
                Inner::Argv(argv) => self.scan_words(&argv, fed, depth, pass, values, cwd)?,
                Inner::Code(code) if code.dynamic => {
                    return Err(format!(
                        "`{}` runs code only known when it runs",
                        program.text
                    ));
                }
                // Code read again is a script of its own: both its passes run now.
                Inner::Code(code) if pass == Pass::Written => {
                    self.scan(&code.text, fed, depth + 1)?
                }
                Inner::Code(_) => None,
            };
            if hit.is_some() {
                return Ok(hit);
            }
        }
        Ok(None)
    }

    /// Why a word that is only known when it runs — a glob, a variable, a substitution — or
    /// one read relative to a folder a `cd` went to could name a floor path; `None` when it
    /// cannot.
    fn runtime_hit(
        &self,
        word: &Word,
        values: &runtime::Values,
        cwd: &runtime::Cwd,
    ) -> Option<String> {
        let relative = |text: &str| !text.is_empty() && !text.starts_with(['/', '-', '~']);
        match cwd {
            runtime::Cwd::Unknown if relative(&word.text) || word.glob => {
                return Some(format!(
                    "names `{}` in a folder a `cd` chose only when it runs",
                    word.text
                ));
            }
            runtime::Cwd::Known(dir) if !dir.is_empty() && relative(&word.text) => {
                let joined = format!("{dir}/{}", word.text);
                if let Some(hit) = self.path_hit(&joined) {
                    return Some(format!("after `cd {dir}`: {hit}"));
                }
            }
            _ => {}
        }
        if word.opaque {
            return Some(
                "takes a value only known when it runs (a command substitution), which could name a floor path"
                    .into(),
            );
        }
        if let Some(hit) = self.variables_hit(word, values) {
            return Some(hit);
        }
        if word.glob {
            let pattern = match cwd {
                runtime::Cwd::Known(dir) if !dir.is_empty() && relative(&word.text) => {
                    format!("{dir}/{}", word.text)
                }
                _ => word.text.clone(),
            };
            if let Some(reached) = self.floor.probe_hit(&pattern) {
                return Some(format!(
                    "names the glob `{}`, which could match {reached} (on the safety floor)",
                    word.text
                ));
            }
            if let Some(outside) = self.outside
                && let Some(hit) = outside.own.glob_hit(&pattern, outside.base)
            {
                return Some(hit);
            }
        }
        None
    }

    /// Why a variable a word expands could name a floor path: its value is only known when
    /// it runs, or a value the script gives it does (where it stands in the word, and alone).
    fn variables_hit(&self, word: &Word, values: &runtime::Values) -> Option<String> {
        for name in &word.vars {
            let assigned = match values.value_of(name) {
                runtime::Known::Env => continue,
                runtime::Known::Never => {
                    return Some(format!(
                        "takes `${name}`, whose value is only known when it runs"
                    ));
                }
                runtime::Known::Set(assigned) => assigned,
            };
            for value in assigned {
                if value.dynamic || !value.vars.is_empty() {
                    return Some(format!(
                        "takes `${name}`, whose value is only known when it runs"
                    ));
                }
                // The value where the variable stands (`.e${X}v`), and alone.
                let placed = word.with_value(name, &value.text);
                let hit = [placed.clone(), value.text.clone()]
                    .iter()
                    .find_map(|candidate| self.text_hit(candidate))
                    .or_else(|| {
                        let glob = word.glob || placed.contains(['*', '?', '[', '{']);
                        glob.then(|| self.floor.probe_hit(&placed))
                            .flatten()
                            .map(|example| format!("could match {example}"))
                    });
                if let Some(hit) = hit {
                    return Some(format!("takes `${name}`, which {hit}"));
                }
            }
        }
        None
    }
}

/// `shopt -s dotglob`, `set -o …`, `GLOBIGNORE=…`: globs would not expand as the floor reads
/// them.
fn changes_globbing(words: &[Word]) -> bool {
    const GLOB_OPTIONS: [&str; 8] = [
        "dotglob",
        "nocaseglob",
        "extglob",
        "globstar",
        "nullglob",
        "failglob",
        "nocasematch",
        "globasciiranges",
    ];
    let program = words.first().map(|w| w.text.as_str()).unwrap_or("");
    let args = || words.iter().skip(1);
    match program {
        "shopt" => args().any(|w| w.dynamic || GLOB_OPTIONS.contains(&w.text.as_str())),
        // `set -f` / `set -o noglob`: no globbing at all is fine to read, but a script that
        // turns it back and forth is not worth guessing.
        "set" => args().any(|w| {
            w.dynamic
                || w.text == "noglob"
                || (w.text.starts_with(['-', '+']) && w.text.len() > 1 && w.text.contains('f'))
        }),
        _ => false,
    }
}

/// Items a wrapper adds when it runs (`xargs`'s input, `find -exec`'s `{}`): any path at all,
/// so a program that does more than print them asks.
fn unknown_items(words: &[Word]) -> Option<String> {
    let program = words.first().map(|w| program_name(&w.text))?;
    let item = words
        .iter()
        .skip(1)
        .any(|w| w.dynamic && w.vars.is_empty() && !w.opaque && !w.glob && w.text.is_empty());
    (item && !matches!(program, "echo" | "printf" | "true" | ":")).then(|| {
        format!("runs `{program}` on names only known when it runs (from xargs or find), which could be floor paths")
    })
}
