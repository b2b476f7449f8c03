//! The safety floor: paths and commands that always ask (even in yolo), never get a standing
//! rule, and are refused in plan mode.
//!
//! Commands are read as a shell reads them (`shell_syntax`): every simple command of lists,
//! pipelines and substitutions, with its words after quote removal; programs that run other
//! programs (`env`, `timeout`, `xargs`, `sh -c`, `eval`, …) are looked through (`wrappers`);
//! each command is matched against the `[safety] commands` entries (`pattern`) and every word
//! against the floor's paths. A command that cannot be read is on the floor: it asks.

mod pattern;
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

    /// Why what a call's path is on disk puts it on the floor (a symlink to a floor path, a
    /// file with other names), in words.
    pub fn check_hidden(&self, hidden: &[Hidden]) -> Option<String> {
        hidden.iter().find_map(|h| h.floor_hit(self))
    }

    /// A word that names a floor path: itself, or the value of `--opt=value`.
    fn word_hit(&self, word: &Word) -> Option<String> {
        let text = word.text.as_str();
        self.path_hit(text).or_else(|| {
            text.split_once('=')
                .filter(|(flag, _)| flag.starts_with('-'))
                .and_then(|(_, value)| self.path_hit(value))
        })
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

    /// The first floor hit in shell code; `Err` when it cannot be read.
    fn scan(&self, code: &str, fed: bool, depth: usize) -> Result<Option<String>, String> {
        if depth > MAX_NESTING {
            return Err(format!("shells nested more than {MAX_NESTING} deep"));
        }
        let script = shell_syntax::read(code)?;
        if let Some(hit) = script
            .redirect_targets
            .iter()
            .find_map(|w| self.word_hit(w))
        {
            return Ok(Some(hit));
        }
        for command in &script.commands {
            if let Some(hit) = self.scan_words(&command.words, fed || command.stdin_fed, depth)? {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// One command (program first), and what it runs inside it.
    fn scan_words(
        &self,
        words: &[Word],
        fed: bool,
        depth: usize,
    ) -> Result<Option<String>, String> {
        let Some(program) = words.first() else {
            return Ok(None);
        };
        if program.dynamic {
            return Err("the program it runs is only known when it runs".into());
        }
        if let Some(hit) = words.iter().find_map(|w| self.word_hit(w)) {
            return Ok(Some(hit));
        }
        if let Some(pattern) = self.commands.iter().find(|p| p.matches(words, fed)) {
            return Ok(Some(format!("runs `{}`", pattern.entry)));
        }
        for inner in wrappers::inner(words) {
            let hit = match inner {
                Inner::Argv(argv) => self.scan_words(&argv, fed, depth)?,
                Inner::Code(code) if code.dynamic => {
                    return Err(format!(
                        "`{}` runs code only known when it runs",
                        program.text
                    ));
                }
                Inner::Code(code) => self.scan(&code.text, fed, depth + 1)?,
            };
            if hit.is_some() {
                return Ok(hit);
            }
        }
        Ok(None)
    }
}

impl FloorPaths for SafetyFloor {
    fn path_hit(&self, path: &str) -> Option<String> {
        SafetyFloor::path_hit(self, path)
    }
}

#[cfg(test)]
mod tests;
