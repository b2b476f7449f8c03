//! Countersign's own places and commands, on the floor of every outside agent's call in every
//! mode, whatever `[safety]` says.
//!
//! An outside agent runs as the same OS user as Countersign, so nothing but this floor stands
//! between it and the data dir (the token, the keys, the database), the config file, a
//! PostgreSQL database, the server's own process and the `countersign` CLI that changes them.
//! The places are where this server really keeps them (`sandbox::Places`, fixed at start),
//! each in every spelling an agent may use: as on disk and through the home folder's own
//! spelling, `~` and `$HOME`, relative to the agent's folder, case-folded, a folder that holds
//! one, a glob that could reach one, and any text that names one (`python -c "open('…')"`).
//! Paths are also read as they lead on this machine's disk (`disk`: a symlink the agent made
//! earlier is followed as its tools follow it) and through `/proc` (`procfs`: a process's
//! root is `/`, its open files and folder are unknown); the server's process is every thread
//! of it (`process`), its executable a place of its own, and a program named `countersign`
//! is the CLI wherever it is (`code`).
//!
//! The built-in agent's commands never reach these (the sandbox keeps them out), so only the
//! outside reading uses this.

mod cli;
mod code;
mod database;
mod disk;
mod places;
mod process;
mod procfs;
mod tree;

use std::path::{Path, PathBuf};

use super::pattern::program_name;
use crate::server::shell_syntax::Word;
use crate::server::tools::outside::paths;
use crate::server::tools::sandbox::Places;
use places::{Place, Reach};

pub use cli::{command_hit as cli_hit, text_hit as cli_text_hit};
pub use code::{fed_text_hit, is_interpreter, names_program_file};
pub use tree::Here;

/// How far what a command runs in is known, for the checks of one command.
#[derive(Clone, Copy)]
pub struct Running<'a> {
    /// Where it runs (the agent's folder, a `cd` before it).
    pub here: Here<'a>,
    /// Why the environment it runs with is not the one it was given, when it is not.
    pub env: Option<&'a str>,
}

/// Why the command `words` (program first) reaches Countersign's own state: its CLI, its
/// PostgreSQL clients, a whole-tree read of a folder holding its data, a link to one, its
/// process, interpreter code naming its CLI, SQLite reaching another file, a copy of its
/// program; `None` when it does not.
pub fn command_hit(words: &[Word], own: &OwnPlaces, running: Running<'_>) -> Option<String> {
    let base = running.here.base;
    cli::command_hit(words, own.on_postgres(), running.env)
        .or_else(|| embedded_cli_hit(words, running.env))
        .or_else(|| tree::tree_hit(words, own, running.here))
        .or_else(|| tree::link_hit(words, own, running.here))
        .or_else(|| own.process.as_ref()?.command_hit(words))
        .or_else(|| code::command_hit(words, own, base))
}

/// A program the floor does not know as a wrapper that is handed the CLI anyway: the CLI's
/// name right after `--`, or followed by one of its commands (`somewrapper -x countersign
/// passkey reset`). What follows is read as its arguments. (`echo` and `printf` only print.)
fn embedded_cli_hit(words: &[Word], env: Option<&str>) -> Option<String> {
    let program = words.first()?;
    // A wrapper the floor knows has its command read on its own (`nohup countersign …`).
    if matches!(program_name(&program.text), "echo" | "printf")
        || !super::wrappers::inner(words).is_empty()
    {
        return None;
    }
    let at = words.iter().enumerate().skip(1).position(|(i, w)| {
        let next = words.get(i + 1).map(|n| n.text.as_str());
        cli::is_cli(&w.text)
            && (next.is_some_and(|n| cli::COMMANDS.contains(&n))
                || words.get(i - 1).is_some_and(|p| p.text == "--"))
    })? + 1;
    let program = &words[0].text;
    let through = format!("through `{program}`, which may change its environment");
    cli::command_hit(&words[at..], false, Some(env.unwrap_or(&through)))
}

/// Text as a program reads it once a shell or an interpreter has joined what it joins: line
/// continuations (`\` + newline) taken out, and characters no one sees (zero-width, bidi
/// controls, soft hyphens) dropped.
pub fn normalized(text: &str) -> String {
    text.replace("\\\r\n", "")
        .replace("\\\n", "")
        .chars()
        .filter(|c| !crate::text::is_hidden_char(*c) || matches!(c, '\n' | '\t'))
        .collect()
}

