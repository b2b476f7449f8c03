//! Commands that read, copy, archive, back up, serve or delete every file beneath the folders
//! they name: `grep -r`, `rg`, `tar` (and its `-C`), `cp -r`, `rsync`, `zip -r`, `7z`,
//! `restic`, `borg`, `rclone`, `python3 -m zipfile`/`http.server`, `git add -A`, `find
//! -delete`, `rm -r`, `mv`. Pointed at a folder that holds Countersign's own data — the home
//! folder or `/` included, which no plain path check counts — they reach it as surely as `cat`
//! would. Programs that only list names (`find`, `ls -R`, `du`) do not read contents and stay
//! off; what they run on each name (`find -exec cat`, `xargs cat`) is read by the floor as it
//! is anyway. And links: `ln -s` to such a folder makes a path to the data dir that names
//! nothing of it.

use super::super::pattern::{program_name, same_program};
use super::OwnPlaces;
use crate::server::shell_syntax::Word;

/// Programs that read a whole tree, with the flags that make them (none listed: always), and
/// whether they read the current folder when they name none. (`cp`, `rsync`, `scp` and `mv`
/// write their last operand: only the others are read.)
const TREE_READERS: &[(&str, &[&str], bool)] = &[
    (
        "grep",
        &["r", "R", "recursive", "dereference-recursive"],
        false,
    ),
    (
        "egrep",
        &["r", "R", "recursive", "dereference-recursive"],
        false,
    ),
    (
        "fgrep",
        &["r", "R", "recursive", "dereference-recursive"],
        false,
    ),
    ("rg", &[], true),
    ("ag", &[], true),
    ("ack", &[], true),
    ("ug", &[], true),
    (
        "ugrep",
        &["r", "R", "recursive", "dereference-recursive"],
        false,
    ),
    ("tar", &[], false),
    ("bsdtar", &[], false),
    ("zip", &["r", "recurse-paths"], false),
    ("cp", &["r", "R", "a", "recursive", "archive"], false),
    ("rsync", &[], false),
    ("scp", &["r"], false),
    ("rm", &["r", "R", "recursive"], false),
    ("mv", &[], false),
    ("duplicity", &[], false),
    ("rdiff-backup", &[], false),
];

/// Where the command runs, as the floor knows it.
#[derive(Clone, Copy)]
pub struct Here<'a> {
    /// The agent's folder.
    pub base: Option<&'a str>,
    /// The folder a `cd` before it reached, when it is not the agent's (absolute or `~/…`).
    pub moved: Option<&'a str>,
    /// A `cd` went somewhere only known when it runs (or a running shell's folder is unknown).
    pub unknown: bool,
}

/// Why the command `words` (program first) reads every file beneath a folder that holds one
/// of Countersign's own places; `None` when it does not.
pub fn tree_hit(words: &[Word], own: &OwnPlaces, here: Here<'_>) -> Option<String> {
    let (program, args) = words.split_first()?;
    let name = program_name(&program.text).to_lowercase();
    let folders = roots(&name, args)?;
    folders.into_iter().find_map(|folder| {
        let relative = !folder.starts_with(['/', '~', '$']);
        if here.unknown && relative {
            return Some(format!(
                "runs `{name}` over `{folder}` in a folder only known when it runs, which could hold Countersign's own data (built in)"
            ));
        }
        own.tree_hit(folder, here.base).or_else(|| {
            let moved = here.moved?;
            let joined = if relative {
                format!("{moved}/{folder}")
            } else {
                folder.to_owned()
            };
            own.tree_hit(&joined, here.base)
        })
    })
}

/// The folders a command reads whole, when it is one that does.
fn roots<'a>(name: &str, args: &'a [Word]) -> Option<Vec<&'a str>> {
    let operands = || -> Vec<&'a str> {
        args.iter()
            .filter(|a| !a.dynamic && !a.text.starts_with('-'))
            .map(|a| a.text.as_str())
            .collect()
    };
    match name {
        "find" => return find_roots(args),
        "git" => return git_roots(args),
        "7z" | "7za" | "7zr" => return archive_roots(&operands()),
        "restic" => return after_word(&operands(), "backup", 0),
        "borg" => return after_word(&operands(), "create", 1),
        "rclone" => return rclone_roots(&operands()),
        _ if same_program("python", name) => return python_module_roots(args),
        _ => {}
    }
    let (_, flags, reads_here) = TREE_READERS
        .iter()
        .find(|(reader, _, _)| same_program(reader, name))?;
    if !recursive(args, flags) {
        return None;
    }
    let mut folders = operands();
    if matches!(name, "cp" | "rsync" | "scp" | "mv") {
        folders.pop();
    }
    // A search's first operand is its pattern, unless `-e`/`-f` gave one.
    let searches = *reads_here || flags.contains(&"dereference-recursive");
    let pattern_given = args.iter().any(|a| {
        matches!(a.text.as_str(), "-e" | "-f" | "--regexp" | "--file")
            || a.text.starts_with("--regexp=")
            || a.text.starts_with("--file=")
    });
    if searches && !pattern_given && !folders.is_empty() {
        folders.remove(0);
    }
    if matches!(name, "tar" | "bsdtar") {
        folders.extend(option_values(args, &["-C", "--directory"]));
    }
    if *reads_here && folders.is_empty() {
        folders.push(".");
    }
    Some(folders)
}

