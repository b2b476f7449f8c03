//! Reads a Codex `apply_patch` payload the way Codex reads it, so the safety floor can check
//! every file the patch would touch.
//!
//! Codex's parsers (`codex-rs/apply-patch/src/{parser,streaming_parser}.rs`) have disagreed
//! over releases: an indented `*** Delete File:` inside an update is context to one and a
//! header to another. This reader takes the union, reporting every line any of them could read
//! as a header, and checks content more loosely than Codex: an extra path only makes the gate
//! ask, a missed one lets a write through. No envelope or an empty path is refused (it asks).

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const ENVIRONMENT: &str = "*** Environment ID:";
const END_OF_FILE: &str = "*** End of File";
/// The command names Codex intercepts (`APPLY_PATCH_COMMANDS` in `invocation.rs`).
const NAMES: [&str; 2] = ["apply_patch", "applypatch"];

/// One file a patch touches, as Codex would resolve it (relative paths stay relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touch {
    Add(String),
    Delete(String),
    Update {
        path: String,
        move_to: Option<String>,
    },
}

/// Why a payload is not a patch Codex would apply (the gate then treats it as unreadable: it asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError(pub String);

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a patch Codex would apply: {}", self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, PatchError> {
    Err(PatchError(why.into()))
}

/// What the last header opened, which decides what may follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hunk {
    None,
    Add,
    Delete,
    Update,
}

/// Parses the patch text (after any heredoc wrapper is stripped, leniently as Codex does).
pub fn parse(text: &str) -> Result<Vec<Touch>, PatchError> {
    // Codex splits `patch.trim()` with `str::lines`, which also drops each line's `\r`.
    let lines: Vec<&str> = text.trim().lines().collect();
    let mut touches = Vec::new();
    let mut hunk = Hunk::None;
    // Set by an indented header inside an update: the line-slicing parser reads it as a
    // context line, the streaming one as a header, so what follows may be either.
    let mut maybe_context = false;
    for line in envelope(&lines)? {
        let t = line.trim();
        let indented = line.starts_with(char::is_whitespace);
        let in_update = hunk == Hunk::Update || maybe_context;
        if let Some((kind, rest)) = header(t) {
            let path = named(rest, t)?;
            maybe_context = indented && in_update;
            hunk = kind;
            touches.push(match kind {
                Hunk::Add => Touch::Add(path),
                Hunk::Delete => Touch::Delete(path),
                _ => Touch::Update {
                    path,
                    move_to: None,
                },
            });
            continue;
        }
        if let Some(rest) = marker(t, MOVE) {
            let path = named(rest, t)?;
            if let Some(Touch::Update {
                move_to: slot @ None,
                ..
            }) = touches.last_mut()
            {
                *slot = Some(path);
            } else if !(indented && in_update) {
                return refuse(format!("`{t}` follows no `*** Update File:`"));
            }
            continue;
        }
        // The streaming parser stops at an inner `*** End Patch`; reading on only adds paths.
        if marker(t, END) == Some("") {
            continue;
        }
        let fits = match hunk {
            Hunk::None => t.is_empty() || marker(t, ENVIRONMENT).is_some(),
            Hunk::Add => t.is_empty() || line.starts_with('+'),
            Hunk::Delete => t.is_empty(),
            Hunk::Update => update_line(line),
        };
        if !(fits || (maybe_context && update_line(line))) {
            return refuse(format!("`{t}` is neither a file header nor part of one"));
        }
    }
    Ok(touches)
}

/// Every path the touches name (both ends of a move), in order.
pub fn paths(touches: &[Touch]) -> Vec<String> {
    let mut paths = Vec::new();
    for touch in touches {
        match touch {
            Touch::Add(path) | Touch::Delete(path) => paths.push(path.clone()),
            Touch::Update { path, move_to } => {
                paths.push(path.clone());
                paths.extend(move_to.iter().cloned());
            }
        }
    }
    paths
}

