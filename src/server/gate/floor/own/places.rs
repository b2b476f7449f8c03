//! One of Countersign's own places (the data dir, the config file, the database, the server's
//! process, its executable), in each spelling it can be reached by, and how a path, a glob or
//! a text reaches it.

use std::path::{Path, PathBuf};

use crate::server::tools::outside::paths;

/// How far a place reaches beyond itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A folder that holds it counts (moving or deleting it takes the place along), and so
    /// does a command that reads every file beneath one.
    Held,
    /// Only the place itself and what is inside it (the server's executable: the folders
    /// that hold it are build and install folders the agent works in).
    Itself,
}

/// One place, in every spelling (normalized, case-folded).
#[derive(Debug)]
pub struct Place {
    /// What it is, for the reason in words.
    what: &'static str,
    reach: Reach,
    /// As the server has it.
    shown: String,
    /// Absolute spellings: as given, as on disk, through each spelling of the home folder.
    forms: Vec<String>,
    /// What names it inside a text: the absolute spellings, `~/…`, and the part under the
    /// home folder when it has two segments or more (`.local/share/countersign`).
    names: Vec<String>,
}

impl Place {
    /// `path` and its spellings; `homes` are the home folder's (normalized, case-folded).
    pub fn new(what: &'static str, path: &Path, homes: &[String]) -> Place {
        Place::reaching(what, path, homes, Reach::Held)
    }

    /// As [`new`](Self::new), reaching as far as `reach` says.
    pub fn reaching(what: &'static str, path: &Path, homes: &[String], reach: Reach) -> Place {
        let mut forms: Vec<String> = Vec::new();
        for spelling in [path.to_path_buf(), on_disk(path)] {
            let form = paths::folded(&paths::normalize(&spelling.display().to_string(), None));
            add_form(&mut forms, form);
        }
        // Through every spelling of the home folder (a home reached through a symlink).
        let under_home: Vec<String> = forms
            .iter()
            .flat_map(|form| homes.iter().filter_map(move |h| beneath(form, h)))
            .map(str::to_owned)
            .collect();
        for rest in &under_home {
            for home in homes {
                add_form(&mut forms, format!("{home}/{rest}"));
            }
        }
        let mut names = forms.clone();
        for rest in &under_home {
            names.push(format!("~/{rest}"));
            if rest.contains('/') {
                names.push(rest.clone());
            }
        }
        Place {
            what,
            reach,
            shown: path.display().to_string(),
            forms,
            names,
        }
    }

    /// Why the normalized, case-folded absolute `path` (`shown` as the agent spelled it) is
    /// this place or inside it, or (when `holder` may count) a folder that holds it.
    pub fn path_hit(&self, path: &str, shown: &str, holder: bool) -> Option<String> {
        if self.forms.iter().any(|f| beneath(path, f).is_some()) {
            return Some(format!(
                "touches {shown}, Countersign's own {} ({}), built in",
                self.what, self.shown
            ));
        }
        let holds = |f: &String| beneath(f, path).is_some_and(|rest| !rest.is_empty());
        let holder = holder && self.reach == Reach::Held;
        (holder && self.forms.iter().any(holds)).then(|| {
            format!(
                "touches {shown}, a folder that holds Countersign's own {} ({}), built in",
                self.what, self.shown
            )
        })
    }

    /// Why reading everything beneath the normalized, case-folded absolute folder `path`
    /// (`shown` as the agent spelled it) reads this place, whatever folder it is.
    pub fn tree_hit(&self, path: &str, shown: &str) -> Option<String> {
        if self.reach != Reach::Held {
            return None;
        }
        self.forms
            .iter()
            .any(|f| beneath(f, path).is_some())
            .then(|| {
                format!(
                    "reads everything under {shown}, which holds Countersign's own {} ({}), built in",
                    self.what, self.shown
                )
            })
    }

    /// Whether the normalized, case-folded absolute glob could match this place, something
    /// inside it, or a folder that holds it (other than `/` and the home folder), as a shell
    /// expands it segment by segment; in words.
    pub fn glob_hit(&self, glob: &str, homes: &[String]) -> Option<String> {
        let segments: Vec<&str> = glob.split('/').filter(|s| !s.is_empty()).collect();
        self.forms
            .iter()
            .find(|form| {
                let place: Vec<&str> = form.split('/').filter(|s| !s.is_empty()).collect();
                reaches(&segments, &place, |named| {
                    let named = format!("/{}", named.join("/"));
                    self.reach == Reach::Held && named != "/" && !homes.contains(&named)
                })
            })
            .map(|_| {
                format!(
                    "could match Countersign's own {} ({}), built in",
                    self.what, self.shown
                )
            })
    }