/// `7z a|u ARCHIVE [FILES…]`: the files it packs (none named: the folder it runs in).
fn archive_roots<'a>(ops: &[&'a str]) -> Option<Vec<&'a str>> {
    matches!(ops.first().copied(), Some("a" | "u")).then(|| {
        let files: Vec<&str> = ops.iter().skip(2).copied().collect();
        if files.is_empty() { vec!["."] } else { files }
    })
}

/// `rclone copy|sync|… SOURCE DEST`: a local source (not `remote:`) is read whole.
fn rclone_roots<'a>(ops: &[&'a str]) -> Option<Vec<&'a str>> {
    let copies = [
        "copy", "sync", "move", "bisync", "copyto", "moveto", "cat", "serve",
    ];
    let source = ops
        .get(1)
        .filter(|_| ops.first().is_some_and(|s| copies.contains(s)));
    source.filter(|s| !s.contains(':')).map(|s| vec![*s])
}

/// Whether the flags that make the program read a tree are given (none needed: always).
fn recursive(args: &[Word], flags: &[&str]) -> bool {
    flags.is_empty()
        || args
            .iter()
            .map(|a| a.text.as_str())
            .filter(|a| a.starts_with('-') && *a != "-")
            .any(|flag| match flag.strip_prefix("--") {
                Some(long) => flags.contains(&long.split('=').next().unwrap_or(long)),
                None => flag
                    .chars()
                    .skip(1)
                    .any(|c| flags.contains(&c.to_string().as_str())),
            })
}

/// The values of an option given as `-C DIR`, `--directory DIR` or `--directory=DIR`.
fn option_values<'a>(args: &'a [Word], names: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let text = arg.text.as_str();
        if names.contains(&text) {
            out.extend(args.get(i + 1).map(|v| v.text.as_str()));
        } else if let Some((name, value)) = text.split_once('=')
            && names.contains(&name)
        {
            out.push(value);
        }
    }
    out
}

/// The operands after `word` (and `skip` more: `borg create REPO::NAME PATH…`).
fn after_word<'a>(operands: &[&'a str], word: &str, skip: usize) -> Option<Vec<&'a str>> {
    let at = operands.iter().position(|o| *o == word)?;
    let paths: Vec<&str> = operands.iter().skip(at + 1 + skip).copied().collect();
    Some(if paths.is_empty() { vec!["."] } else { paths })
}

/// `find [-H|-L|-P] ROOT… EXPRESSION` with `-delete`: everything beneath its roots goes.
fn find_roots(args: &[Word]) -> Option<Vec<&str>> {
    if !args.iter().any(|a| a.text == "-delete") {
        return None;
    }
    let roots: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .skip_while(|a| {
            matches!(*a, "-H" | "-L" | "-P") || a.starts_with("-O") || a.starts_with("-D")
        })
        .take_while(|a| !a.starts_with('-') && !matches!(*a, "(" | "!" | ","))
        .collect();
    Some(if roots.is_empty() { vec!["."] } else { roots })
}

/// `git [-C DIR] [--work-tree DIR] add -A|--all|.` and `git stash -u|-a`: every file of the
/// work tree goes into git's objects, where `git show` reads it back.
fn git_roots(args: &[Word]) -> Option<Vec<&str>> {
    let mut dirs = option_values(args, &["-C", "--work-tree"]);
    let sub_at = args.iter().enumerate().position(|(i, a)| {
        !a.text.starts_with('-')
            && !matches!(
                args.get(i.wrapping_sub(1)).map(|p| p.text.as_str()),
                Some("-C" | "-c" | "--work-tree" | "--git-dir")
            )
    })?;
    let rest: Vec<&str> = args[sub_at + 1..].iter().map(|a| a.text.as_str()).collect();
    let whole = match args[sub_at].text.as_str() {
        "add" => rest
            .iter()
            .any(|r| matches!(*r, "-A" | "--all" | "." | ":/" | "*" | "-f" | "--force")),
        "stash" => rest
            .iter()
            .any(|r| matches!(*r, "-u" | "--include-untracked" | "-a" | "--all")),
        _ => false,
    };
    if !whole {
        return None;
    }
    if dirs.is_empty() {
        dirs.push(".");
    }
    Some(dirs)
}

