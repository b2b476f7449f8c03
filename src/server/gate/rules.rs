//! Standing rules (from Allow always): which calls a rule covers, and the default pattern a
//! card offers. File tools match a path glob; `shell` matches a command exactly, or by prefix
//! when the pattern ends in ` *` (`echo *` covers `echo` and every `echo …`).
//!
//! **Invariant 26** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a rule is exactly as wide as it reads.
//!
//! `literal_separator` keeps a glob's `*` inside one folder; [`default_pattern`] builds the
//! narrowest pattern that still covers the call it is made from.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::protocol::{Rule, RuleScope, SessionId};
use crate::server::shell_syntax;
use crate::server::store::{RuleRepo, StoreError};
use crate::server::tools::{self, Subject, SubjectKind};

/// Whether a prefix rule may cover `rest` after the prefix: the whole command must read as
/// one plain simple command (no list, pipe, substitution or redirect), so `echo *` never lets
/// `echo ok; rm -rf x` through.
fn one_plain_command(command: &str) -> bool {
    match shell_syntax::read(command) {
        Ok(script) => {
            script.redirect_targets.is_empty()
                && script.commands.len() == 1
                && script.commands.iter().all(|c| !c.stdin_fed)
        }
        Err(_) => false,
    }
}

/// The standing rule that answers this call in this session, its use already spent, if any.
/// `also` narrows further what may answer (the built-in agent's check of where a path leads).
pub async fn matching(
    rules: &dyn RuleRepo,
    session_id: &str,
    tool: &str,
    args: &Value,
    also: &(dyn Fn(&Rule) -> bool + Sync),
) -> Result<Option<Rule>, StoreError> {
    let subject = tools::get(tool).and_then(|t| t.subject(args));
    matching_subject(rules, session_id, tool, subject.as_ref(), also).await
}

/// The standing rule that answers a call on `subject` in this session, its use already spent,
/// if any (outside agents' calls, whose subjects `tools::outside` reads).
///
/// **The use is claimed here, before the call runs**, not counted when its record commits: a
/// grant with uses left is only a candidate until [`RuleRepo::claim_rule_use`] spends one
/// atomically. When two calls race for a grant's last use, one claim succeeds and the other
/// finds no rule (the next candidate, or the person) — never two calls run on one use. Failing
/// the commit instead would leave the call's verdict (run unasked) already taken by every
/// caller; here there is one place, the matcher both gates share, and what it returns is what
/// answers. A use claimed for a call that then fails to start is spent all the same (a grant
/// never answers more calls than it says).
pub async fn matching_subject(
    rules: &dyn RuleRepo,
    session_id: &str,
    tool: &str,
    subject: Option<&Subject>,
    also: &(dyn Fn(&Rule) -> bool + Sync),
) -> Result<Option<Rule>, StoreError> {
    let Some(subject) = subject else {
        return Ok(None);
    };
    let now = crate::protocol::Timestamp::now();
    let candidates = rules.list_rules().await?.into_iter().filter(|rule| {
        let in_scope = match rule.scope {
            RuleScope::Workspace => true,
            RuleScope::Session => {
                rule.session_id.as_ref().map(SessionId::as_str) == Some(session_id)
            }
        };
        rule.lapsed.is_none()
            && in_scope
            && rule.tool == tool
            && covers_subject(rule, subject)
            && also(rule)
    });
    for mut rule in candidates {
        if rules.claim_rule_use(&rule.id, &now).await? {
            rule.uses += 1;
            rule.last_used_at = Some(now);
            return Ok(Some(rule));
        }
    }
    Ok(None)
}

/// Whether `rule` covers this call.
pub fn covers(rule: &Rule, tool: &str, args: &Value) -> bool {
    rule.tool == tool
        && tools::get(tool)
            .and_then(|t| t.subject(args))
            .is_some_and(|subject| covers_subject(rule, &subject))
}

/// Whether a path rule also covers the path a call's path really leads to (a rule for
/// `docs/a.md` does not cover `src/main.rs` reached through a symlink named `docs/a.md`).
pub fn covers_real_path(rule: &Rule, real: &str) -> bool {
    covers_subject(rule, &Subject::Path(real.to_owned()))
}

/// Whether `rule`'s pattern covers `subject`.
fn covers_subject(rule: &Rule, subject: &Subject) -> bool {
    match subject {
        Subject::Command(command) => covers_command(&rule.pattern, command),
        Subject::Path(path) => {
            path_matcher(&rule.pattern).is_ok_and(|m| m.is_match(path.trim_start_matches("./")))
        }
    }
}

