//! Whether a glob in a command (`.e*`, `.gi?/config`, `*.pem`) could match a path on the
//! safety floor, without looking at the disk: each floor glob is turned into the paths it
//! names (its wildcards filled in), and the command's glob is matched against them segment by
//! segment, as a shell expands it (a `*` does not match a leading `.`; a glob naming a folder
//! the floor covers counts too).

use globset::GlobBuilder;

/// One floor glob, as a command's glob is compared with it.
pub struct Probe {
    /// Its segments (each a glob), before a final `/**`.
    segments: Vec<String>,
    /// It ended in `/**`: a floor folder, everything beneath counts.
    folder: bool,
    /// It matches at any depth (`**/…`).
    anywhere: bool,
}

/// What a `*` of one glob is tried as when it is compared with another: names of the lengths
/// and shapes a file name takes.
const FILLERS: [&str; 10] = [
    "",
    "x",
    "xx",
    "xxx",
    "xxxxxxxxxxxx",
    "a.b",
    ".x",
    "-x",
    "_x",
    "x.y.z",
];

/// The probe of one floor glob.
pub fn of(pattern: &str) -> Option<Probe> {
    let pattern = pattern.trim();
    let (anywhere, rest) = match pattern.strip_prefix("**/") {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (folder, rest) = match rest.strip_suffix("/**") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    (!segments.is_empty()).then_some(Probe {
        segments,
        folder,
        anywhere,
    })
}

/// Names a glob segment matches, made by filling in its wildcards (at most a few dozen).
fn examples(glob: &str) -> Vec<String> {
    let mut names: Vec<String> = vec![String::new()];
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        let choices: Vec<String> = match c {
            '*' => FILLERS.iter().map(|f| (*f).to_owned()).collect(),
            '?' => vec!["x".into()],
            '[' => {
                let mut class = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    class.push(d);
                }
                let negated = class.starts_with(['!', '^']);
                let first = class.trim_start_matches(['!', '^']).chars().next();
                match (negated, first) {
                    (false, Some(first)) => vec![first.to_string()],
                    _ => vec!["x".into()],
                }
            }
            '{' => {
                let mut group = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    group.push(d);
                }
                group.split(',').map(str::to_owned).collect()
            }
            '\\' => vec![chars.next().map(String::from).unwrap_or_default()],
            other => vec![other.to_string()],
        };
        names = names
            .iter()
            .flat_map(|n| choices.iter().map(move |c| format!("{n}{c}")))
            .take(96)
            .collect();
    }
    names
}

/// Whether the glob segment `glob` matches the name `name` as a shell expands it: a leading
/// `.` must be matched by a `.` of the glob.
fn matches(glob: &str, name: &str) -> bool {
    if name.starts_with('.') && !glob.starts_with('.') {
        return false;
    }
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(true)
}

/// Whether two glob segments could match one name: a name one of them names, the other
/// matches (each way round).
fn overlap(command: &str, floor: &str) -> bool {
    examples(floor).iter().any(|name| matches(command, name))
        || examples(command)
            .iter()
            // A shell matches a leading `.` only by a `.` written first (`[.]env` is not `.env`).
            .filter(|name| !name.starts_with('.') || command.starts_with('.'))
            .any(|name| matches(floor, name))
}

impl Probe {
    /// Whether the glob `pattern` (a command's word, relative to the workspace or absolute)
    /// could match a path this floor glob names, or a folder it covers.
    pub fn reached_by(&self, pattern: &str) -> bool {
        let glob: Vec<&str> = pattern
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        let n = self.segments.len();
        if glob.is_empty() {
            return false;
        }
        let starts: Vec<usize> = if self.anywhere {
            (0..glob.len()).collect()
        } else {
            vec![0]
        };
        starts.into_iter().any(|i| {
            let fits = if self.folder {
                // The glob names the folder itself, or something inside it.
                glob.len() >= i + n
            } else {
                glob.len() == i + n
            };
            fits && glob[i..i + n]
                .iter()
                .zip(&self.segments)
                .all(|(g, f)| overlap(g, f))
        }) || self.names_a_folder_of(&glob)
    }

    /// A glob that names a folder the floor glob's path goes through (`.gi?` for
    /// `.git/hooks/*`): what is inside it is within reach.
    fn names_a_folder_of(&self, glob: &[&str]) -> bool {
        let n = self.segments.len();
        n > 1 && glob.len() < n && glob.iter().zip(&self.segments).all(|(g, f)| overlap(g, f))
    }

    /// One path it names, for the reason in words.
    pub fn example(&self) -> String {
        let path: Vec<String> = self
            .segments
            .iter()
            .map(|s| examples(s).into_iter().next().unwrap_or_default())
            .collect();
        let path = path.join("/");
        if self.folder {
            format!("{path}/…")
        } else {
            path
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the default floor's globs could be reached by `glob`.
    fn reached(glob: &str) -> bool {
        crate::server::config::SafetyConfig::default()
            .paths
            .iter()
            .filter_map(|p| of(p))
            .any(|probe| probe.reached_by(glob))
    }

    #[test]
    fn globs_that_could_name_a_floor_path_reach_it() {
        for glob in [
            ".e*",
            ".en?",
            ".env*",
            "*.pem",
            "certs/*.pem",
            ".gi?/config",
            ".git/*",
            ".g*/hooks/*",
            "id_*",
            ".ss?/*",
            "dep*",
            "[.]env",
            ".[e]nv",
            "sub/.e*",
            ".gi?",
            "*",
        ] {
            let expected = glob != "[.]env";
            assert_eq!(reached(glob), expected, "{glob}");
        }
    }

    #[test]
    fn globs_that_cannot_do_not() {
        for glob in [
            "*.o",
            "src/*.rs",
            "*.txt",
            "build/*.js",
            "notes?.md",
            "[a-c]*.md",
        ] {
            assert!(!reached(glob), "{glob}");
        }
    }
}