/// `python3 -m zipfile -c OUT SRC…`, `-m tarfile -c OUT SRC…`, `-m http.server [-d DIR]`.
fn python_module_roots(args: &[Word]) -> Option<Vec<&str>> {
    let module_at = args.iter().position(|a| a.text == "-m")? + 1;
    let module = args.get(module_at)?.text.as_str();
    let rest = &args[module_at + 1..];
    match module {
        "zipfile" | "tarfile" => {
            let create = rest
                .iter()
                .position(|a| matches!(a.text.as_str(), "-c" | "--create"))?;
            Some(
                rest.iter()
                    .skip(create + 2)
                    .map(|a| a.text.as_str())
                    .collect(),
            )
        }
        "http.server" | "SimpleHTTPServer" => {
            let dirs = option_values(rest, &["-d", "--directory"]);
            Some(if dirs.is_empty() { vec!["."] } else { dirs })
        }
        _ => None,
    }
}

/// Why a link made by the command `words` points at (or into) a folder that holds one of
/// Countersign's own places: `ln -s / r`, `ln -s ~ h`, `cp -s`, `mount --bind`. A path through
/// it names nothing of the data dir.
pub fn link_hit(words: &[Word], own: &OwnPlaces, here: Here<'_>) -> Option<String> {
    let (program, args) = words.split_first()?;
    let name = program_name(&program.text).to_lowercase();
    let made = LinkArgs::read(args);
    let targets = made.targets(&name, args)?;
    // A symbolic link's relative target is read from the folder the link is in, not from
    // where the command runs: both are read. Where it runs: the folder a `cd` before it
    // reached, else the agent's, `~` read as the home folder too.
    let here_bases: Vec<Option<String>> = match here.moved.or(here.base) {
        Some(base) => own.expanded(base).into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut bases = here_bases.clone();
    for here in &here_bases {
        let folders = link_folders(own, made.made_in, here.as_deref());
        bases.extend(folders.into_iter().map(Some));
    }
    targets.into_iter().find_map(|target| {
        bases.iter().find_map(|base| {
            let base = base.as_deref();
            own.tree_hit(target, base)
                .or_else(|| own.path_hit(target, base))
                .map(|hit| format!("makes a link to {target}: it {hit}"))
        })
    })
}

/// A link-making command's operands, and where its links are made: `-t DIR`, or the last
/// operand (a folder or the link's name).
struct LinkArgs<'a> {
    operands: Vec<&'a str>,
    made_in: Option<&'a str>,
}

impl<'a> LinkArgs<'a> {
    fn read(args: &'a [Word]) -> LinkArgs<'a> {
        let mut operands: Vec<&str> = Vec::new();
        let mut made_in: Option<&str> = None;
        let mut skip_next = false;
        let mut previous = "";
        for arg in args {
            let text = arg.text.as_str();
            if skip_next {
                skip_next = false;
                if matches!(previous, "-t" | "--target-directory") {
                    made_in = Some(text);
                }
            } else if matches!(text, "-t" | "-S" | "--suffix" | "--target-directory" | "-o") {
                skip_next = true;
            } else if let Some(dir) = text.strip_prefix("--target-directory=") {
                made_in = Some(dir);
            } else if !text.starts_with('-') {
                operands.push(text);
            }
            previous = text;
        }
        if made_in.is_none() && operands.len() >= 2 {
            made_in = operands.last().copied();
        }
        LinkArgs { operands, made_in }
    }

    /// What the links point at, for the programs that make links; `None` for the others.
    fn targets(&self, name: &str, args: &[Word]) -> Option<Vec<&'a str>> {
        let has = |flags: &[&str]| args.iter().any(|a| flags.contains(&a.text.as_str()));
        let operands = &self.operands;
        let all_but_last = || operands[..operands.len().saturating_sub(1)].to_vec();
        Some(match name {
            "ln" | "link"
                if has(&["-t"])
                    || args
                        .iter()
                        .any(|a| a.text.starts_with("--target-directory=")) =>
            {
                operands.clone()
            }
            "ln" | "link" if operands.len() >= 2 => all_but_last(),
            "ln" | "link" => operands.clone(),
            "cp" if has(&["-s", "--symbolic-link"]) => all_but_last(),
            "mount"
                if has(&["--bind", "-B", "--rbind", "-R"])
                    || args.iter().any(|a| a.text.contains("bind")) =>
            {
                operands.iter().take(1).copied().collect()
            }
            "bindfs" => operands.iter().take(1).copied().collect(),
            _ => return None,
        })
    }
}

