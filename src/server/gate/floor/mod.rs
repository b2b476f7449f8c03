//! The safety floor: paths and commands that always ask (even in yolo), never get a standing
//! rule, and are refused in plan mode.
//!
//! Commands are read as a shell reads them (`shell_syntax`): every simple command of lists,
//! pipelines and substitutions, with its words after quote removal; programs that run other
//! programs (`env`, `timeout`, `xargs`, `sh -c`, `eval`, …) are looked through (`wrappers`);
//! each command is matched against the `[safety] commands` entries (`pattern`) and every word
//! against the floor's paths. A command that cannot be read is on the floor: it asks.

mod pattern;
mod probe;
mod runtime;
mod wrappers;

pub use pattern::{program_name, same_program};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::shell_syntax::{self, Word};
use crate::server::config::SafetyConfig;
use crate::server::tools::{self, FloorPaths, Hidden, Subject};
use pattern::CommandPattern;
use wrappers::Inner;

/// How deep `sh -c "… sh -c '…'"` is followed before the command counts as unreadable.
const MAX_NESTING: usize = 8;

pub struct SafetyFloor {
    paths: GlobSet,
    path_patterns: Vec<String>,
    commands: Vec<CommandPattern>,
    /// Paths each floor glob names, for telling whether a glob in a command could reach one.
    probes: Vec<probe::Probe>,
}

impl SafetyFloor {
    /// Compiles the configured globs and reads the command entries; an invalid one is a
    /// config error naming it.
    pub fn new(config: &SafetyConfig) -> Result<Self, String> {
        let mut builder = GlobSetBuilder::new();
        for pattern in &config.paths {
            let glob = Glob::new(pattern).map_err(|e| format!("safety.paths: `{pattern}`: {e}"))?;
            builder.add(glob);
        }
        let paths = builder.build().map_err(|e| format!("safety.paths: {e}"))?;
        let commands = config
            .commands
            .iter()
            .map(|entry| CommandPattern::parse(entry))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SafetyFloor {
            paths,
            path_patterns: config.paths.clone(),
            commands,
            probes: config.paths.iter().flat_map(|p| probe::of(p)).collect(),
        })
    }

    /// A path on the floor: itself, or as a folder whose contents are (`.git` for
    /// `**/.git/**`; a NUL cannot be in a file name, so the probe child names no real file).
    fn path_hit(&self, path: &str) -> Option<String> {
        let path = path.trim_start_matches("./");
        if path.is_empty() || path == "." {
            return self.folder_hit("", ".");
        }
        self.glob_hit(path, path).or_else(|| {
            let folder = path.trim_end_matches('/');
            self.folder_hit(&format!("{folder}/"), path)
        })
    }

    fn folder_hit(&self, prefix: &str, shown: &str) -> Option<String> {
        let probe = format!("{prefix}\u{0}");
        let hit = self.paths.matches(probe.as_str()).into_iter().next()?;
        Some(format!(
            "touches the folder {shown}, whose contents are on the safety floor (`{}`)",
            self.pattern(hit)
        ))
    }

    fn glob_hit(&self, path: &str, shown: &str) -> Option<String> {
        let hit = self.paths.matches(path).into_iter().next()?;
        Some(format!("touches {shown} (matches `{}`)", self.pattern(hit)))
    }

    fn pattern(&self, index: usize) -> &str {
        self.path_patterns
            .get(index)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// Why an outside agent's call hits the floor, in words: it cannot be read as the agent
    /// will run it, or a path, command or search glob of it is on the floor.
    pub fn check_outside(&self, call: &tools::outside::OutsideCall) -> Option<String> {
        call.unreadable.clone().or_else(|| {
            call.floor_subjects
                .iter()
                .find_map(|subject| self.check_subject(subject))
                .or_else(|| {
                    call.floor_globs
                        .iter()
                        .find_map(|g| self.search_glob_hit(g))
                })
        })
    }

    /// Why a glob the agent will expand itself (an outside search tool's) could match a floor
    /// path, in words; `None` when it cannot.
    pub fn search_glob_hit(&self, glob: &str) -> Option<String> {
        let path = glob.trim_start_matches("./");
        self.path_hit(path).or_else(|| {
            self.probes
                .iter()
                .find(|p| p.reached_by(path) || p.reached_by(&path.to_lowercase()))
                .map(|p| {
                    format!(
                        "searches the glob `{glob}`, which could match {} (on the safety floor)",
                        p.example()
                    )
                })
        })
    }

    /// Why what a call's path is on disk puts it on the floor (a symlink to a floor path, a
    /// file with other names), in words.
    pub fn check_hidden(&self, hidden: &[Hidden]) -> Option<String> {
        hidden.iter().find_map(|h| h.floor_hit(self))
    }

    /// A word that names a floor path: itself, or the value of `--opt=value`.
    fn word_hit(&self, word: &Word) -> Option<String> {
        self.text_hit(&word.text)
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

    /// Why this call hits the floor, in words; `None` when it does not.
    pub fn check(&self, tool: &str, args: &Value) -> Option<String> {
        self.check_subject(&tools::get(tool)?.subject(args)?)
    }

    /// Why a path or a command hits the floor, in words (outside agents' calls, whose
    /// subjects `tools::outside` reads); `None` when it does not.
    pub fn check_subject(&self, subject: &Subject) -> Option<String> {
        match subject {
            Subject::Command(command) => self.check_command(command),
            Subject::Path(path) => self.path_hit(path),
        }
    }

    /// Why a shell command hits the floor, in words; `None` when it does not.
    pub fn check_command(&self, command: &str) -> Option<String> {
        match self.scan(command, false, 0) {
            Ok(hit) => hit,
            Err(why) => Some(format!(
                "cannot be read safely as a shell command ({why}), so it always asks"
            )),
        }
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
            Pass::Written => words.iter().find_map(|w| self.word_hit(w)).or_else(|| {
                self.commands
                    .iter()
                    .find(|p| p.matches(words, fed))
                    .map(|pattern| format!("runs `{}`", pattern.entry))
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
        for name in &word.vars {
            match values.value_of(name) {
                runtime::Known::Env => {}
                runtime::Known::Never => {
                    return Some(format!(
                        "takes `${name}`, whose value is only known when it runs"
                    ));
                }
                runtime::Known::Set(assigned) => {
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
                                glob.then(|| {
                                    self.probes
                                        .iter()
                                        .find(|p| p.reached_by(&placed))
                                        .map(|p| format!("could match {}", p.example()))
                                })
                                .flatten()
                            });
                        if let Some(hit) = hit {
                            return Some(format!("takes `${name}`, which {hit}"));
                        }
                    }
                }
            }
        }
        if word.glob {
            let pattern = match cwd {
                runtime::Cwd::Known(dir) if !dir.is_empty() && relative(&word.text) => {
                    format!("{dir}/{}", word.text)
                }
                _ => word.text.clone(),
            };
            if let Some(reached) = self.probes.iter().find(|p| p.reached_by(&pattern)) {
                return Some(format!(
                    "names the glob `{}`, which could match {} (on the safety floor)",
                    word.text,
                    reached.example()
                ));
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

/// Which reading of a script's words a pass makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// As written: floor paths named outright, the command entries.
    Written,
    /// As they may be when they run: globs, variables, substitutions, after a `cd`.
    Running,
}

impl FloorPaths for SafetyFloor {
    fn path_hit(&self, path: &str) -> Option<String> {
        SafetyFloor::path_hit(self, path)
    }
}

#[cfg(test)]
mod tests;