/// `echo *` covers `echo` and `echo …`, `echo a*` covers `echo again …` (one plain command
/// each); a pattern without `*` covers that command only.
fn covers_command(pattern: &str, command: &str) -> bool {
    let command = command.trim();
    let pattern = pattern.trim();
    let Some(prefix) = pattern.strip_suffix('*') else {
        return command == pattern;
    };
    // Word by word, as written (`git  diff` is `git diff`; a quoted word is not the bare
    // one); a last word without a space before the `*` is the start of the next word.
    let (whole, partial) = match prefix.strip_suffix([' ', '\t']) {
        Some(whole) => (whole, ""),
        None => match prefix.rsplit_once([' ', '\t']) {
            Some((whole, partial)) => (whole, partial),
            None => return false,
        },
    };
    if whole.trim().is_empty() {
        return false;
    }
    let mut words = command.split_whitespace();
    whole
        .split_whitespace()
        .all(|wanted| words.next() == Some(wanted))
        && (partial.is_empty() || words.next().is_some_and(|w| w.starts_with(partial)))
        && one_plain_command(command)
}

/// A path rule's glob: `*` and `?` never cross `/` (only `**` does).
fn path_matcher(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    // Paths are matched without a leading `./`, so the pattern is read without one too.
    GlobBuilder::new(pattern.trim().trim_start_matches("./"))
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| glob.compile_matcher())
}

/// Paths no honest rule names all of: some at the top, some deep, some absolute (outside
/// agents' paths). A glob that matches every one of a row matches everything there.
const EVERYTHING: [&[&str]; 3] = [
    &["zqx", "Kw", "a.b", "_", "0", ".h"],
    &["zqx/Kw", "a.b/_/0", ".h/zqx.Kw"],
    &["/zqx", "/Kw/a.b", "/_/0/.h"],
];

/// Programs a rule may take as `program *`: they read, list or print, and run nothing named in
/// their arguments. Every other program's suggestion is narrower (below) or exact: a wrapper
/// (`timeout`, `nice`, `strace`, `uv run` …), an interpreter, a program that runs code its
/// arguments carry (`awk`, `sed`, `tar`, `git grep -O`, `go test -exec`) or that can destroy
/// or send something would make `program *` cover any command.
const PREFIX_PROGRAMS: &[&str] = &[
    "ls",
    "echo",
    "printf",
    "pwd",
    "wc",
    "head",
    "tail",
    "cat",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "diff",
    "cmp",
    "file",
    "stat",
    "du",
    "df",
    "date",
    "whoami",
    "id",
    "uname",
    "which",
    "sort",
    "uniq",
    "cut",
    "tr",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "tree",
    "jq",
    "nl",
    "sha256sum",
    "sha1sum",
    "md5sum",
    "cksum",
    "mkdir",
    "touch",
    "pytest",
];

/// Programs and subcommands a rule may take as `program subcommand *`: the subcommand runs the
/// workspace's own build or tests (what the person already lets run), or only reads.
const PREFIX_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &["status", "rev-parse", "ls-files", "blame", "shortlog"],
    ),
    (
        "cargo",
        &[
            "check", "test", "build", "clippy", "fmt", "doc", "tree", "metadata", "bench",
        ],
    ),
    ("go", &["build", "vet", "list", "fmt"]),
    ("npm", &["test", "ci", "ls", "outdated"]),
    ("pnpm", &["test", "ls", "outdated"]),
    ("yarn", &["test"]),
    ("docker", &["ps", "images"]),
    ("kubectl", &["get", "describe"]),
];
/// The pattern Allow always proposes for a subject: the exact path (its glob characters
/// escaped), or for a command the narrowest prefix that still reads as a rule
/// (`git status *`, `ls *`) — the exact command where only that is safe.
/// None when the pattern would hold a hidden character (a bidi control, a zero-width one): a
/// standing rule is never offered for what a person cannot read ([`validate_pattern`]).
pub fn default_pattern_of(subject: &Subject) -> Option<String> {
    let pattern = match subject {
        Subject::Command(command) => command_suggestion(command),
        Subject::Path(path) => globset::escape(path.trim_start_matches("./")),
    };
    (!crate::text::has_hidden(&pattern)).then_some(pattern)
}

