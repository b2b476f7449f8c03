//! Reads shell code for the floor: every simple command, as written and as it may be when it
//! runs (`Pass`), through the programs that run programs (`wrappers`), and the documents it
//! feeds a shell or an interpreter on standard input.
//!
//! A `Reader` is the floor with what it reads for: the built-in agent (the configured floor
//! and the agents' settings), or an outside agent, whose reading adds Countersign's own places
//! and commands (`own`), the folder its relative words start in, and whether the text is typed
//! into a running shell (whose folder and environment are not known).

use super::own::{self, OwnPlaces};
use super::pattern::{self, program_name};
use super::runtime;
use super::wrappers::{self, Inner};
use crate::server::shell_syntax::{self, Script, Word};

/// How deep `sh -c "… sh -c '…'"` is followed before the command counts as unreadable.
const MAX_NESTING: usize = 8;

/// Wrappers that run their command with the environment they were given.
const SAME_ENVIRONMENT: [&str; 19] = [
    "nohup",
    "time",
    "nice",
    "ionice",
    "timeout",
    "stdbuf",
    "command",
    "builtin",
    "setsid",
    "chrt",
    "taskset",
    "flock",
    "caffeinate",
    "unbuffer",
    "watch",
    "xargs",
    "parallel",
    "find",
    "fd",
];

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
    /// The text is typed into a running shell: its folder and environment are that shell's.
    pub shell: bool,
}

/// Which reading of a script's words a pass makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// As written: floor paths named outright, the command entries.
    Written,
    /// As they may be when they run: globs, variables, substitutions, after a `cd`.
    Running,
}

/// Where in a script a command is read.
#[derive(Clone, Debug)]
struct Context {
    /// Its standard input is a pipe or a document.
    fed: bool,
    /// How many shells deep.
    depth: usize,
    /// The folder it runs in.
    cwd: runtime::Cwd,
    /// Why its environment is not the one the agent was given, when it is not.
    env: Option<String>,
}

