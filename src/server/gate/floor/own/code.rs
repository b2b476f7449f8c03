//! What a command hands to another program as code or data that reaches Countersign: an
//! interpreter's code that names its CLI (`python3 -c "os.system('countersign …')"`), a SQLite
//! client whose database or SQL is not a plain path of its own (`attach '…'||'…'`, `.open`,
//! a `file:` URI with `%61` in it), and a copy or a write of a program named `countersign`
//! (the CLI under another name runs as the CLI does).
//!
//! What code builds at run time (`'counter' + 'sign'`, a path joined from parts) is not read
//! here: README's "Outside agents and the OS boundary" names that class.

use super::super::pattern::{program_name, same_program};
use super::{OwnPlaces, cli};
use crate::server::shell_syntax::Word;

/// Programs that run code given as arguments or on standard input (by name; versions and
/// suffixes too: `python3.12`, `node22`).
pub const INTERPRETERS: [&str; 44] = [
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "rscript",
    "julia",
    "tclsh",
    "wish",
    "expect",
    "osascript",
    "groovy",
    "jshell",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "elixir",
    "iex",
    "erl",
    "escript",
    "swift",
    "ts-node",
    "tsx",
    "vim",
    "nvim",
    "vi",
    "ex",
    "emacs",
    "sed",
    "gdb",
    "make",
    "jq",
];

/// SQLite clients and the SQL that opens, attaches, writes or runs something else.
const SQLITE_CLIENTS: [&str; 6] = [
    "sqlite3",
    "sqlite",
    "litecli",
    "sqlite-utils",
    "duckdb",
    "datasette",
];
const SQL_ELSEWHERE: [&str; 24] = [
    "attach",
    "vacuum",
    ".open",
    ".restore",
    ".backup",
    ".save",
    ".clone",
    ".load",
    "load_extension",
    ".shell",
    ".system",
    ".read",
    ".import",
    ".output",
    ".once",
    ".excel",
    ".cd",
    ".archive",
    ".ar ",
    "readfile",
    "writefile",
    "edit(",
    ".connection",
    "copy ",
];

/// Programs that copy, move, link or write the files they name.
const COPIERS: [&str; 14] = [
    "cp", "mv", "ln", "link", "install", "rsync", "scp", "dd", "tee", "cat", "truncate", "base64",
    "xxd", "patchelf",
];

/// Whether `program` (a word) is an interpreter.
pub fn is_interpreter(program: &str) -> bool {
    let lower = program.to_lowercase();
    let name = program_name(&lower);
    INTERPRETERS.iter().any(|i| same_program(i, name))
}

