//! One `[safety] commands` entry, read the way people write it — `rm -rf`, `git push --force`,
//! `dd if=`, `sudo`, `| sh` — and matched against a command's parsed words, not its text.
//!
//! How an entry matches (README, "Security model"):
//! - the first word names the program, by name or path (`/bin/rm` is `rm`); `mkfs` also
//!   covers `mkfs.ext4`, `python` also `python3` and `python3.12`;
//! - each flag must be present, in any order, grouping or long form: `-rf` is met by `-fr`,
//!   `-r -f`, `-R --force`, `--recursive --force`;
//! - each other word must be one of the arguments (`push`); one ending in `=` starts one
//!   (`if=` meets `if=/dev/zero`);
//! - an argument only known when the command runs (`$X`, `$(…)`, a glob) could be any flag,
//!   so a matching program with such an argument matches;
//! - `| prog` matches `prog` reading code from a pipe, a here-document or a here-string.

use crate::server::shell_syntax::Word;

/// Flags that mean the same thing, per program (short letters and long names).
const SAME_FLAGS: &[(&str, &[&[&str]])] = &[
    ("rm", &[&["r", "R", "recursive"], &["f", "force"]]),
    ("cp", &[&["r", "R", "recursive"], &["f", "force"]]),
    ("chmod", &[&["R", "recursive"]]),
    ("chown", &[&["R", "recursive"]]),
    (
        "git",
        &[
            &["f", "force", "force-with-lease", "force-if-includes"],
            &["d", "delete"],
        ],
    ),
];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Operand {
    Exact(String),
    Prefix(String),
}

/// A parsed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandPattern {
    /// As written, for messages.
    pub entry: String,
    program: String,
    /// `| prog`: matches only when `prog` reads code from its standard input.
    fed: bool,
    flags: Vec<String>,
    operands: Vec<Operand>,
}

/// What a command's arguments say: flags (short letters and long names) and operands.
#[derive(Default)]
struct Args<'a> {
    flags: Vec<String>,
    operands: Vec<&'a str>,
    /// Some argument is only known at run time.
    dynamic: bool,
}

fn read_args(words: &[Word]) -> Args<'_> {
    let mut args = Args::default();
    let mut only_operands = false;
    for word in words {
        if word.dynamic {
            args.dynamic = true;
            continue;
        }
        let text = word.text.as_str();
        if only_operands || text == "-" || !text.starts_with('-') {
            args.operands.push(text);
        } else if text == "--" {
            only_operands = true;
        } else if let Some(long) = text.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            args.flags.push(name.to_owned());
        } else {
            args.flags
                .extend(text.chars().skip(1).map(|c| c.to_string()));
        }
    }
    args
}

/// The base name of a program word: `/usr/bin/rm` → `rm`.
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `name` is `wanted`, or `wanted` with a dotted suffix or a version (`mkfs.ext4`, `python3.12`).
pub fn same_program(wanted: &str, name: &str) -> bool {
    match name.strip_prefix(wanted) {
        Some("") => true,
        Some(rest) => rest.starts_with('.') || rest.chars().all(|c| c.is_ascii_digit() || c == '.'),
        None => false,
    }
}