/// The environment a command's words may expand that this server knows the value of: the
/// agent runs as the same user, so its `$HOME` is this `$HOME`.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub home: Option<PathBuf>,
    pub tmpdir: Option<PathBuf>,
    pub user: Option<String>,
}

impl Env {
    /// This process's own.
    pub fn current() -> Env {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Env {
            home: var("HOME").map(PathBuf::from),
            tmpdir: var("TMPDIR").map(PathBuf::from),
            user: var("USER")
                .or_else(|| var("LOGNAME"))
                .and_then(|u| u.into_string().ok()),
        }
    }
}

/// What the data dir holds, by name, whether or not it is there yet: what a relative path read
/// from a folder not known may name inside it.
const DATA_FILES: [&str; 11] = [
    "token",
    "vapid_private_key",
    "countersign.db",
    "countersign.db-wal",
    "countersign.db-shm",
    "config.toml",
    "instance",
    "sandbox",
    "workspace",
    "address",
    "countersign",
];

/// Where this server keeps what an outside agent must never touch, in every spelling.
#[derive(Debug, Default)]
pub struct OwnPlaces {
    places: Vec<Place>,
    /// The home folder's spellings (normalized, case-folded): `~` is each of them.
    homes: Vec<String>,
    /// Variables a word may expand, with this server's values.
    vars: Vec<(&'static str, String)>,
    user: Option<String>,
    database: Option<database::Postgres>,
    /// The server's process (every thread of it).
    process: Option<process::Server>,
}

impl OwnPlaces {
    /// The places of this server, with this process's environment, id and executable.
    pub fn of(places: &Places) -> OwnPlaces {
        let own = Self::with_env(places, &Env::current(), Some(std::process::id()));
        match std::env::current_exe() {
            Ok(exe) => own.with_executable(&exe),
            Err(_) => own,
        }
    }

    /// The same places, and the server's executable (as given and as it is on disk): reading,
    /// copying or linking it runs the CLI under another name.
    pub fn with_executable(mut self, exe: &Path) -> OwnPlaces {
        let place = Place::reaching("executable", exe, &self.homes, Reach::Itself);
        self.places.push(place);
        self
    }

    /// The places of a server whose environment is `env` and whose process is `pid`.
    pub fn with_env(places: &Places, env: &Env, pid: Option<u32>) -> OwnPlaces {
        let homes = spellings(env.home.as_deref());
        let mut own = vec![
            Place::new("data directory", &places.data_dir, &homes),
            Place::new("config file", &places.config_file, &homes),
        ];
        if let Some(db) = &places.database_file {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut file = db.as_os_str().to_owned();
                file.push(suffix);
                own.push(Place::new("database", Path::new(&file), &homes));
            }
        }
        if let Some(pid) = pid {
            own.push(Place::new(
                "process (its environment and memory)",
                &Path::new("/proc").join(pid.to_string()),
                &[],
            ));
        }
        let mut vars: Vec<(&'static str, String)> = Vec::new();
        if let Some(home) = &env.home {
            vars.push(("HOME", home.display().to_string()));
        }
        if let Some(tmp) = &env.tmpdir {
            vars.push(("TMPDIR", tmp.display().to_string()));
        }
        if let Some(user) = &env.user {
            vars.push(("USER", user.clone()));
            vars.push(("LOGNAME", user.clone()));
        }
        OwnPlaces {
            places: own,
            homes,
            vars,
            user: env.user.clone(),
            database: places
                .database_url
                .as_ref()
                .and_then(|url| database::Postgres::of(url.reveal())),
            process: pid.map(process::Server::of),
        }
    }

    /// The spellings of `path` with `~` (and `~user`, `$HOME`) read as the home folder: at its
    /// start, or as a segment of a path already joined to the agent's folder (`/w/~/.x`, an
    /// agent's tool may expand it). The path as written stays one of them.
    fn expanded(&self, path: &str) -> Vec<String> {
        let mut out = vec![path.to_owned()];
        let starts = std::iter::once(0).chain(path.match_indices(['/', '\\']).map(|(i, _)| i + 1));
        for start in starts {
            let Some(rest) = self.after_home(&path[start..]) else {
                continue;
            };
            for home in &self.homes {
                let spelled = format!("{home}{rest}");
                if !out.contains(&spelled) {
                    out.push(spelled);
                }
            }
        }
        out
    }

