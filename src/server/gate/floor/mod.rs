//! The safety floor: paths and commands that always ask (even in yolo), never get a standing
//! rule, and are refused in plan mode.
//!
//! Commands are read as a shell reads them (`shell_syntax`): every simple command of lists,
//! pipelines and substitutions, with its words after quote removal; programs that run other
//! programs (`env`, `timeout`, `xargs`, `sh -c`, `eval`, …) are looked through (`wrappers`);
//! each command is matched against the `[safety] commands` entries (`pattern`) and every word
//! against the floor's paths (`scan`). A command that cannot be read is on the floor: it asks.
//!
//! Besides what `[safety]` configures, some places are built in and cannot be configured
//! away: the agents' own hook and permission settings (`agents`, for every agent), and, for
//! outside agents, Countersign's own data dir, config file, database, process and
//! state-changing CLI (`own`).

mod agents;
mod own;
mod pattern;
mod probe;
mod runtime;
mod scan;
mod wrappers;

use std::sync::Arc;

pub use own::{Env, OwnPlaces};
pub use pattern::{program_name, same_program};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::server::config::SafetyConfig;
use crate::server::shell_syntax::Word;
use crate::server::tools::{self, FloorPaths, Hidden, Subject};
use pattern::CommandPattern;
use scan::{Outside, Reader};

/// How many words of free text are read as one command line, from each word on.
const PROSE_RUN: usize = 12;

pub struct SafetyFloor {
    paths: GlobSet,
    path_patterns: Vec<String>,
    commands: Vec<CommandPattern>,
    /// Paths each floor glob names, for telling whether a glob in a command could reach one.
    probes: Vec<probe::Probe>,
    /// The agents' settings (built in).
    agents: agents::AgentSettings,
    /// Countersign's own places (built in, read for outside agents).
    own: Arc<OwnPlaces>,
}

