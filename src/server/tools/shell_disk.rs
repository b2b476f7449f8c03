//! What a shell command would reach on disk beyond its words, for the safety floor: the
//! workspace files its globs expand to (as bash expands them: segment by segment, a leading
//! `.` only by a written `.`), and the files under a folder a recursive reader reads on its
//! own (`grep -r`, `rg`, `find`, `tar c`, `cp -r`, `zip -r`, `rsync`). The floor then asks
//! when one of them is a floor file. Bounded: a huge workspace is walked only so far.

use std::path::Path;

use globset::GlobBuilder;

use super::reader::Hidden;
use crate::server::shell_syntax::{self, Word};

/// Files looked at per walk: past it, the walk says what it found so far.
const WALK_LIMIT: usize = 20_000;

/// What the command would reach on disk, run in `workspace`.
pub fn reached(command: &str, workspace: &Path) -> Vec<Hidden> {
    let Ok(script) = shell_syntax::read(command) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for cmd in &script.commands {
        for word in cmd.words.iter().skip(1).filter(|w| w.glob) {
            for path in expand(workspace, &word.text) {
                found.push(Hidden::Expands {
                    glob: word.text.clone(),
                    path,
                });
            }
        }
        for folder in recursive_operands(&cmd.words) {
            let files = walk(workspace, &folder);
            if !files.is_empty() {
                found.push(Hidden::Reaches { folder, files });
            }
        }
    }
    found
}

/// The folders a recursive reader reads (its operands that are folders; `.` when none).
fn recursive_operands(words: &[Word]) -> Vec<String> {
    let Some(program) = words.first() else {
        return Vec::new();
    };
    let name = program.text.rsplit('/').next().unwrap_or(&program.text);
    let args: Vec<&Word> = words.iter().skip(1).collect();
    let has = |short: char, long: &str| {
        args.iter().any(|w| {
            let t = w.text.as_str();
            t == long || (t.starts_with('-') && !t.starts_with("--") && t.contains(short))
        })
    };
    let recursive = match name {
        "rg" | "ag" | "ack" | "find" | "rsync" => true,
        "grep" | "egrep" | "fgrep" => {
            has('r', "--recursive") || has('R', "--dereference-recursive")
        }
        "cp" => has('r', "--recursive") || has('R', "--recursive") || has('a', "--archive"),
        "zip" => has('r', "--recurse-paths"),
        "tar" => args.iter().any(|w| {
            let t = w.text.trim_start_matches('-');
            !w.text.starts_with("--") && t.contains('c') || w.text == "--create"
        }),
        "scp" => has('r', "-r"),
        "git" => {
            args.first()
                .is_some_and(|w| matches!(w.text.as_str(), "add" | "stash"))
                && args
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "-A" | "--all" | "." | "-a"))
        }
        _ => false,
    };
    if !recursive {
        return Vec::new();
    }
    let mut folders: Vec<String> = args
        .iter()
        .filter(|w| !w.dynamic && !w.text.starts_with('-') && !w.text.is_empty())
        .map(|w| w.text.clone())
        .collect();
    // Most recursive readers default to the current folder; keep every operand (a pattern
    // operand such as grep's is walked too, harmlessly: it is rarely a folder).
    folders.push(".".into());
    folders
}

/// The files under `folder` (relative to the workspace), if it is a folder inside it.
fn walk(workspace: &Path, folder: &str) -> Vec<String> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    let start = root.join(folder);
    let Ok(start) = start.canonicalize() else {
        return Vec::new();
    };
    if !start.starts_with(&root) || !start.is_dir() {
        return Vec::new();
    }
    walkdir::WalkDir::new(&start)
        .into_iter()
        .filter_map(Result::ok)
        .take(WALK_LIMIT)
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(&root).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_string_lossy().into_owned())
        })
        .collect()
}

/// The workspace paths a glob expands to, as bash expands it (no `globstar`, `dotglob` or
/// `nocaseglob`: the floor asks for a script that turns them on).
fn expand(workspace: &Path, glob: &str) -> Vec<String> {
    if glob.starts_with('/') || glob.starts_with('~') {
        return Vec::new();
    }
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    let mut current: Vec<String> = vec![String::new()];
    let mut looked = 0usize;
    for segment in glob.split('/').filter(|s| !s.is_empty() && *s != ".") {
        let mut next = Vec::new();
        for dir in &current {
            if segment == ".." {
                continue;
            }
            let literal = !segment.contains(['*', '?', '[', '{']);
            if literal {
                let path = join(dir, segment);
                if root.join(&path).exists() {
                    next.push(path);
                }
                continue;
            }
            let Ok(matcher) = GlobBuilder::new(segment)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
            else {
                continue;
            };
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                looked += 1;
                if looked > WALK_LIMIT {
                    return next;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && !segment.starts_with('.') {
                    continue;
                }
                if matcher.is_match(&name) {
                    next.push(join(dir, &name));
                }
            }
        }
        current = next;
        if current.is_empty() {
            break;
        }
    }
    current.into_iter().filter(|p| !p.is_empty()).collect()
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_expand_as_bash_does_and_recursive_readers_reach_their_folder() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".ssh")).unwrap();
        std::fs::create_dir_all(ws.path().join("src")).unwrap();
        for f in [
            ".env",
            "server.pem",
            ".ssh/known_hosts",
            "src/main.rs",
            "notes.md",
        ] {
            std::fs::write(ws.path().join(f), "x").unwrap();
        }
        let expands = |command: &str| -> Vec<String> {
            reached(command, ws.path())
                .into_iter()
                .filter_map(|h| match h {
                    Hidden::Expands { path, .. } => Some(path),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(expands("cat ??*.pe[m]"), ["server.pem"]);
        assert_eq!(expands("cat .ss[h]/known_host[s]"), [".ssh/known_hosts"]);
        let mut all = expands("cat *");
        all.sort();
        assert_eq!(
            all,
            ["notes.md", "server.pem", "src"],
            "a `*` skips dotfiles"
        );
        assert!(expands("cat .e*").contains(&".env".to_owned()));
        let reaches = reached("grep -r KEY .", ws.path());
        assert!(
            reaches.iter().any(
                |h| matches!(h, Hidden::Reaches { files, .. } if files.contains(&".env".to_owned()))
            ),
            "{reaches:?}"
        );
        assert!(reached("grep KEY notes.md", ws.path()).is_empty());
    }
}
