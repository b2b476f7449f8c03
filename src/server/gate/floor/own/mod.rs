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
//! The built-in agent's commands never reach these (the sandbox keeps them out), so only the
//! outside reading uses this.

mod cli;
mod database;
mod places;
mod tree;

use std::path::{Path, PathBuf};

use super::super::shell_syntax::Word;
use crate::server::tools::outside::paths;
use crate::server::tools::sandbox::Places;
use places::Place;

pub use cli::command_hit;
pub use tree::tree_hit;

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
}

impl OwnPlaces {
    /// The places of this server, with this process's environment and id.
    pub fn of(places: &Places) -> OwnPlaces {
        Self::with_env(places, &Env::current(), Some(std::process::id()))
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
    /// Countersign's own places, inside one, or a folder that holds one; `None` when it is not.
    pub fn path_hit(&self, path: &str, base: Option<&str>) -> Option<String> {
        self.expanded(path).into_iter().find_map(|candidate| {
            let shown = paths::normalize(&candidate, base);
            let normal = paths::folded(&shown);
            if !normal.starts_with('/') {
                return None;
            }
            let holder = !self.is_home_or_root(&normal);
            self.places
                .iter()
                .find_map(|p| p.path_hit(&normal, &shown, holder))
        })
    }

    /// Why reading everything beneath the folder `path` (relative to `base`) reads one of
    /// Countersign's own places — the home folder and `/` included, which hold the data dir
    /// as much as any other.
    pub fn tree_hit(&self, path: &str, base: Option<&str>) -> Option<String> {
        self.expanded(path).into_iter().find_map(|candidate| {
            let shown = paths::normalize(&candidate, base);
            let normal = paths::folded(&shown);
            if !normal.starts_with('/') {
                return None;
            }
            self.places.iter().find_map(|p| p.tree_hit(&normal, &shown))
        })
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
    /// Countersign's own places or its PostgreSQL database; `None` when it does not.
    pub fn text_hit(&self, text: &str) -> Option<String> {
        let folded = text.to_lowercase();
        self.places
            .iter()
            .find_map(|p| p.named_in(&folded))
            .or_else(|| self.database.as_ref()?.named_in(&folded))
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
    fn with_vars(&self, word: &Word, base: Option<&str>) -> Option<String> {
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