    /// Whether a place folder's contents are what it is (the data dir), so that its entries
    /// on disk may be named from inside it.
    pub fn folders(&self) -> impl Iterator<Item = &str> {
        self.forms
            .iter()
            .filter(|_| self.reach == Reach::Held)
            .map(String::as_str)
    }

    /// The names of the folders on its way (and its own), case-folded: what a relative path
    /// read from an unknown folder must start with to reach it.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.forms
            .iter()
            .filter(|_| self.reach == Reach::Held)
            .flat_map(|form| form.split('/'))
            .filter(|segment| !segment.is_empty())
    }

    /// Why a case-folded text names this place; `None` when it does not.
    pub fn named_in(&self, text: &str) -> Option<String> {
        self.names
            .iter()
            .find(|name| text.contains(*name))
            .map(|name| {
                format!(
                    "names {name}, Countersign's own {} ({}), built in",
                    self.what, self.shown
                )
            })
    }
}

/// Adds an absolute spelling once (never `/` itself).
fn add_form(forms: &mut Vec<String>, form: String) {
    if form.starts_with('/') && form.len() > 1 && !forms.contains(&form) {
        forms.push(form);
    }
}

/// The path on disk: its canonical form, or its folder's joined to its name when it does not
/// exist yet (a config file not written yet).
fn on_disk(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_owned()),
        _ => path.to_owned(),
    }
}

/// What follows `folder` in `path` when `path` is `folder` (`""`) or inside it.
fn beneath<'a>(path: &'a str, folder: &str) -> Option<&'a str> {
    let folder = folder.strip_suffix('/').unwrap_or(folder);
    let rest = path.strip_prefix(folder)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// Whether glob segments could match the place's segments, something inside it (a `**`, or
/// a glob longer than the place), or a folder holding it that `holder` accepts.
fn reaches(glob: &[&str], place: &[&str], holder: impl Fn(&[&str]) -> bool) -> bool {
    for (i, segment) in glob.iter().enumerate() {
        if segment.contains("**") {
            return true;
        }
        match place.get(i) {
            None => return true,
            Some(name) if segment_matches(segment, name) => {}
            Some(_) => return false,
        }
    }
    glob.len() == place.len() || holder(&place[..glob.len()])
}

/// Whether one glob segment matches one name as a shell expands it: a leading `.` only by a
/// `.` written first; an unreadable segment could match anything.
pub fn segment_matches(glob: &str, name: &str) -> bool {
    if name.starts_with('.') && !glob.starts_with('.') {
        return false;
    }
    globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(true)
        .build()
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place {
        Place::new(
            "data directory",
            Path::new("/home/me/.local/share/countersign"),
            &["/home/me".to_owned(), "/data/home/me".to_owned()],
        )
    }

    #[test]
    fn a_place_is_reached_by_every_spelling_of_it_and_of_what_holds_it() {
        let p = place();
        for path in [
            "/home/me/.local/share/countersign",
            "/home/me/.local/share/countersign/token",
            "/data/home/me/.local/share/countersign/countersign.db",
            "/home/me/.local/share",
        ] {
            assert!(p.path_hit(path, path, true).is_some(), "{path}");
        }
        let share = "/home/me/.local/share";
        assert!(p.path_hit(share, share, false).is_none());
        for path in ["/home/me/.local/share/countersign2", "/home/me/work/token"] {
            assert!(p.path_hit(path, path, true).is_none(), "{path}");
        }
    }

    #[test]
    fn globs_that_could_reach_it_do_and_others_do_not() {
        let p = place();
        let homes = ["/home/me".to_owned()];
        for glob in [
            "/home/me/.local/share/count*/token",
            "/home/me/.local/*/countersign/*",
            "/home/me/.lo?al/share",
            "/home/me/**/token",
            "/home/me/.local/share/countersign/*",
        ] {
            assert!(p.glob_hit(glob, &homes).is_some(), "{glob}");
        }
        for glob in ["/home/me/*", "/home/*", "/home/me/work/*.rs", "/tmp/*"] {
            assert!(p.glob_hit(glob, &homes).is_none(), "{glob}");
        }
    }

    #[test]
    fn a_text_names_it_by_any_spelling() {
        let p = place();
        for text in [
            "open('/home/me/.local/share/countersign/token').read()",
            "cat ~/.local/share/countersign/vapid_private_key",
            "os.path.join(home, '.local/share/countersign', 'token')",
        ] {
            assert!(p.named_in(text).is_some(), "{text}");
        }
        assert!(p.named_in("cat ~/.local/share/other/x").is_none());
    }
}