fn command_suggestion(command: &str) -> String {
    let command = command.trim();
    let exact = command.to_owned();
    let Ok(script) = shell_syntax::read(command) else {
        return exact;
    };
    if !one_plain_command(command) || !script.assignments.is_empty() {
        return exact;
    }
    let Some(words) = script.commands.first().map(|c| &c.words) else {
        return exact;
    };
    let Some(first) = words.first() else {
        return exact;
    };
    // As written: the rule's prefix is matched against the text, so it must be the text's
    // own first words (no quotes, no assignments, no path to a program of its own).
    let raw: Vec<&str> = command.split_whitespace().collect();
    if words.iter().any(|w| w.dynamic)
        || raw.first() != Some(&first.text.as_str())
        || first.text.contains('/')
    {
        return exact;
    }
    let program = first.text.as_str();
    if PREFIX_PROGRAMS.contains(&program) {
        return format!("{program} *");
    }
    let subcommand = words
        .get(1)
        .map(|w| w.text.as_str())
        .filter(|w| !w.starts_with('-') && raw.get(1) == Some(w));
    let allowed = PREFIX_SUBCOMMANDS
        .iter()
        .find(|(p, _)| *p == program)
        .is_some_and(|(_, subs)| subcommand.is_some_and(|s| subs.contains(&s)));
    match subcommand {
        Some(sub) if allowed => format!("{program} {sub} *"),
        _ => exact,
    }
}

/// The pattern Allow always proposes (see [`default_pattern_of`]).
pub fn default_pattern(tool: &str, args: &Value) -> Option<String> {
    default_pattern_of(&tools::get(tool)?.subject(args)?)
}

