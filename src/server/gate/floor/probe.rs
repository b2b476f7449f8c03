//! Whether a glob in a command (`.e*`, `.gi?/config`, `*.pem`) could match a path on the
//! safety floor, without looking at the disk: each floor glob is turned into the paths it
//! names (its wildcards filled in), and the command's glob is matched against them segment by
//! segment, as a shell expands it (a `*` does not match a leading `.`; a glob naming a folder
//! the floor covers counts too).

use globset::GlobBuilder;

/// Paths one floor glob names.
pub struct Probe {
    /// Each path as segments.
    paths: Vec<Vec<String>>,
    /// The floor glob matches at any depth (`**/…`).
    anywhere: bool,
}

/// Names standing in for a `**` or `*` of a floor glob: the files such folders hold.
const FILLERS: [&str; 4] = ["config", "HEAD", "id_rsa", "x"];

/// The probe of one floor glob.
pub fn of(pattern: &str) -> Option<Probe> {
    let (anywhere, rest) = match pattern.trim().strip_prefix("**/") {
        Some(rest) => (true, rest),
        None => (false, pattern.trim()),
    };
    let mut paths: Vec<String> = vec![String::new()];
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        let choices: Vec<String> = match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                FILLERS.iter().map(|f| (*f).to_owned()).collect()
            }
            '*' => vec![String::new(), "x".into()],
            '?' => vec!["x".into()],
            '[' => {
                let mut class = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    class.push(d);
                }
                let first = class.trim_start_matches(['!', '^']).chars().next();
                vec![first.map(String::from).unwrap_or_else(|| "x".into())]
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
        paths = paths
            .iter()
            .flat_map(|p| choices.iter().map(move |c| format!("{p}{c}")))
            .take(64)
            .collect();
    }
    let paths: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            p.split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|segments| !segments.is_empty())
        .collect();
    (!paths.is_empty()).then_some(Probe { paths, anywhere })
}

/// Whether one segment of a shell glob matches one segment of a path, as the shell expands
/// it: a leading `.` must be matched by a `.` of the glob.
fn segment_matches(glob: &str, segment: &str) -> bool {
    if segment.starts_with('.') && !glob.starts_with('.') {
        return false;
    }
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher().is_match(segment))
        .unwrap_or(true)
}

impl Probe {
    /// Whether the glob `pattern` (a command's word, relative to the workspace or absolute)
    /// could match a path this probe names, or a folder one lies in.
    pub fn reached_by(&self, pattern: &str) -> bool {
        let glob: Vec<&str> = pattern
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        if glob.is_empty() {
            return false;
        }
        self.paths.iter().any(|path| {
            // The glob's last segments name a path, or a folder, of the floor: where the
            // floor glob matches at any depth, they may sit at the end of the glob.
            (1..=path.len()).any(|n| {
                let named = &path[..n];
                if glob.len() < n || (!self.anywhere && glob.len() != n) {
                    return false;
                }
                glob[glob.len() - n..]
                    .iter()
                    .zip(named)
                    .all(|(g, p)| segment_matches(g, p))
            })
        })
    }

    /// One path it names, for the reason in words.
    pub fn example(&self) -> String {
        self.paths.first().map(|p| p.join("/")).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reached(floor: &[&str], glob: &str) -> bool {
        floor
            .iter()
            .filter_map(|p| of(p))
            .any(|probe| probe.reached_by(glob))
    }

    const FLOOR: [&str; 7] = [
        "**/.env*",
        "**/*.pem",
        "**/*.key",
        "**/id_rsa*",
        "**/.git/**",
        "**/.ssh/**",
        "**/deploy*",
    ];

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
            assert_eq!(reached(&FLOOR, glob), expected, "{glob}");
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
            assert!(!reached(&FLOOR, glob), "{glob}");
        }
    }
}
