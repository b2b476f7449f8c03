//! Commands that read (or copy) every file beneath the folders they name: `grep -r`, `rg`,
//! `tar`, `cp -r`, `rsync`, `zip -r`, `scp -r`. Pointed at a folder that holds Countersign's
//! own data — the home folder or `/` included, which no plain path check counts — they read it
//! as surely as `cat` would. Programs that only list names (`find`, `ls -R`, `du`) do not
//! read contents and stay off; what they run on each name (`find -exec cat`, `xargs cat`) is
//! read by the floor as it is anyway.

use super::super::super::shell_syntax::Word;
use super::super::pattern::{program_name, same_program};
use super::OwnPlaces;

/// Programs that read a whole tree, with the flags that make them (none listed: always), and
/// whether they read the current folder when they name none. (`cp`, `rsync` and `scp` write
/// their last operand: only the others are read.)
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
    ("tar", &[], false),
    ("zip", &["r", "recurse-paths"], false),
    ("cp", &["r", "R", "a", "recursive", "archive"], false),
    ("rsync", &[], false),
    ("scp", &["r"], false),
];

/// Why the command `words` (program first) reads every file beneath a folder that holds one
/// of Countersign's own places; `None` when it does not. `base`: the agent's folder.
pub fn tree_hit(words: &[Word], own: &OwnPlaces, base: Option<&str>) -> Option<String> {
    let (program, args) = words.split_first()?;
    let name = program_name(&program.text);
    let (_, flags, reads_here) = TREE_READERS
        .iter()
        .find(|(reader, _, _)| same_program(reader, name))?;
    let given: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .filter(|a| a.starts_with('-') && *a != "-")
        .collect();
    let recursive = flags.is_empty()
        || given.iter().any(|flag| match flag.strip_prefix("--") {
            Some(long) => flags.contains(&long.split('=').next().unwrap_or(long)),
            None => flag
                .chars()
                .skip(1)
                .any(|c| flags.contains(&c.to_string().as_str())),
        });
    if !recursive {
        return None;
    }
    let mut operands: Vec<&str> = args
        .iter()
        .filter(|a| !a.dynamic && !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
        .collect();
    if matches!(name, "cp" | "rsync" | "scp") {
        operands.pop();
    }
    let here = (*reads_here && operands.len() <= 1).then_some(".");
    operands
        .into_iter()
        .chain(here)
        .find_map(|folder| own.tree_hit(folder, base))
}