/// The folders a link made at `made_in` may sit in: `made_in` itself (a folder the link goes
/// into) and its parent (the link's own name), each as the command's folder reads them.
fn link_folders(own: &OwnPlaces, made_in: Option<&str>, base: Option<&str>) -> Vec<String> {
    let Some(made_in) = made_in else {
        return Vec::new();
    };
    own.expanded(made_in)
        .into_iter()
        .flat_map(|spelled| {
            let at = crate::server::tools::outside::paths::normalize(&spelled, base);
            let parent = at.rsplit_once('/').map(|(p, _)| p.to_owned());
            let parent = parent.map(|p| if p.is_empty() { "/".to_owned() } else { p });
            std::iter::once(at).chain(parent)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::server::gate::floor::own::Env;
    use crate::server::tools::sandbox::Places;

    fn own() -> OwnPlaces {
        let places = Places {
            workspace: PathBuf::from("/srv/ws"),
            data_dir: PathBuf::from("/home/me/.local/share/countersign"),
            config_file: PathBuf::from("/home/me/.local/share/countersign/config.toml"),
            database_file: None,
            database_url: None,
        };
        let env = Env {
            home: Some(PathBuf::from("/home/me")),
            tmpdir: None,
            user: Some("me".into()),
        };
        OwnPlaces::with_env(&places, &env, None)
    }

    fn at(base: &str) -> Here<'_> {
        Here {
            base: Some(base),
            moved: None,
            unknown: false,
        }
    }

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn whole_tree_readers_over_a_holder_ask() {
        let own = own();
        let here = Here {
            base: Some("/home/me/src"),
            moved: None,
            unknown: false,
        };
        for line in [
            "find ~ -name '*.tmp' -delete",
            "find -L / -delete",
            "7z a /tmp/h.7z /home/me",
            "restic -r /backup backup ~",
            "borg create /repo::x /home/me",
            "rclone copy ~ remote:bucket",
            "python3 -m zipfile -c /tmp/h.zip ~",
            "python3 -m http.server -d /home",
            "tar --directory=/home/me -czf /tmp/h.tgz .",
            "tar -C ~ -cf - .",
            "git -C ~ add -A",
            "rm -rf ~",
            "mv /home/me /tmp/gone",
            "ug -r BEGIN /",
        ] {
            assert!(tree_hit(&words(line), &own, here).is_some(), "{line}");
        }
        for line in [
            "find . -name '*.o' -delete",
            "rm -r build",
            "git add -A",
            "tar -C /tmp/out -xf x.tar",
            "python3 -m http.server",
            "rclone copy remote:a remote:b",
            "mv a.txt ~/",
        ] {
            assert_eq!(tree_hit(&words(line), &own, here), None, "{line}");
        }
        let home = Here {
            moved: Some("~"),
            ..here
        };
        assert!(tree_hit(&words("grep -r BEGIN ."), &own, home).is_some());
        assert!(tree_hit(&words("zip -qr /tmp/h.zip ."), &own, home).is_some());
        let lost = Here {
            unknown: true,
            ..here
        };
        assert!(tree_hit(&words("rg BEGIN"), &own, lost).is_some());
        assert!(tree_hit(&words("rg BEGIN /tmp"), &own, lost).is_none());
    }

    #[test]
    fn links_to_a_holder_ask() {
        let own = own();
        for line in [
            "ln -s / r",
            "ln -sfn /home/me h",
            "ln -s ~/.local l",
            "ln -s -t /tmp /home/me",
            "cp -s -r /home/me /tmp/x",
            "mount --bind /home/me /mnt",
        ] {
            assert!(
                link_hit(&words(line), &own, at("/srv/ws")).is_some(),
                "{line}"
            );
        }
        for line in [
            "ln -s ../lib/libx.so libx.so",
            "ln -s /usr/bin/python3 py",
            "cp a b",
        ] {
            assert_eq!(link_hit(&words(line), &own, at("/srv/ws")), None, "{line}");
        }
    }
}
