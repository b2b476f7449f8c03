//! Programs whose arguments carry code or hidden writes, so that even the exact command a
//! person approved says nothing of what it does next time: `awk` (its program text is code;
//! `system()`, `print >` run and write), `sed` that edits in place, reads its script from a
//! file, or holds an `e`/`w`/`W` command or flag, and `find` with an action that runs or
//! writes (`-exec*`, `-ok*`, `-fprint*`, `-fls`, `-delete`). Such a command has no subject.

use crate::server::shell_syntax::Word;

/// The awk family: whatever it is given, its program text is code.
pub const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk"];

/// `find` primaries that run a command or write or delete a file (compared by prefix, so
/// `-execdir`, `-okdir`, `-fprintf` and `-fprint0` are among them).
pub const FIND_ACTIONS: &[&str] = &["-exec", "-ok", "-fprint", "-fls", "-delete"];

/// Whether `program` run with `args` may run code or write files its words do not show.
pub fn hides_its_effect(program: &str, args: &[Word]) -> bool {
    match program {
        p if AWKS.contains(&p) => true,
        "sed" | "gsed" => !sed_is_plain(args),
        "find" | "gfind" => args
            .iter()
            .any(|w| FIND_ACTIONS.iter().any(|a| w.text.starts_with(a))),
        _ => false,
    }
}

/// `sed`'s options that take a value and are harmless.
const SED_VALUE_OPTIONS: &[&str] = &["-l", "--line-length"];
/// `sed`'s flags that change nothing it writes or runs.
const SED_PLAIN_FLAGS: &[&str] = &[
    "--quiet",
    "--silent",
    "--regexp-extended",
    "--separate",
    "--null-data",
    "--posix",
    "--debug",
    "--sandbox",
    "--unbuffered",
    "--zero-terminated",
];
/// Letters of a short cluster that are plain flags (`-n`, `-E`, `-r`, `-s`, `-u`, `-z`).
const SED_PLAIN_LETTERS: &str = "nErsuz";

/// Whether a `sed` command only prints: no `-i`, no script file, and no script holding the
/// letters `e`, `w` or `W` (where its `e` and `w` commands and flags would be: a script
/// merely spelling such a letter is refused too, the safe side of reading sed's grammar).
fn sed_is_plain(args: &[Word]) -> bool {
    let mut scripts: Vec<&str> = Vec::new();
    let mut explicit = false;
    let mut positional = false;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        at += 1;
        if positional || text == "-" || !text.starts_with('-') {
            if !explicit && scripts.is_empty() {
                scripts.push(text);
            }
            continue;
        }
        if text == "--" {
            positional = true;
            continue;
        }
        let (name, value) = text
            .split_once('=')
            .map_or((text, None), |(n, v)| (n, Some(v)));
        if name == "--expression" {
            explicit = true;
            match value {
                Some(v) => scripts.push(v),
                None => scripts.push(args.get(at).map_or("", |w| w.text.as_str())),
            }
            at += usize::from(value.is_none());
            continue;
        }
        if SED_PLAIN_FLAGS.contains(&name) {
            continue;
        }
        if SED_VALUE_OPTIONS.contains(&name) {
            at += usize::from(value.is_none() && name.len() == text.len());
            continue;
        }
        if name.starts_with("--") {
            return false;
        }
        match short_script(&text[1..], args.get(at)) {
            Short::Plain { value_next } => at += usize::from(value_next),
            Short::Skip(script) => {
                explicit = true;
                scripts.push(script.0);
                at += usize::from(script.1);
            }
            Short::Refused => return false,
        }
    }
    !scripts.is_empty() && scripts.iter().all(|s| !s.contains(['e', 'w', 'W']))
}

/// What a short cluster (`-ne`, `-n`, `-l80`) does.
enum Short<'a> {
    /// Flags only; `value_next` when the next word is an option's value (`-l 80`).
    Plain { value_next: bool },
    /// `-e`: the script, and whether it was the next word.
    Skip((&'a str, bool)),
    /// `-i`, `-f` or an unknown letter.
    Refused,
}

fn short_script<'a>(letters: &'a str, next: Option<&'a Word>) -> Short<'a> {
    for (i, c) in letters.char_indices() {
        let rest = &letters[i + c.len_utf8()..];
        match c {
            'e' if rest.is_empty() => return Short::Skip((next.map_or("", |w| &w.text), true)),
            'e' => return Short::Skip((rest, false)),
            'l' => {
                return Short::Plain {
                    value_next: rest.is_empty(),
                };
            }
            c if SED_PLAIN_LETTERS.contains(c) => {}
            _ => return Short::Refused,
        }
    }
    Short::Plain { value_next: false }
}