    /// What follows a leading `~`, `~user` (this server's user) or `$HOME`, if `path` starts
    /// with one as a whole segment.
    fn after_home<'p>(&self, path: &'p str) -> Option<&'p str> {
        let rest = ["$HOME", "${HOME}"]
            .iter()
            .find_map(|home| path.strip_prefix(home))
            .or_else(|| {
                let after = path.strip_prefix('~')?;
                let (name, rest) = after.split_at(after.find(['/', '\\']).unwrap_or(after.len()));
                (name.is_empty() || self.user.as_deref() == Some(name)).then_some(rest)
            })?;
        (rest.is_empty() || rest.starts_with(['/', '\\'])).then_some(rest)
    }

    /// Why `path` (as an agent names it, relative to `base` when it is relative) is one of
    /// Countersign's own places, inside one, or a folder that holds one — as written, read
    /// through `/proc`, and as it leads on disk; `None` when it is not.
    pub fn path_hit(&self, path: &str, base: Option<&str>) -> Option<String> {
        self.expanded(path).into_iter().find_map(|candidate| {
            let shown = paths::normalize(&candidate, base);
            self.absolute_hit(&shown).or_else(|| {
                let real = self.on_disk(&candidate, base)?;
                self.absolute_hit(&real)
                    .map(|hit| format!("{hit} (through a link: {shown} is {real} on disk)"))
            })
        })
    }

    /// A normalized absolute path (as written): one of the places, read through `/proc`.
    fn absolute_hit(&self, shown: &str) -> Option<String> {
        let shown = match procfs::read(shown) {
            procfs::Proc::Plain => shown.to_owned(),
            procfs::Proc::Root(path) => path,
            procfs::Proc::Opaque(path) => {
                return Some(format!(
                    "touches {path}, what a process has open or sits in, which could be Countersign's own data (built in)"
                ));
            }
        };
        if let Some(server) = &self.process
            && let Some(id) = procfs::process_ids(&shown)
                .into_iter()
                .find(|id| server.owns(*id))
        {
            return Some(format!(
                "touches {shown}: {id} is a thread of Countersign's own process (pid {}), built in",
                server.pid()
            ));
        }
        let normal = paths::folded(&shown);
        if !normal.starts_with('/') {
            return None;
        }
        let holder = !self.is_home_or_root(&normal);
        self.places
            .iter()
            .find_map(|p| p.path_hit(&normal, &shown, holder))
    }

    /// Where a path leads on disk, when that is not where it reads (a symlink on the way).
    pub fn on_disk(&self, path: &str, base: Option<&str>) -> Option<String> {
        let joined = disk::joined(path, base)?;
        let real = disk::resolve(&joined)?.display().to_string();
        (real != paths::normalize(path, base)).then_some(real)
    }

    /// Why reading everything beneath the folder `path` (relative to `base`) reads one of
    /// Countersign's own places — the home folder and `/` included, which hold the data dir
    /// as much as any other — as written and as it leads on disk.
    pub fn tree_hit(&self, path: &str, base: Option<&str>) -> Option<String> {
        self.expanded(path).into_iter().find_map(|candidate| {
            let shown = paths::normalize(&candidate, base);
            let real = self.on_disk(&candidate, base);
            [Some(shown.clone()), real]
                .into_iter()
                .flatten()
                .find_map(|form| {
                    let form = match procfs::read(&form) {
                        procfs::Proc::Root(path) => path,
                        _ => form,
                    };
                    let normal = paths::folded(&form);
                    if !normal.starts_with('/') {
                        return None;
                    }
                    self.places.iter().find_map(|p| p.tree_hit(&normal, &shown))
                })
        })
    }

    /// Why a relative path read from a folder nobody knows (a running shell's) could be one of
    /// Countersign's own places: it climbs (`..`), or starts with the name of a folder on the
    /// way to one or of something inside the data dir; `None` when it cannot.
    pub fn relative_hit(&self, path: &str, glob: bool) -> Option<String> {
        let normal = paths::folded(&paths::normalize(path, None));
        let first = normal.split('/').next().unwrap_or("");
        if first == ".." {
            return Some(format!(
                "names `{path}` above a running shell's folder, which is not known here, so it could reach Countersign's own data (built in)"
            ));
        }
        let named = |name: &str| {
            if glob {
                places::segment_matches(first, name)
            } else {
                first == name
            }
        };
        let on_the_way = self.places.iter().flat_map(Place::segments).any(named)
            || DATA_FILES.iter().any(|name| named(name));
        let inside = || {
            self.places.iter().flat_map(Place::folders).any(|folder| {
                std::fs::read_dir(folder)
                    .into_iter()
                    .flatten()
                    .take(512)
                    .flatten()
                    .any(|entry| named(&entry.file_name().to_string_lossy().to_lowercase()))
            })
        };
        (on_the_way || inside()).then(|| {
            format!(
                "names `{path}` in a running shell's folder, which is not known here; from there it could be Countersign's own data (built in)"
            )
        })
    }

    /// The folder `dir` (a `cd`'s, `~/…` or relative to `base`) as an absolute path.
    pub fn folder(&self, dir: &str, base: Option<&str>) -> Option<String> {
        let expanded = self.expanded(dir);
        let dir = expanded.last().map_or(dir, String::as_str);
        let normal = paths::normalize(dir, base);
        normal.starts_with('/').then_some(normal)
    }

    /// Why a glob the agent's shell or tool expands (relative to `base`) could reach one of
    /// Countersign's own places; `None` when it cannot.
    pub fn glob_hit(&self, glob: &str, base: Option<&str>) -> Option<String> {
        self.expanded(glob).into_iter().find_map(|candidate| {
            let normal = paths::folded(&paths::normalize(&candidate, base));
            if !normal.starts_with('/') {
                return None;
            }
            let homes = &self.homes;
            self.places
                .iter()
                .find_map(|p| p.glob_hit(&normal, homes))
                .map(|hit| format!("names the glob `{glob}`, which {hit}"))
        })
    }

    /// Why free text (a word of a command, an interpreter's code, a proposal) names one of
    /// Countersign's own places or its PostgreSQL database — as written, with line
    /// continuations and invisible characters taken out, and with `%XX` decoded; `None` when
    /// it does not.
    pub fn text_hit(&self, text: &str) -> Option<String> {
        let joined = normalized(text);
        let decoded = text.contains('%').then(|| code::percent_decoded(&joined));
        [Some(text.to_owned()), Some(joined), decoded]
            .into_iter()
            .flatten()
            .find_map(|form| {
                let folded = form.to_lowercase();
                self.places
                    .iter()
                    .find_map(|p| p.named_in(&folded))
                    .or_else(|| self.database.as_ref()?.named_in(&folded))
            })
    }

    /// Why a command's word names one of Countersign's own places, read as written, with the
    /// variables this server knows put in (`$HOME/.local/share/countersign`), as a path
    /// relative to `base`, or anywhere in its text.
    pub fn word_hit(&self, word: &Word, base: Option<&str>) -> Option<String> {
        let expanded = self.with_vars(word, base);
        [Some(word.text.as_str()), expanded.as_deref()]
            .into_iter()
            .flatten()
            .find_map(|text| self.path_hit(text, base).or_else(|| self.text_hit(text)))
    }

    /// The word with every variable this server knows the value of put in; `None` when it
    /// has none, or a part only known when it runs.
    pub fn with_vars(&self, word: &Word, base: Option<&str>) -> Option<String> {
        if word.vars.is_empty() || word.opaque {
            return None;
        }
        let mut text = word.template.clone();
        for name in &word.vars {
            let value = match name.as_str() {
                "PWD" => base?.to_owned(),
                name => self.vars.iter().find(|(n, _)| *n == name)?.1.clone(),
            };
            text = text.replace(&format!("\u{1}{name}\u{2}"), &value);
        }
        (!text.contains('\u{1}')).then_some(text)
    }

    /// Whether `name` is this server's user (`~name` is then the home folder).
    pub fn is_user(&self, name: &str) -> bool {
        self.user.as_deref() == Some(name)
    }

    /// Whether the store is a PostgreSQL database (its clients are then on the floor).
    pub fn on_postgres(&self) -> bool {
        self.database.is_some()
    }

    fn is_home_or_root(&self, normal: &str) -> bool {
        normal == "/" || self.homes.iter().any(|h| h == normal)
    }
}

/// A folder's spellings, normalized and case-folded: as given and as it is on disk.
fn spellings(path: Option<&Path>) -> Vec<String> {
    let Some(path) = path else {
        return Vec::new();
    };
    let mut forms = vec![path.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(path) {
        forms.push(real);
    }
    let mut out: Vec<String> = Vec::new();
    for form in forms {
        let text = paths::folded(&paths::normalize(&form.display().to_string(), None));
        if text.starts_with('/') && !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

#[cfg(test)]
mod tests;
