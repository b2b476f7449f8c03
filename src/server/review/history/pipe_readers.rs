//! What may read a pipe in a pipeline the history reviewer matches: only filters that write
//! no file and run nothing ([`FILTERS`]), without the options by which some of them do
//! (`sort -o`, `rg --pre`, `less -o`, `uniq in out`). An allowlist, not a denylist: a part
//! after `|` or `|&` runs on what the part before it prints, which its approvals say nothing
//! of (`curl URL | tar xz`, `| git apply`, `| psql`, `| stdbuf -o0 sh` were all missed by a
//! list of what may not stand there).

use crate::server::shell_syntax::Word;

/// Programs that only read what is piped to them (and the files they name) and print.
/// (`sed` is one when `programs::hides_its_effect` finds it plain, checked before this.)
pub const FILTERS: &[&str] = &[
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "head",
    "tail",
    "sort",
    "uniq",
    "wc",
    "cut",
    "tr",
    "cat",
    "tac",
    "nl",
    "column",
    "less",
    "more",
    "jq",
    "fold",
    "fmt",
    "rev",
    "od",
    "xxd",
    "hexdump",
    "base64",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shasum",
    "md5sum",
    "b2sum",
    "cksum",
    "sum",
    "diff",
    "cmp",
    "comm",
    "paste",
    "expand",
    "unexpand",
    "strings",
    "sed",
    "gsed",
];

/// Whether `program` run with `args` (after no variables of its own) may read a pipe: on
/// [`FILTERS`], and none of its arguments makes it write a file or run a program.
pub fn only_filters(program: &str, args: &[Word]) -> bool {
    if !FILTERS.contains(&program) {
        return false;
    }
    let texts = || args.iter().map(|w| w.text.as_str());
    match program {
        // `sort -o FILE` writes, `--compress-program` runs a program.
        "sort" => !texts().any(|t| short_holds(t, "o") || long_starts(t, &["--o", "--comp"])),
        // `--pre` runs a program on every file, `-z` the decompressors.
        "rg" => !texts().any(|t| short_holds(t, "z") || long_starts(t, &["--pre", "--search-z"])),
        // `-o`/`-O` and `--log-file` write a log, a `+` command runs at start.
        "less" | "more" => !texts().any(|t| {
            t.starts_with('+') || short_holds(t, "oO") || long_starts(t, &["--log", "--LOG"])
        }),
        // A second operand is the file they write (`uniq in out`, `xxd in out`).
        "uniq" | "xxd" => texts().all(|t| t.starts_with('-')),
        _ => true,
    }
}

/// `text` is a short option cluster (one `-`) holding any of `letters` (`-uo`, `-ofile`).
fn short_holds(text: &str, letters: &str) -> bool {
    text.strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && rest.contains(|c| letters.contains(c)))
}

/// `text` is a long option starting with one of `starts` (`--output=x`, `--pre=cmd`).
fn long_starts(text: &str, starts: &[&str]) -> bool {
    text.starts_with("--") && starts.iter().any(|s| text.starts_with(s))
}

#[cfg(test)]
mod tests {
    use super::only_filters;
    use crate::server::shell_syntax::Word;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter()
            .map(|t| Word {
                text: (*t).to_owned(),
                ..Word::default()
            })
            .collect()
    }

    #[test]
    fn filters_read_a_pipe() {
        for (program, args) in [
            ("grep", &["-v", "x"][..]),
            ("tail", &["-20"][..]),
            ("sort", &["-u", "-k2"][..]),
            ("uniq", &["-c"][..]),
            ("rg", &["-n", "todo"][..]),
            ("less", &["-R"][..]),
            ("jq", &[".name"][..]),
        ] {
            assert!(only_filters(program, &words(args)), "{program} {args:?}");
        }
    }

    #[test]
    fn writers_runners_and_their_options_do_not() {
        for (program, args) in [
            ("tar", &["xz"][..]),
            ("git", &["apply"][..]),
            ("sh", &[][..]),
            ("tee", &["x"][..]),
            ("sort", &["-o", "out"][..]),
            ("sort", &["-uo", "out"][..]),
            ("sort", &["--output=out"][..]),
            ("sort", &["--compress-program=sh"][..]),
            ("rg", &["--pre", "sh", "x"][..]),
            ("rg", &["-z", "x"][..]),
            ("less", &["-oout"][..]),
            ("less", &["--log-file=out"][..]),
            ("less", &["+!sh"][..]),
            ("uniq", &["-", "out"][..]),
            ("xxd", &["-r", "-", "out"][..]),
            ("./grep", &["x"][..]),
        ] {
            assert!(!only_filters(program, &words(args)), "{program} {args:?}");
        }
    }
}