impl CommandPattern {
    /// Reads an entry; the error says how to write one.
    pub fn parse(entry: &str) -> Result<CommandPattern, String> {
        let trimmed = entry.trim();
        let (fed, rest) = match trimmed.strip_prefix('|') {
            Some(rest) => (true, rest.trim_start()),
            None => (false, trimmed),
        };
        let mut words = rest.split_whitespace();
        let program = words.next().unwrap_or("");
        let shell_syntax = |w: &str| w.chars().any(|c| "|;&<>()`$\"'\\*?[]{}".contains(c));
        if program.is_empty()
            || shell_syntax(program)
            || words.clone().any(|w| shell_syntax(w.trim_end_matches('=')))
        {
            return Err(format!(
                "`safety.commands` entry `{entry}`: write a program and the flags or words that make it dangerous (`rm -rf`, `git push --force`, `dd if=`), or `| program` for code piped into it"
            ));
        }
        let mut flags = Vec::new();
        let mut operands = Vec::new();
        for word in words {
            if let Some(long) = word.strip_prefix("--") {
                flags.push(long.to_owned());
            } else if let Some(short) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
                flags.extend(short.chars().map(|c| c.to_string()));
            } else if word.ends_with('=') {
                operands.push(Operand::Prefix(word.to_owned()));
            } else {
                operands.push(Operand::Exact(word.to_owned()));
            }
        }
        Ok(CommandPattern {
            entry: trimmed.to_owned(),
            program: program_name(program).to_owned(),
            fed,
            flags,
            operands,
        })
    }

    /// Whether the command `words` (program first) matches; `fed`: its standard input is a
    /// pipe or a document.
    pub fn matches(&self, words: &[Word], fed: bool) -> bool {
        let Some((program, rest)) = words.split_first() else {
            return false;
        };
        // `. /dev/stdin` and `source /dev/stdin` run what is piped in, as `sh` would.
        let sources_stdin = matches!(program.text.as_str(), "." | "source")
            && matches!(
                self.program.as_str(),
                "sh" | "bash" | "zsh" | "dash" | "ksh"
            )
            && rest.first().is_some_and(|w| is_stdin(&w.text));
        if sources_stdin {
            return self.fed && fed;
        }
        if !same_program(&self.program, program_name(&program.text)) {
            return false;
        }
        let args = read_args(rest);
        if self.fed {
            return fed && reads_code_from_stdin(&args) && self.required_present(&args);
        }
        self.required_present(&args) || args.dynamic
    }

    fn required_present(&self, args: &Args<'_>) -> bool {
        let flags_ok = self.flags.iter().all(|flag| {
            self.equivalents(flag).iter().any(|same| {
                args.flags.iter().any(|f| f == same)
                    // `git push origin +main` forces like `--force`; `:main` deletes.
                    || (self.program == "git"
                        && *same == "force"
                        && args.operands.iter().any(|o| o.starts_with('+')))
                    || (self.program == "git"
                        && *same == "delete"
                        && args.operands.iter().any(|o| o.starts_with(':') && o.len() > 1))
            })
        });
        let operands_ok = self.operands.iter().all(|wanted| match wanted {
            Operand::Exact(w) => args.operands.contains(&w.as_str()),
            Operand::Prefix(p) => args.operands.iter().any(|o| o.starts_with(p.as_str())),
        });
        flags_ok && operands_ok
    }

    /// A flag and the flags that mean the same for this program.
    fn equivalents<'a>(&'a self, flag: &'a str) -> Vec<&'a str> {
        SAME_FLAGS
            .iter()
            .filter(|(program, _)| *program == self.program)
            .flat_map(|(_, groups)| groups.iter())
            .find(|group| group.contains(&flag))
            .map(|group| group.to_vec())
            .unwrap_or_else(|| vec![flag])
    }
}

/// Whether the command `words` (program first) is a shell reading its code from standard
/// input (`sh`, `bash -s`, `sh -`, `. /dev/stdin`).
pub fn reads_shell_stdin(words: &[Word]) -> bool {
    const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"];
    let Some((program, rest)) = words.split_first() else {
        return false;
    };
    if matches!(program.text.as_str(), "." | "source") {
        return rest.first().is_some_and(|w| is_stdin(&w.text));
    }
    let name = program_name(&program.text);
    SHELLS.iter().any(|s| same_program(s, name)) && reads_code_from_stdin(&read_args(rest))
}

/// A shell or interpreter run with no script file (or with `-` or `-s`) reads its code from
/// standard input; with `-c`/`-e` the code is an argument (a shell's is read on its own).
fn reads_code_from_stdin(args: &Args<'_>) -> bool {
    let has = |f: &str| args.flags.iter().any(|g| g == f);
    if has("s") {
        return true;
    }
    if has("c") || has("e") || has("command") || has("eval") {
        return false;
    }
    args.operands.iter().all(|o| is_stdin(o)) && !args.dynamic
}

/// A script "file" that is the standard input itself.
fn is_stdin(operand: &str) -> bool {
    matches!(
        operand,
        "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "/dev/fd/0/"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_and_bad_ones_explained() {
        let p = CommandPattern::parse("rm -rf").unwrap();
        assert_eq!(
            (p.program.as_str(), p.flags.clone()),
            ("rm", vec!["r".to_owned(), "f".to_owned()])
        );
        let p = CommandPattern::parse("| /bin/sh").unwrap();
        assert!(p.fed);
        assert_eq!(p.program, "sh");
        let p = CommandPattern::parse("dd if=").unwrap();
        assert_eq!(p.operands, [Operand::Prefix("if=".into())]);
        for bad in ["", "  ", "curl … | sh", "rm $(x)", "a; b"] {
            let err = CommandPattern::parse(bad).unwrap_err();
            assert!(err.contains("safety.commands"), "{bad}: {err}");
        }
    }

    #[test]
    fn program_names_cover_paths_suffixes_and_versions() {
        assert!(same_program("mkfs", "mkfs.ext4"));
        assert!(same_program("python", "python3.12"));
        assert!(!same_program("rm", "rmdir"));
        assert!(!same_program("sh", "shred"));
        assert_eq!(program_name("/usr/bin/rm"), "rm");
    }
}