impl Reader<'_> {
    /// Why a shell command hits the floor, in words; `None` when it does not.
    pub fn check_command(&self, command: &str) -> Option<String> {
        let shell = self.outside.is_some_and(|o| o.shell);
        let start = Context {
            fed: false,
            depth: 0,
            cwd: if shell {
                runtime::Cwd::Shell
            } else {
                runtime::Cwd::start()
            },
            env: shell.then(|| "in a running shell whose environment is not known here".to_owned()),
        };
        match self.scan(command, &start) {
            Ok(hit) => hit,
            Err(why) => Some(format!(
                "cannot be read safely as a shell command ({why}), so it always asks"
            )),
        }
    }

    /// The first floor hit in text that reads as shell code; `None` when it does not hit or
    /// does not read as code (free text read word by word instead).
    pub fn scan_code(&self, code: &str) -> Option<String> {
        let start = Context {
            fed: false,
            depth: 0,
            cwd: runtime::Cwd::start(),
            env: None,
        };
        self.scan(code, &start).ok().flatten()
    }

    /// A word of free text as a path, or naming one of Countersign's places.
    pub fn word_text_hit(&self, word: &Word) -> Option<String> {
        self.word_hit(word)
    }

    /// A path on the floor: the floor's own, or (for an outside agent) one of Countersign's;
    /// for an outside agent also where it leads on disk.
    pub fn path_hit(&self, path: &str) -> Option<String> {
        self.floor.path_hit(path).or_else(|| {
            let outside = self.outside?;
            outside.own.path_hit(path, outside.base).or_else(|| {
                let real = outside.own.on_disk(path, outside.base)?;
                self.floor
                    .path_hit(&real)
                    .map(|hit| format!("{hit} (through a link: {path} is {real} on disk)"))
            })
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

    /// A word's text as a path: itself, the value of `name=value`, a short option's attached
    /// value, a file curl reads (`@file`, `<file`), what follows a `:`
    /// (`git show HEAD:.env`, `host:.ssh/id_rsa`), each also with `\` read as `/` and
    /// case-folded (a file system that ignores case opens `.ENV` as `.env`).
    fn text_hit(&self, text: &str) -> Option<String> {
        let mut forms = vec![text.to_owned()];
        // Any `name=value`'s value (`--data=@.env`, `-F f=@.env`, `if=.env`), not only a flag's.
        if let Some((_, value)) = text.split_once('=') {
            forms.push(value.to_owned());
        }
        // A short option with its value attached (`-T.env`, `-d@.env`).
        if let Some(attached) = text.strip_prefix('-').filter(|rest| !rest.starts_with('-'))
            && attached.len() > 1
        {
            forms.push(attached[1..].to_owned());
        }
        // curl's `@file` and `<file` (read the file and send it), wherever they stand.
        let read_marks: Vec<String> = forms
            .iter()
            .filter_map(|f| f.strip_prefix(['@', '<']).map(str::to_owned))
            .collect();
        forms.extend(read_marks);
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
    fn scan(&self, code: &str, ctx: &Context) -> Result<Option<String>, String> {
        if ctx.depth > MAX_NESTING {
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
        let env = ctx.env.clone().or_else(|| {
            script
                .changes_env
                .then(|| "in a script that changes its environment".to_owned())
        });
        for pass in [Pass::Written, Pass::Running] {
            if let Some(hit) = self.scan_pass(&script, ctx, &env, pass, &values)? {
                return Ok(Some(hit));
            }
        }
        self.documents_hit(&script, ctx)
    }

    /// One pass over a script's redirect targets and commands, following its `cd`s.
    fn scan_pass(
        &self,
        script: &Script,
        ctx: &Context,
        env: &Option<String>,
        pass: Pass,
        values: &runtime::Values,
    ) -> Result<Option<String>, String> {
        for target in &script.redirect_targets {
            let hit = match pass {
                Pass::Written => self
                    .word_hit(target)
                    .or_else(|| self.program_file_hit(target)),
                Pass::Running => self.runtime_hit(target, values, &ctx.cwd),
            };
            if hit.is_some() {
                return Ok(hit);
            }
        }
        let mut cwd = ctx.cwd.clone();
        for command in &script.commands {
            let inner = Context {
                fed: ctx.fed || command.stdin_fed,
                depth: ctx.depth,
                cwd: cwd.clone(),
                env: env.clone(),
            };
            if let Some(hit) = self.scan_words(&command.words, &inner, pass, values)? {
                return Ok(Some(hit));
            }
            cwd.follow(&command.words);
        }
        Ok(None)
    }

    /// The documents a script feeds on standard input (here-documents, here-strings): each a
    /// word like any other; read as shell code when a shell reads them; and for an outside
    /// agent, when a shell or an interpreter reads code from standard input, every word and
    /// document of the script is read for Countersign's CLI.
    fn documents_hit(&self, script: &Script, ctx: &Context) -> Result<Option<String>, String> {
        if let Some(hit) = script.documents.iter().find_map(|d| self.word_hit(d)) {
            return Ok(Some(hit));
        }
        let feeds = |reads: fn(&[Word]) -> bool| {
            script
                .commands
                .iter()
                .any(|c| c.stdin_fed && through_wrappers(&c.words).iter().any(|w| reads(w)))
        };
        if feeds(reads_shell_code) {
            for document in &script.documents {
                if document.dynamic {
                    return Err("it feeds a shell code only known when it runs".into());
                }
                let nested = Context {
                    depth: ctx.depth + 1,
                    ..ctx.clone()
                };
                if let Some(hit) = self.scan(&document.text, &nested)? {
                    return Ok(Some(format!("feeds a shell code that {hit}")));
                }
            }
        }
        if self.outside.is_some() && feeds(reads_any_code) {
            let texts = script
                .commands
                .iter()
                .flat_map(|c| c.words.iter())
                .chain(&script.documents);
            return Ok(texts.map(|w| w.text.as_str()).find_map(own::fed_text_hit));
        }
        Ok(None)
    }

    /// One command (program first), and what it runs inside it, in one pass.
    fn scan_words(
        &self,
        words: &[Word],
        ctx: &Context,
        pass: Pass,
        values: &runtime::Values,
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
            Pass::Written => self.written_hit(words, ctx),
            Pass::Running => words
                .iter()
                .skip(1)
                .find_map(|w| self.runtime_hit(w, values, &ctx.cwd))
                .or_else(|| unknown_items(words)),
        };
        if hit.is_some() {
            return Ok(hit);
        }
        let inner_ctx = Context {
            env: ctx.env.clone().or_else(|| environment_changed_by(words)),
            ..ctx.clone()
        };
        for inner in wrappers::inner(words) {
            let hit = match inner {
                Inner::Argv(argv) => self.scan_words(&argv, &inner_ctx, pass, values)?,
                Inner::Code(code) if code.dynamic => {
                    return Err(format!(
                        "`{}` runs code only known when it runs",
                        program.text
                    ));
                }
                // Code read again is a script of its own: both its passes run now.
                Inner::Code(code) if pass == Pass::Written => {
                    let nested = Context {
                        depth: ctx.depth + 1,
                        ..inner_ctx.clone()
                    };
                    self.scan(&code.text, &nested)?
                }
                Inner::Code(_) => None,
            };
            if hit.is_some() {
                return Ok(hit);
            }
        }
        Ok(None)
    }

    /// A command as written: a word naming a floor path, a command entry, and for an outside
    /// agent Countersign's own commands (where the command runs and with what environment).
    fn written_hit(&self, words: &[Word], ctx: &Context) -> Option<String> {
        words
            .iter()
            .find_map(|w| self.word_hit(w))
            .or_else(|| self.floor.command_entry_hit(words, ctx.fed))
            .or_else(|| {
                let outside = self.outside?;
                let moved = self.moved_to(&ctx.cwd);
                let running = own::Running {
                    here: own::Here {
                        base: outside.base,
                        moved: moved.as_deref(),
                        unknown: matches!(ctx.cwd, runtime::Cwd::Unknown | runtime::Cwd::Shell),
                    },
                    env: ctx.env.as_deref(),
                };
                own::command_hit(words, outside.own, running)
            })
    }

    /// The folder a `cd` reached, when it is not where the script started.
    fn moved_to(&self, cwd: &runtime::Cwd) -> Option<String> {
        match cwd {
            runtime::Cwd::Known(dir) if !dir.is_empty() => Some(dir.clone()),
            _ => None,
        }
    }

    /// A redirect target (a write) whose file name is Countersign's CLI's.
    fn program_file_hit(&self, target: &Word) -> Option<String> {
        self.outside?;
        own::names_program_file(&target.text).then(|| {
            format!(
                "writes `{}`, a file named like Countersign's CLI, which runs as the CLI under any name (built in)",
                target.text
            )
        })
    }

    /// Why a word that is only known when it runs — a glob, a variable, a substitution, a
    /// `~+` or `~-` — or one read relative to a folder a `cd` went to could name a floor
    /// path; `None` when it cannot.
    fn runtime_hit(
        &self,
        word: &Word,
        values: &runtime::Values,
        cwd: &runtime::Cwd,
    ) -> Option<String> {
        if let Some(hit) = self.tilde_hit(word, cwd) {
            return Some(hit);
        }
        let relative = |text: &str| !text.is_empty() && !text.starts_with(['/', '-', '~']);
        match cwd {
            runtime::Cwd::Unknown if relative(&word.text) || word.glob => {
                return Some(format!(
                    "names `{}` in a folder a `cd` chose only when it runs",
                    word.text
                ));
            }
            runtime::Cwd::Shell if relative(&word.text) => {
                let hit = match self.outside {
                    Some(outside) => outside.own.relative_hit(&word.text, word.glob),
                    None => Some(format!("names `{}` in a folder not known here", word.text)),
                };
                if hit.is_some() {
                    return hit;
                }
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
            return self.runtime_glob_hit(word, cwd);
        }
        None
    }

    /// A glob word, with the variables this server knows put in (`$HOME/.l*/s*`) and joined
    /// to the folder a `cd` went to.
    fn runtime_glob_hit(&self, word: &Word, cwd: &runtime::Cwd) -> Option<String> {
        let relative = !word.text.starts_with(['/', '-', '~']);
        let filled = self
            .outside
            .and_then(|o| o.own.with_vars(word, o.base))
            .unwrap_or_else(|| word.text.clone());
        let pattern = match cwd {
            runtime::Cwd::Known(dir) if !dir.is_empty() && relative && filled == word.text => {
                format!("{dir}/{filled}")
            }
            _ => filled,
        };
        if let Some(reached) = self.floor.probe_hit(&pattern) {
            return Some(format!(
                "names the glob `{}`, which could match {reached} (on the safety floor)",
                word.text
            ));
        }
        let outside = self.outside?;
        outside.own.glob_hit(&pattern, outside.base)
    }

    /// `~+` (the folder the command runs in), `~-` (the one before) and `~name` (another
    /// user's home) at a word's start, for an outside agent: the first is read where the
    /// command runs, the others are only known when it runs.
    fn tilde_hit(&self, word: &Word, cwd: &runtime::Cwd) -> Option<String> {
        let outside = self.outside?;
        let rest = word.text.strip_prefix('~')?;
        let (name, after) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match name {
            "" => None,
            "+" => {
                let here = match cwd {
                    runtime::Cwd::Known(dir) if dir.is_empty() => outside.base.map(str::to_owned),
                    runtime::Cwd::Known(dir) => outside.own.folder(dir, outside.base),
                    _ => None,
                };
                let Some(here) = here else {
                    return Some(format!(
                        "names `{}`, in a folder only known when it runs",
                        word.text
                    ));
                };
                self.path_hit(&format!("{here}{after}"))
                    .map(|hit| format!("names `{}`: {hit}", word.text))
            }
            name if outside.own.is_user(name) => None,
            _ => Some(format!(
                "names `{}`, a folder only known when it runs (`~-` is the folder before, `~name` another user's home)",
                word.text
            )),
        }
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

/// A command and every command its wrappers run inside it (argv ones, a few deep).
fn through_wrappers(words: &[Word]) -> Vec<Vec<Word>> {
    let mut found = vec![words.to_vec()];
    let mut at = 0;
    while at < found.len() && found.len() < 8 {
        let inner: Vec<Vec<Word>> = wrappers::inner(&found[at])
            .into_iter()
            .filter_map(|i| match i {
                Inner::Argv(argv) => Some(argv),
                Inner::Code(_) => None,
            })
            .collect();
        found.extend(inner);
        at += 1;
    }
    found
}

/// A shell (or `at`, `batch`, `ssh` with no remote command) reading its code from standard
/// input.
fn reads_shell_code(words: &[Word]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    let name = program_name(&program.text);
    match name {
        "at" | "batch" => !words.iter().any(|w| w.text == "-f"),
        _ => pattern::reads_shell_stdin(words),
    }
}

/// A shell or an interpreter (or a SQLite client) that may read code from standard input.
fn reads_any_code(words: &[Word]) -> bool {
    reads_shell_code(words)
        || words.first().is_some_and(|p| {
            own::is_interpreter(&p.text)
                || matches!(
                    program_name(&p.text),
                    "sqlite3" | "sqlite" | "ssh" | "tmux" | "screen"
                )
        })
}

/// Why a wrapper runs its command with another environment than it was given: `env` with
/// anything but the command, and every wrapper not known to keep it (`sudo`, `su`, `strace`,
/// `ssh`, …).
fn environment_changed_by(words: &[Word]) -> Option<String> {
    let program = words.first()?;
    let name = program_name(&program.text);
    if name == "env" {
        let plain = words
            .get(1)
            .is_some_and(|w| !w.dynamic && !w.text.starts_with('-') && !w.text.contains('='));
        return (!plain).then(|| "through `env`, which changes its environment".to_owned());
    }
    if name == "exec"
        && words
            .iter()
            .any(|w| w.text.starts_with("-c") || w.text.starts_with("-a"))
    {
        return Some("through `exec -c`, which clears its environment".to_owned());
    }
    if SAME_ENVIRONMENT.contains(&name) || wrappers::SHELLS.contains(&name) {
        return None;
    }
    Some(format!(
        "through `{name}`, which may change its environment"
    ))
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