impl SafetyFloor {
    /// Compiles the configured globs and reads the command entries; an invalid one is a
    /// config error naming it. Countersign's own places are none until
    /// [`with_own`](Self::with_own) gives them.
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
        let built_in = agents::AGENT_SETTINGS.iter().map(|(glob, _)| *glob);
        Ok(SafetyFloor {
            paths,
            path_patterns: config.paths.clone(),
            commands,
            probes: config
                .paths
                .iter()
                .map(String::as_str)
                .chain(built_in)
                .flat_map(probe::of)
                .collect(),
            agents: agents::AgentSettings::new(),
            own: Arc::new(OwnPlaces::default()),
        })
    }

    /// The same floor, with where this server keeps its own data for outside agents' calls.
    pub fn with_own(mut self, own: Arc<OwnPlaces>) -> Self {
        self.own = own;
        self
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
        if let Some(hit) = self.paths.matches(probe.as_str()).into_iter().next() {
            return Some(format!(
                "touches the folder {shown}, whose contents are on the safety floor (`{}`)",
                self.pattern(hit)
            ));
        }
        self.agents
            .hit(&probe)
            .map(|_| {
                format!("touches the folder {shown}, which holds an agent's hooks and permissions (built in)")
            })
            .or_else(|| self.agents.holds(prefix))
    }

    fn glob_hit(&self, path: &str, shown: &str) -> Option<String> {
        match self.paths.matches(path).into_iter().next() {
            Some(hit) => Some(format!("touches {shown} (matches `{}`)", self.pattern(hit))),
            None => self.agents.hit(path),
        }
    }

    fn pattern(&self, index: usize) -> &str {
        self.path_patterns
            .get(index)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// One path a floor glob names that the glob `pattern` could match, for the reason.
    fn probe_hit(&self, pattern: &str) -> Option<String> {
        self.probes
            .iter()
            .find(|p| p.reached_by(pattern))
            .map(probe::Probe::example)
    }

    /// The `[safety] commands` entry the command `words` matches, in words.
    fn command_entry_hit(&self, words: &[Word], fed: bool) -> Option<String> {
        self.commands
            .iter()
            .find(|p| p.matches(words, fed))
            .map(|pattern| format!("runs `{}`", pattern.entry))
    }

    /// How the built-in agent's calls are read.
    fn built_in(&self) -> Reader<'_> {
        Reader {
            floor: self,
            outside: None,
        }
    }

    /// How an outside agent's calls are read: with Countersign's own places, relative to the
    /// agent's folder (or, for text typed into a running shell, to a folder not known).
    fn outside<'a>(&'a self, base: Option<&'a str>, shell: bool) -> Reader<'a> {
        Reader {
            floor: self,
            outside: Some(Outside {
                own: &self.own,
                base,
                shell,
            }),
        }
    }

    /// Why an outside agent's call hits the floor, in words: it cannot be read as the agent
    /// will run it, or a path, command, search glob, content or proposal of it is on the
    /// floor (the built-in places included, relative to the agent's folder, and as its paths
    /// lead on disk). Blocking (it follows paths on disk): run it on the blocking pool.
    ///
    /// A tool the catalog does not know is not read here: it asks in every mode, but a
    /// person's standing rule for that tool may answer it (`OutsideCall::unknown_tool`).
    pub fn check_outside(&self, call: &tools::outside::OutsideCall) -> Option<String> {
        let reader = self.outside(call.cwd.as_deref(), call.shell_input);
        call.unreadable
            .clone()
            .filter(|why| call.unknown_tool.as_ref() != Some(why))
            .or_else(|| {
                call.floor_subjects
                    .iter()
                    .find_map(|subject| match subject {
                        Subject::Command(command) => reader.check_command(command),
                        Subject::Path(path) => self.outside_path_hit(&reader, call, path),
                    })
            })
            .or_else(|| call.floor_globs.iter().find_map(|g| reader.glob_hit(g)))
            .or_else(|| {
                let base = call.cwd.as_deref();
                call.floor_trees
                    .iter()
                    .find_map(|t| self.own.tree_hit(t, base))
            })
            .or_else(|| call.floor_contents.iter().find_map(|c| self.content_hit(c)))
            .or_else(|| {
                call.floor_texts
                    .iter()
                    .find_map(|t| self.prose_hit(&reader, t))
            })
    }

    /// A path an outside file tool acts on: on the floor, naming one of Countersign's places
    /// anywhere in it, or (written) a file named like its CLI.
    fn outside_path_hit(
        &self,
        reader: &Reader<'_>,
        call: &tools::outside::OutsideCall,
        path: &str,
    ) -> Option<String> {
        reader
            .path_hit(path)
            .or_else(|| self.own.text_hit(path))
            .or_else(|| {
                let writes = call.class == crate::protocol::ToolClass::Edit;
                (writes && own::names_program_file(path)).then(|| {
                    format!("writes {path}, a file named like Countersign's CLI, which runs as the CLI under any name (built in)")
                })
            })
    }

    /// What a file change writes (a script written now and run later): naming one of
    /// Countersign's places, or running its CLI in a way that changes state.
    fn content_hit(&self, content: &str) -> Option<String> {
        self.own
            .text_hit(content)
            .or_else(|| own::cli_text_hit(&own::normalized(content)))
            .map(|hit| format!("writes content that {hit}"))
    }

    /// Why free text put to the person (a proposal's words) names something on the floor:
    /// each `code span` or fenced block read as shell code (where it reads as code), every
    /// word that looks like a path read as one, and every run of words matched against the
    /// command entries and Countersign's own commands. Prose is never refused for not being
    /// shell code, and a plain word (`deploy`) is not read as a path.
    fn prose_hit(&self, reader: &Reader<'_>, text: &str) -> Option<String> {
        // As the person reads it: a `\` + newline joins, what no one sees is not there.
        let text = own::normalized(text);
        let text = text.as_str();
        let as_code = text
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::trim)
            .filter(|code| !code.is_empty())
            .find_map(|code| reader.scan_code(code));
        let words: Vec<Word> = text
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| "`'\"“”‘’,;:.!?()[]{}<>*".contains(c)))
            .filter(|w| !w.is_empty())
            .map(Word::literal)
            .collect();
        let path_like = |w: &&Word| w.text.contains(['/', '\\', '.', '_', '~']);
        as_code
            .or_else(|| {
                let mut named = words.iter().filter(path_like);
                named.find_map(|w| reader.word_text_hit(w))
            })
            .or_else(|| {
                (0..words.len()).find_map(|i| {
                    let run = &words[i..(i + PROSE_RUN).min(words.len())];
                    self.command_entry_hit(run, false)
                        .or_else(|| own::cli_hit(run, self.own.on_postgres(), None))
                })
            })
            .map(|hit| format!("proposes what {hit}"))
    }

    /// Why a glob an outside search tool will expand could match a floor path, in words;
    /// `None` when it cannot.
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

    /// Why this call hits the floor, in words; `None` when it does not.
    pub fn check(&self, tool: &str, args: &Value) -> Option<String> {
        self.check_subject(&tools::get(tool)?.subject(args)?)
    }

    /// Why a path or a command of the built-in agent hits the floor, in words; `None` when it
    /// does not.
    pub fn check_subject(&self, subject: &Subject) -> Option<String> {
        match subject {
            Subject::Command(command) => self.check_command(command),
            Subject::Path(path) => self.path_hit(path),
        }
    }

    /// Why a shell command of the built-in agent hits the floor, in words; `None` when it
    /// does not.
    pub fn check_command(&self, command: &str) -> Option<String> {
        self.built_in().check_command(command)
    }
}

impl FloorPaths for SafetyFloor {
    fn path_hit(&self, path: &str) -> Option<String> {
        SafetyFloor::path_hit(self, path)
    }
}

impl scan::Floor for SafetyFloor {
    fn path_hit(&self, path: &str) -> Option<String> {
        SafetyFloor::path_hit(self, path)
    }

    fn search_glob_hit(&self, glob: &str) -> Option<String> {
        SafetyFloor::search_glob_hit(self, glob)
    }

    fn probe_hit(&self, pattern: &str) -> Option<String> {
        SafetyFloor::probe_hit(self, pattern)
    }

    fn command_entry_hit(&self, words: &[Word], fed: bool) -> Option<String> {
        SafetyFloor::command_entry_hit(self, words, fed)
    }
}

#[cfg(test)]
mod outside_tests;
#[cfg(test)]
mod tests;