/// Whether a text names the `countersign` program as a word of its own (any case, behind a
/// path, `.exe` or not), once line continuations and invisible characters are taken out.
pub fn names_cli(text: &str) -> bool {
    let text = super::normalized(text).to_lowercase();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices("countersign").any(|(at, found)| {
        let before = text[..at].chars().next_back();
        let after = text[at + found.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Why the command `words` (program first) hands code or a copy to something that reaches
/// Countersign; `None` when it does not.
pub fn command_hit(words: &[Word], own: &OwnPlaces, base: Option<&str>) -> Option<String> {
    let (program, args) = words.split_first()?;
    let lower = program.text.to_lowercase();
    let name = program_name(&lower);
    if is_interpreter(name) && args.iter().any(|a| names_cli(&a.text)) {
        return Some(format!(
            "runs `{name}` with code that names `countersign`, Countersign's own CLI (built in)"
        ));
    }
    if SQLITE_CLIENTS.iter().any(|c| same_program(c, name)) {
        return sqlite_hit(name, args, own, base);
    }
    if COPIERS.contains(&name) {
        return copies_hit(name, args);
    }
    None
}

/// A SQLite client: its database a `file:` URI of Countersign's (decoded), its SQL reading
/// or writing another file, or SQL it cannot be shown (from a file, from standard input).
fn sqlite_hit(name: &str, args: &[Word], own: &OwnPlaces, base: Option<&str>) -> Option<String> {
    let why = |what: &str| {
        Some(format!(
            "runs `{name}`, {what}, and Countersign keeps its own database in SQLite (built in)"
        ))
    };
    if args.iter().any(|a| a.dynamic) {
        return why("with arguments only known when it runs");
    }
    for arg in args {
        if let Some(path) = file_uri_path(&arg.text)
            && let Some(hit) = own.path_hit(&path, base).or_else(|| own.text_hit(&path))
        {
            return Some(format!("opens a `file:` URI that {hit}"));
        }
        let sql = arg.text.to_lowercase();
        if let Some(keyword) = SQL_ELSEWHERE.iter().find(|k| sql.contains(*k)) {
            return why(&format!(
                "whose SQL uses `{}`, which reaches another file",
                keyword.trim()
            ));
        }
    }
    if !matches!(name, "sqlite3" | "sqlite") {
        return None;
    }
    let mut sql = 0;
    let mut words = args.iter().map(|a| a.text.as_str());
    let mut database = false;
    while let Some(word) = words.next() {
        match word {
            "-init" => return why("reading SQL from a file (`-init`)"),
            "-cmd" => {
                words.next();
                sql += 1;
            }
            "-separator" | "-newline" | "-nullvalue" | "-vfs" | "-maxsize" | "-lookaside"
            | "-pagecache" | "-mmap" | "-heap" | "-escape" => {
                words.next();
            }
            option if option.starts_with('-') => {}
            _ if !database => database = true,
            _ => sql += 1,
        }
    }
    (sql == 0)
        .then(|| "reading its SQL from standard input, which is not shown".to_owned())
        .and_then(|what| why(&what))
}

/// A copy, a move, a link or a write of a file named `countersign`: the CLI under another
/// name, or something in its place.
fn copies_hit(name: &str, args: &[Word]) -> Option<String> {
    args.iter()
        .map(|a| a.text.as_str())
        .map(|a| {
            a.strip_prefix("if=")
                .or_else(|| a.strip_prefix("of="))
                .or_else(|| a.split_once('=').filter(|_| a.starts_with("--")).map(|(_, v)| v))
                .unwrap_or(a)
        })
        .find(|a| !a.starts_with('-') && names_program_file(a))
        .map(|file| {
            format!(
                "runs `{name}` on `{file}`, a program named like Countersign's CLI, which runs as the CLI under any name (built in)"
            )
        })
}

/// Whether a path's file name is `countersign` (any case, `.exe` or not).
pub fn names_program_file(path: &str) -> bool {
    let name = path
        .trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .to_lowercase();
    matches!(name.as_str(), "countersign" | "countersign.exe")
}

/// The path a `file:` URI names (its host, query and fragment taken off, `%XX` decoded).
pub fn file_uri_path(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let at = lower.find("file:")?;
    let rest = &text[at + "file:".len()..];
    let rest = match rest.strip_prefix("//") {
        Some(authority) => &authority[authority.find('/').unwrap_or(authority.len())..],
        None => rest,
    };
    let path = rest
        .split(['?', '#', '\'', '"', '`', ' ', ')', ','])
        .next()
        .unwrap_or("");
    (!path.is_empty()).then(|| percent_decoded(path))
}

/// `%XX` decoded (an invalid escape kept as written).
pub fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes.get(i),
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (Some(&b'%'), Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
            }
            (Some(b), _, _) => {
                out.push(*b);
                i += 1;
            }
            (None, _, _) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why an interpreter's or shell's code fed on standard input (or any word of a script that
/// feeds one) names the CLI in a way that changes state, or at all for an interpreter.
pub fn fed_text_hit(text: &str) -> Option<String> {
    names_cli(text).then(|| {
        "feeds code that names `countersign`, Countersign's own CLI, to a program that runs it (built in)"
            .to_owned()
    })
    .or_else(|| cli::text_hit(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_is_named_as_a_word_of_its_own() {
        for text in [
            "import os; os.system('countersign approvals approve 0123')",
            "require('child_process').execSync(\"/usr/local/bin/CounterSign passkey reset\")",
            "BEGIN { system(\"countersign config set a b\") }",
            "counter\\\nsign passkey reset",
            "counter\u{200b}sign passkey reset",
        ] {
            assert!(names_cli(text), "{text}");
        }
        for text in [
            "print('countersigned')",
            "my-countersign-tool",
            "countersign_db",
        ] {
            assert!(!names_cli(text), "{text}");
        }
    }

    #[test]
    fn file_uris_are_decoded_to_their_paths() {
        assert_eq!(
            file_uri_path("file:///home/me/d%61ta/countersign.db?mode=rw").as_deref(),
            Some("/home/me/data/countersign.db")
        );
        assert_eq!(
            file_uri_path("sqlite3.connect('file:../d%61ta/x.db', uri=True)").as_deref(),
            Some("../data/x.db")
        );
        assert_eq!(
            file_uri_path("FILE://localhost/tmp/a%2Fb").as_deref(),
            Some("/tmp/a/b")
        );
        assert_eq!(file_uri_path("/tmp/x.db"), None);
        assert_eq!(percent_decoded("%zz%41"), "%zzA");
    }

    #[test]
    fn programs_named_countersign_are_the_cli_wherever_they_are() {
        for path in [
            "/usr/local/bin/countersign",
            "countersign",
            "./x/COUNTERSIGN.exe",
            "bin/countersign/",
        ] {
            assert!(names_program_file(path), "{path}");
        }
        for path in [
            "/usr/local/bin/cs",
            "countersign.toml",
            "src/countersign.rs",
        ] {
            assert!(!names_program_file(path), "{path}");
        }
    }
}