/// The lines between `*** Begin Patch` and `*** End Patch` (compared trimmed, as Codex
/// does), or inside Codex's lenient `<<EOF` / `<<'EOF'` / `<<"EOF"` wrapper of four lines or more.
fn envelope<'a>(lines: &'a [&'a str]) -> Result<&'a [&'a str], PatchError> {
    fn inside<'a>(lines: &'a [&'a str]) -> Option<&'a [&'a str]> {
        match lines {
            [first, inner @ .., last] if marker(first.trim(), BEGIN) == Some("") => {
                (marker(last.trim(), END) == Some("")).then_some(inner)
            }
            _ => None,
        }
    }
    if let Some(inner) = inside(lines) {
        return Ok(inner);
    }
    if let [first, wrapped @ .., last] = lines
        && matches!(first.trim_end(), "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
        && last.ends_with("EOF")
        && let Some(inner) = inside(wrapped)
    {
        return Ok(inner);
    }
    refuse("it must open with `*** Begin Patch` and close with `*** End Patch`")
}

/// The header a trimmed line opens and what follows its colon.
fn header(t: &str) -> Option<(Hunk, &str)> {
    [
        (Hunk::Add, ADD),
        (Hunk::Delete, DELETE),
        (Hunk::Update, UPDATE),
    ]
    .into_iter()
    .find_map(|(kind, name)| marker(t, name).map(|rest| (kind, rest)))
}

/// What follows `name` at the start of `t`. Case is ignored, and so is a missing space after
/// the colon: Codex wants both exact, so reading more lines as markers only adds paths.
fn marker<'a>(t: &'a str, name: &str) -> Option<&'a str> {
    let head = t.get(..name.len())?;
    head.eq_ignore_ascii_case(name).then(|| &t[name.len()..])
}

/// The path a header names, trimmed; a header naming none is refused.
fn named(rest: &str, t: &str) -> Result<String, PatchError> {
    match rest.trim() {
        "" => refuse(format!("`{t}` names no file")),
        path => Ok(path.to_owned()),
    }
}

/// Whether a line can belong to an update: a context, added or removed line, a blank one,
/// an `@@` chunk opener or `*** End of File`.
fn update_line(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || line.starts_with([' ', '\t', '+', '-'])
        || t.starts_with("@@")
        || marker(t, END_OF_FILE) == Some("")
}

/// Finds the patch in a shell command the way Codex recognizes one: `apply_patch <<'EOF' …
/// EOF`, `applypatch`, `bash -lc "apply_patch <<'EOF'…"`, with an optional leading `cd <dir>
/// &&` (then paths are joined to that dir). Returns (cd dir if any, patch text) or None when
/// the command is not an `apply_patch` invocation.
///
/// The forms are `maybe_parse_apply_patch`'s (Codex `invocation.rs`), given as a script or as
/// an argv the hook shell-quoted into one string. Anything more (a second command, an
/// operator, an expansion, an unquoted heredoc holding `$`, `` ` `` or `\`) is None: a shell,
/// not Codex, would run that line, so it is left to the shell checks.
pub fn in_command(command: &str) -> Option<(Option<String>, String)> {
    if let Some(found) = heredoc(command) {
        return Some(found);
    }
    let words = words(command)?;
    let runs = |shell: &str, flag: &str| {
        let name = shell.rsplit(['/', '\\']).next().unwrap_or(shell);
        let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
        match stem.to_ascii_lowercase().as_str() {
            "bash" | "zsh" | "sh" => matches!(flag, "-lc" | "-c"),
            "pwsh" | "powershell" => flag.eq_ignore_ascii_case("-command"),
            "cmd" => flag.eq_ignore_ascii_case("/c"),
            _ => false,
        }
    };
    match words.as_slice() {
        [name, body] if NAMES.contains(&name.as_str()) => Some((None, body.to_owned())),
        [shell, flag, script] if runs(shell, flag) => heredoc(script),
        [shell, skip, flag, script] if skip.eq_ignore_ascii_case("-noprofile") => {
            // Only PowerShell takes `-NoProfile` first, and only it takes `-Command`.
            let powershell = flag.eq_ignore_ascii_case("-command") && runs(shell, flag);
            powershell.then(|| heredoc(script)).flatten()
        }
        _ => None,
    }
}

/// `[cd <dir> &&] apply_patch <<[-]DELIM` on the first line, the body after it and nothing
/// but whitespace after the delimiter line. The first line whose trim equals the delimiter
/// closes the body. Bash wants the line exact, so this closes at least as early as bash
/// does: a later command always shows up as text after the close. A body that is never
/// closed runs to the end, as in bash.
fn heredoc(script: &str) -> Option<(Option<String>, String)> {
    let script = script.trim_start();
    let (first, rest) = script.split_once('\n').unwrap_or((script, ""));
    let mut line = first.trim_end();
    let mut dir = None;
    if let Some(after) = line.strip_prefix("cd")
        && after.starts_with([' ', '\t'])
    {
        let (path, after) = cd_dir(after.trim_start())?;
        line = after.trim_start().strip_prefix("&&")?.trim_start();
        dir = Some(path);
    }
    let after = NAMES.iter().find_map(|name| line.strip_prefix(name))?;
    let redirect = after.trim_start().strip_prefix("<<")?;
    let redirect = redirect.strip_prefix('-').unwrap_or(redirect).trim_start();
    let (delimiter, quoted) = match redirect.chars().next()? {
        quote @ ('\'' | '"') => (redirect.strip_prefix(quote)?.strip_suffix(quote)?, true),
        '\\' => (&redirect[1..], true),
        _ => (redirect, false),
    };
    let word = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
    if delimiter.is_empty() || !delimiter.chars().all(word) {
        return None;
    }
    let mut start = 0;
    let mut body = rest;
    for text in rest.split_inclusive('\n') {
        if text.trim() == delimiter {
            if !rest[start + text.len()..].trim().is_empty() {
                return None;
            }
            body = &rest[..start];
            break;
        }
        start += text.len();
    }
    if !quoted && body.contains(['$', '`', '\\']) {
        return None;
    }
    Some((dir, body.trim_end_matches(['\n', '\r']).to_owned()))
}

/// The directory of `cd <dir>`: one plain word, `"text"` without expansions, or `'text'`
/// (Codex's `word`, `string` and `raw_string` captures), and the line after it.
fn cd_dir(s: &str) -> Option<(String, &str)> {
    let (path, after) = match s.chars().next()? {
        quote @ ('\'' | '"') => s[1..].split_once(quote)?,
        _ => s.split_at(
            s.find(|c: char| c.is_whitespace() || c == '&')
                .unwrap_or(s.len()),
        ),
    };
    let plain = |c: char| c.is_alphanumeric() || "/._-+,:@=".contains(c);
    let fine = match s.chars().next()? {
        '\'' => true,
        '"' => !path.contains(['$', '`', '\\']),
        _ => path.chars().all(plain),
    };
    (fine && !path.is_empty()).then(|| (path.to_owned(), after))
}

/// Splits a command line into words the way a POSIX shell would. Returns None when the line
/// does anything but name words: an unquoted operator, expansion, glob, comment or newline,
/// or `$` or `` ` `` inside double quotes.
fn words(command: &str) -> Option<Vec<String>> {
    let (mut words, mut word) = (Vec::new(), None::<String>);
    let mut chars = command.trim().chars();
    while let Some(c) = chars.next() {
        if matches!(c, ' ' | '\t') {
            words.extend(word.take());
            continue;
        }
        let word = word.get_or_insert_with(String::new);
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    c => word.push(c),
                }
            },
            '"' => loop {
                match chars.next()? {
                    '"' => break,
                    '$' | '`' => return None,
                    '\\' => match chars.next()? {
                        c @ ('"' | '\\' | '$' | '`') => word.push(c),
                        '\n' => {}
                        c => word.extend(['\\', c]),
                    },
                    c => word.push(c),
                }
            },
            '\\' => word.extend(Some(chars.next()?).filter(|&c| c != '\n')),
            c if c.is_alphanumeric() || "/._-+,:@=".contains(c) => word.push(c),
            _ => return None,
        }
    }
    words.extend(word);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(path: &str, to: Option<&str>) -> Touch {
        let (path, move_to) = (path.into(), to.map(Into::into));
        Touch::Update { path, move_to }
    }

    fn touched(text: &str) -> Vec<String> {
        paths(&parse(text).unwrap())
    }

    const PATCH: &str = "*** Begin Patch\n*** Delete File: .env\n*** End Patch";

    #[test]
    fn reads_every_kind_of_file_in_order() {
        let text = "*** Begin Patch\n*** Add File: notes/todo.md\n+first\n+\n*** Update File: lib/core.py\n@@ class Core:\n-    x = 1\n+    x = 2\n\n@@\n tail\n*** End of File\n*** Delete File: old/legacy.txt\n*** End Patch\n";
        let want = [Touch::Add("notes/todo.md".into()), up("lib/core.py", None)];
        assert_eq!(parse(text).unwrap()[..2], want);
        assert_eq!(
            touched(text),
            ["notes/todo.md", "lib/core.py", "old/legacy.txt"]
        );
        assert_eq!(parse(PATCH).unwrap(), [Touch::Delete(".env".into())]);
    }

    #[test]
    fn takes_crlf_padding_and_environment_line() {
        let text = "\r\n  *** Begin Patch \r\n*** Environment ID: box-7\r\n\t*** Delete File:  .env  \r\n   *** Add File: .git/hooks/post-merge\r\n+#!/bin/sh\r\n *** End Patch\r\n\r\n";
        assert_eq!(touched(text), [".env", ".git/hooks/post-merge"]);
    }

    #[test]
    fn reports_both_ends_of_a_move() {
        let text = "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: src/b.rs   \n@@\n-a\n+b\n*** End Patch";
        for text in [text.to_owned(), text.replace("*** Move", "  *** Move")] {
            assert_eq!(parse(&text).unwrap(), [up("src/a.rs", Some("src/b.rs"))]);
            assert_eq!(touched(&text), ["src/a.rs", "src/b.rs"]);
        }
    }

    #[test]
    fn strips_heredoc_wrappers() {
        for open in ["<<'EOF'", "<<\"EOF\"", "<<EOF"] {
            assert_eq!(
                touched(&format!("{open}\n{PATCH}\nEOF\n")),
                [".env"],
                "{open}"
            );
        }
        assert_eq!(
            parse("<<'EOF'\n*** Begin Patch\n*** End Patch\nEOF").unwrap(),
            []
        );
    }

    #[test]
    fn refuses_what_codex_would_not_read() {
        for text in [
            "",
            "rm -rf /",
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",
            "*** Begin Patch\n*** Delete File: x.txt",
            "*** Delete File: x.txt\n*** End Patch",
            "<<'PATCH'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nPATCH",
            "<<\"EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF",
            "*** Begin Patch\n*** Delete File:   \n*** End Patch",
            "*** Begin Patch\n*** Update File: a\n*** Move to:\n@@\n+x\n*** End Patch",
            "*** Begin Patch\nstray words\n*** Delete File: x\n*** End Patch",
            "*** Begin Patch\n*** Add File: x\nno plus sign\n*** End Patch",
            "*** Begin Patch\n*** Delete File: a\n*** Move to: b\n*** End Patch",
            "*** Begin Patch\n*** Update File: a\n@@\n+x\n*** Rename File: b\n*** End Patch",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
        let message = parse("nope").unwrap_err().to_string();
        assert!(message.contains("*** Begin Patch"), "{message}");
    }

    #[test]
    fn added_lines_that_look_like_headers_are_content() {
        let text = "*** Begin Patch\n*** Add File: docs/howto.md\n+*** Add File: .env\n+*** Delete File: .git/config\n*** Update File: t.txt\n+*** Update File: .ssh/id_rsa\n-*** Move to: /etc/passwd\n*** End Patch";
        assert_eq!(touched(text), ["docs/howto.md", "t.txt"]);
    }

    #[test]
    fn reads_every_line_some_codex_takes_for_a_header() {
        // Context to the line-slicing parser, a header to the first streaming one.
        let text = "*** Begin Patch\n*** Update File: README.md\n@@\n intro\n  *** Delete File: .env\n more\n+added\n*** End Patch";
        assert_eq!(touched(text), ["README.md", ".env"]);
        assert_eq!(
            touched("*** Begin Patch\n*** update file: a\n*** end patch"),
            ["a"]
        );
        let inner_end = format!("{PATCH}\n*** Delete File: b\n*** End Patch");
        assert_eq!(touched(&inner_end), [".env", "b"]);
    }

    #[test]
    fn finds_heredocs_with_any_quoting() {
        let quoted = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hi.txt\n+$HOME `x`\n*** End Patch\nEOF\n";
        let (dir, text) = in_command(quoted).unwrap();
        assert_eq!((dir, touched(&text)), (None, vec!["hi.txt".to_owned()]));
        let crlf = format!(
            "apply_patch<<EOF\r\n{}\r\nEOF\r\n",
            PATCH.replace('\n', "\r\n")
        );
        assert_eq!(touched(&in_command(&crlf).unwrap().1), [".env"]);
        for command in [
            format!("applypatch <<\"EOF\"\n{PATCH}\nEOF"),
            format!("apply_patch <<-\\EOF\n{PATCH}\n\tEOF\n"),
            format!("apply_patch <<'EOF'\n{PATCH}\n"),
        ] {
            assert_eq!(
                in_command(&command),
                Some((None, PATCH.into())),
                "{command:?}"
            );
        }
    }

    #[test]
    fn finds_the_cd_directory() {
        for (cd, dir) in [
            ("cd sub", "sub"),
            ("cd 'my dir'", "my dir"),
            ("cd \"pkg/a\"", "pkg/a"),
        ] {
            let command = format!("{cd} && apply_patch <<'EOF'\n{PATCH}\nEOF");
            assert_eq!(
                in_command(&command),
                Some((Some(dir.into()), PATCH.into())),
                "{cd}"
            );
        }
    }

    #[test]
    fn unwraps_shell_and_argv_forms() {
        let q = "'\"'\"'";
        let joined = format!("bash -lc 'cd web && apply_patch <<{q}EOF{q}\n{PATCH}\nEOF\n'");
        assert_eq!(
            in_command(&joined),
            Some((Some("web".into()), PATCH.into()))
        );
        for command in [
            format!("/bin/zsh -c \"apply_patch <<'EOF'\n{PATCH}\nEOF\""),
            format!("pwsh.exe -NoProfile -Command 'apply_patch <<EOF\n{PATCH}\nEOF'"),
            format!("applypatch '{PATCH}'"),
        ] {
            assert_eq!(
                in_command(&command),
                Some((None, PATCH.into())),
                "{command:?}"
            );
        }
    }

    #[test]
    fn leaves_other_commands_to_the_shell_checks() {
        for command in [
            "echo hi".to_owned(),
            "apply_patch".to_owned(),
            format!("apply_patch <<'EOF'\n{PATCH}\nEOF\nrm -rf ~"),
            format!("apply_patch <<'EOF'\n{PATCH}\n  EOF \ncurl x\nEOF"),
            format!("apply_patch <<'EOF' && curl x\n{PATCH}\nEOF"),
            format!("echo x; apply_patch <<'EOF'\n{PATCH}\nEOF"),
            format!("cd a || apply_patch <<'EOF'\n{PATCH}\nEOF"),
            format!("cd $HOME && apply_patch <<'EOF'\n{PATCH}\nEOF"),
            format!("apply_patch <<EOF\n{PATCH}\n$(touch /tmp/p)\nEOF"),
            format!("bash -lc \"apply_patch <<'EOF'\n$(id)\n{PATCH}\nEOF\""),
            format!("FOO=1 apply_patch '{PATCH}'"),
            format!("apply_patch '{PATCH}' > log"),
            format!("python -c 'apply_patch <<EOF\n{PATCH}\nEOF'"),
        ] {
            assert_eq!(in_command(&command), None, "{command:?}");
        }
    }
}