/// Checks a pattern a person typed for a rule: a command, or `words *`; a path glob that
/// does not match everything; nothing in it a reader cannot see or that reorders what they
/// see (a rule is read on the Rules page and in the CLI: what it matches must be what they
/// read). The message shows the pattern as `crate::shown` writes it.
pub fn validate_pattern(tool: &str, pattern: &str) -> Result<(), String> {
    if crate::text::has_hidden(pattern) {
        return Err(format!(
            "the rule pattern `{}` holds invisible or direction-changing characters (written out as ⟨U+…⟩); a rule must match only what can be read",
            crate::shown::line(pattern)
        ));
    }
    let shown = crate::shown::line(pattern.trim());
    let trimmed = pattern.trim();
    let everything = || {
        Err(format!(
            "the rule pattern `{shown}` would match everything; name the path or command it is for"
        ))
    };
    if trimmed.is_empty() {
        return Err("the rule pattern must not be empty".into());
    }
    let kind = match tools::get(tool) {
        Some(builtin) => builtin.subject_kind(),
        None => Some(tools::outside::subject_kind(tool)),
    };
    if kind == Some(SubjectKind::Command) {
        let words = trimmed.strip_suffix('*').unwrap_or(trimmed);
        if words.trim().is_empty() {
            return everything();
        }
        // The program is named whole (`rm*` would also be `rmdir`, `rm -rf`…), and a `*`
        // only ends the pattern.
        let program_whole = !trimmed.ends_with('*')
            || words.ends_with([' ', '\t'])
            || words.trim().contains([' ', '\t']);
        if words.contains('*') || !program_whole {
            return Err(format!(
                "the rule pattern `{shown}`: a command rule is a command, or its first words and `*` (e.g. `git status *`, `echo a*`)"
            ));
        }
        return Ok(());
    }
    let matcher = path_matcher(trimmed)
        .map_err(|e| format!("the rule pattern `{shown}` is not a valid glob: {e}"))?;
    if EVERYTHING
        .iter()
        .any(|row| row.iter().all(|path| matcher.is_match(path)))
    {
        return everything();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RuleScope;
    use serde_json::json;

    fn rule(tool: &str, pattern: &str) -> Rule {
        Rule {
            id: "r".into(),
            tool: tool.into(),
            pattern: pattern.into(),
            scope: RuleScope::Session,
            session_id: None,
            created_at: crate::protocol::Timestamp::default(),
            created_by_approval: None,
            uses: 0,
            last_used_at: None,
            expires_at: None,
            max_uses: None,
            lapsed: None,
            source: None,
        }
    }

    #[test]
    fn command_rules_match_exactly_or_by_prefix() {
        let echo = rule("shell", "echo *");
        assert!(covers(&echo, "shell", &json!({"command": "echo hi"})));
        assert!(!covers(&echo, "shell", &json!({"command": "rm x"})));
        for chained in [
            "echo ok; touch x",
            "echo a && rm b",
            "echo $(rm x)",
            "echo `id`",
            "echo a | sh",
            "echo a > f",
            "echo a\nrm b",
        ] {
            assert!(
                !covers(&echo, "shell", &json!({"command": chained})),
                "{chained}"
            );
        }
        assert!(!covers(&echo, "write_file", &json!({"path": "echo"})));
        assert!(covers(&echo, "shell", &json!({"command": "echo"})));
        assert!(!covers(&echo, "shell", &json!({"command": "echoes x"})));
        let exact = rule("shell", "ls -la");
        assert!(covers(&exact, "shell", &json!({"command": "ls -la"})));
        assert!(!covers(&exact, "shell", &json!({"command": "ls -la /"})));
    }

    #[test]
    fn path_rules_are_globs_over_normalized_paths() {
        let docs = rule("write_file", "docs/*.md");
        assert!(covers(
            &docs,
            "write_file",
            &json!({"path": "docs/a.md", "content": ""})
        ));
        assert!(covers(
            &docs,
            "write_file",
            &json!({"path": "./docs/x/../b.md", "content": ""})
        ));
        assert!(!covers(
            &docs,
            "write_file",
            &json!({"path": "src/a.md", "content": ""})
        ));
        assert!(!covers(
            &docs,
            "edit_file",
            &json!({"path": "docs/a.md", "old": "a", "new": "b"})
        ));
    }

    #[test]
    fn defaults_and_validation() {
        assert_eq!(
            default_pattern("shell", &json!({"command": "echo hi there"})).unwrap(),
            "echo *"
        );
        assert_eq!(
            default_pattern("write_file", &json!({"path": "notes.md"})).unwrap(),
            "notes.md"
        );
        assert!(validate_pattern("write_file", "a[").is_err());
        assert!(validate_pattern("shell", "  ").is_err());
        assert!(validate_pattern("write_file", "**").is_err());
        assert!(validate_pattern("write_file", "docs/**").is_ok());
    }

    /// A path rule's `*` stays in its folder, and no spelling of "everything" is taken.
    #[test]
    fn path_rules_are_as_wide_as_they_read() {
        let docs = rule("write_file", "docs/*.md");
        assert!(!covers(
            &docs,
            "write_file",
            &json!({"path": "docs/private/keys.md", "content": ""})
        ));
        let top = rule("write_file", "*.md");
        assert!(!covers(
            &top,
            "write_file",
            &json!({"path": "src/notes.md", "content": ""})
        ));
        for everything in [
            "*", "**", "**/*", "?*", "[!/]*", "{*,x}", "*/**", "**/**", "{**,a}", "/**", "**/?*",
            "[^/]*", "*{,/**}", "**/", "./**",
        ] {
            assert!(
                validate_pattern("write_file", everything).is_err(),
                "{everything} was taken"
            );
            assert!(
                validate_pattern("Write", everything).is_err(),
                "{everything}"
            );
        }
        for narrow in [
            "src/*",
            "*.md",
            "docs/**",
            "q*",
            "src/**/*.rs",
            "/home/me/app/src/**",
        ] {
            assert!(validate_pattern("write_file", narrow).is_ok(), "{narrow}");
        }
    }

    /// A suggestion from a literal path matches that path only, whatever it holds.
    #[test]
    fn a_path_suggestion_escapes_glob_characters() {
        for path in [
            "notes[1].md",
            "a*b.txt",
            "what?.md",
            "{x,y}.txt",
            "src/[id].tsx",
        ] {
            let pattern = default_pattern_of(&Subject::Path(path.into())).unwrap();
            let r = rule("write_file", &pattern);
            assert!(
                covers(&r, "write_file", &json!({"path": path, "content": ""})),
                "{path} → {pattern}"
            );
            let other = path.replace(['[', ']', '*', '?', '{', '}', ','], "z");
            assert!(
                !covers(&r, "write_file", &json!({"path": other, "content": ""})),
                "{path} → {pattern} also covers {other}"
            );
        }
    }

    /// A command suggestion is never broader than the program and its subcommand, the exact
    /// command for what can destroy or send, and it always covers the call it came from.
    #[test]
    fn command_suggestions_are_narrow_and_cover_their_own_call() {
        let cases = [
            ("echo hi there", "echo *"),
            ("ls -la src", "ls *"),
            ("git status", "git status *"),
            ("git status --short", "git status *"),
            ("git  status  --short", "git status *"),
            ("git diff HEAD", "git diff HEAD"),
            ("cargo test -p x", "cargo test *"),
            ("timeout 5 ls", "timeout 5 ls"),
            ("nice -n 5 make", "nice -n 5 make"),
            ("awk '{print $1}' data.txt", "awk '{print $1}' data.txt"),
            ("sed -n 1,5p notes.txt", "sed -n 1,5p notes.txt"),
            ("tar tf release.tar", "tar tf release.tar"),
            ("git log --oneline", "git log --oneline"),
            ("git grep --no-index hello", "git grep --no-index hello"),
            ("go test ./...", "go test ./..."),
            ("make test", "make test"),
            ("uv run pytest", "uv run pytest"),
            ("strace -c ls", "strace -c ls"),
            ("cat notes.md", "cat *"),
            ("rm -f /tmp/example", "rm -f /tmp/example"),
            ("rm x", "rm x"),
            ("/bin/rm x", "/bin/rm x"),
            ("chmod 644 a", "chmod 644 a"),
            ("curl https://example.com", "curl https://example.com"),
            ("git push origin main", "git push origin main"),
            ("git reset --hard", "git reset --hard"),
            ("git -C sub status", "git -C sub status"),
            ("echo hi > out.txt", "echo hi > out.txt"),
            ("FOO=1 ls", "FOO=1 ls"),
            ("git status && git diff", "git status && git diff"),
            ("echo $HOME", "echo $HOME"),
            ("FOO=1 npm test", "FOO=1 npm test"),
            ("\"ls\" -la", "\"ls\" -la"),
            ("./build.sh", "./build.sh"),
            ("python3 -c 'print(1)'", "python3 -c 'print(1)'"),
            ("npx some-tool", "npx some-tool"),
            ("npm run build", "npm run build"),
        ];
        for (command, expected) in cases {
            let subject = Subject::Command(command.into());
            let pattern = default_pattern_of(&subject).unwrap();
            assert_eq!(pattern, expected, "{command}");
            assert!(validate_pattern("shell", &pattern).is_ok(), "{pattern}");
            assert!(
                covers(
                    &rule("shell", &pattern),
                    "shell",
                    &json!({"command": command})
                ),
                "{command}: its own suggestion `{pattern}` does not cover it"
            );
        }
        for bad in ["*", " *", "rm*", "r* -rf", "*echo", "echo * *", "ec*ho x"] {
            assert!(validate_pattern("shell", bad).is_err(), "{bad}");
        }
        let partial = rule("shell", "echo a*");
        assert!(covers(&partial, "shell", &json!({"command": "echo again"})));
        assert!(covers(&partial, "shell", &json!({"command": "echo a b"})));
        assert!(!covers(&partial, "shell", &json!({"command": "echo zulu"})));
        assert!(!covers(&partial, "shell", &json!({"command": "echo"})));
        assert!(!covers(
            &partial,
            "shell",
            &json!({"command": "echo again; rm x"})
        ));
    }

    /// A rule is read where it is listed: one whose pattern holds a character nobody can
    /// read (a bidi control or isolate, a zero-width character, a tag, an escape) is neither
    /// offered nor accepted, whatever the tool; a lookalike quote or blank, which is shown
    /// written out, is still a pattern like any other.
    #[test]
    fn a_rule_pattern_holds_nothing_hidden() {
        for hidden in [
            '\u{2066}',
            '\u{2069}',
            '\u{202E}',
            '\u{200B}',
            '\u{E0041}',
            '\u{1B}',
            '\u{FEFF}',
        ] {
            let command = format!("git push origin{hidden} main");
            for (tool, pattern) in [
                ("shell", command.clone()),
                ("shell", format!("git{hidden} *")),
                ("write_file", format!("docs/{hidden}a.md")),
                ("Bash", command.clone()),
            ] {
                let refused = validate_pattern(tool, &pattern).expect_err(&pattern);
                assert!(
                    refused.contains("invisible or direction-changing"),
                    "{refused}"
                );
                assert!(
                    !refused.contains(hidden),
                    "the message shows it written out: {refused}"
                );
            }
            assert_eq!(default_pattern_of(&Subject::Command(command.clone())), None);
            assert_eq!(
                default_pattern_of(&Subject::Path(format!("a{hidden}.md"))),
                None
            );
            assert_eq!(default_pattern("shell", &json!({"command": command})), None);
        }
        for shown in ["rm ❞ok", "rm\u{3000}-rf", "rm ‘a’"] {
            assert!(validate_pattern("shell", shown).is_ok(), "{shown}");
            assert_eq!(
                default_pattern_of(&Subject::Command(shown.into())).as_deref(),
                Some(shown)
            );
        }
    }
}
