//! Text typed into a running shell (Copilot CLI's `write_bash`, Codex's `write_stdin`), read
//! as the command lines it submits: `{enter}` (or a newline, or `\r`) ends a line,
//! `{backspace}` (or DEL) takes back the character before it, `{space}` is a space. A key
//! whose effect depends on what the shell already holds — history (`{up}`), completion
//! (`{tab}`), the cursor (`{left}`), a control key — cannot be read from the text, and
//! neither can text left on the line without Enter, which joins whatever is typed next: those
//! always ask.

/// What a key notation is.
enum Key {
    Text(&'static str),
    Backspace,
    /// Its effect cannot be read from the text.
    Unreadable,
}

fn key(name: &str) -> Option<Key> {
    Some(match name {
        "enter" | "return" | "cr" | "lf" | "newline" => Key::Text("\n"),
        "space" => Key::Text(" "),
        "backspace" | "bs" | "bksp" => Key::Backspace,
        "up" | "down" | "left" | "right" | "tab" | "esc" | "escape" | "home" | "end" | "delete"
        | "del" | "insert" | "pageup" | "pagedown" | "pgup" | "pgdn" => Key::Unreadable,
        // `{ctrl+c}`, `{alt-f}`, `{f5}`: a key with a modifier, or a function key.
        name if name.contains(['+', '-'])
            || (name.starts_with('f') && name[1..].parse::<u8>().is_ok()) =>
        {
            Key::Unreadable
        }
        _ => return None,
    })
}

/// The command lines `input` submits to the shell, newline-separated; `Err` says why what it
/// does cannot be read from the text alone.
pub fn typed(input: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        let notation = (c == '{' && !out.ends_with('$'))
            .then(|| rest[1..].split_once('}'))
            .flatten()
            .filter(|(name, _)| {
                !name.is_empty()
                    && name.len() <= 12
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-".contains(c))
            })
            .and_then(|(name, after)| Some((key(&name.to_ascii_lowercase())?, name, after)));
        if let Some((key, name, after)) = notation {
            match key {
                Key::Text(text) => out.push_str(text),
                Key::Backspace => erase(&mut out, "{backspace}")?,
                Key::Unreadable => {
                    return Err(format!(
                        "presses {{{name}}}, whose effect on what the shell holds cannot be read from the text"
                    ));
                }
            }
            rest = after;
            continue;
        }
        match c {
            '\r' if rest[1..].starts_with('\n') => {}
            '\r' | '\n' => out.push('\n'),
            '\u{7f}' | '\u{8}' => erase(&mut out, "a backspace")?,
            c if c.is_control() => {
                return Err(format!(
                    "sends the control character U+{:04X}, whose effect cannot be read from the text",
                    c as u32
                ));
            }
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    if !out.is_empty() && !out.ends_with('\n') {
        return Err(
            "leaves text on the shell's line without Enter, which joins whatever is typed next, so it cannot be read whole"
                .into(),
        );
    }
    Ok(out.trim_end_matches('\n').to_owned())
}

/// Takes back the last character typed in this input; one typed before it cannot be seen.
fn erase(out: &mut String, what: &str) -> Result<(), String> {
    match out.pop() {
        Some('\n') | None => Err(format!(
            "sends {what} that erases text typed before it, which cannot be read"
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_the_lines_they_submit() {
        assert_eq!(
            typed("sudo rm -rf ~/work{enter}").as_deref(),
            Ok("sudo rm -rf ~/work")
        );
        assert_eq!(typed("ls\r\npwd\r").as_deref(), Ok("ls\npwd"));
        assert_eq!(
            typed("rm -rx{backspace}f /{ENTER}").as_deref(),
            Ok("rm -rf /")
        );
        assert_eq!(typed("echo{space}${HOME}\n").as_deref(), Ok("echo ${HOME}"));
        assert_eq!(typed("echo {a,b} {x}\n").as_deref(), Ok("echo {a,b} {x}"));
        assert_eq!(typed("").as_deref(), Ok(""));
        assert_eq!(typed("{enter}").as_deref(), Ok(""));
    }

    #[test]
    fn what_the_text_cannot_say_is_unreadable() {
        for input in [
            "{up}{enter}",
            "rm -r{tab}\n",
            "x{left}y\n",
            "{ctrl+c}",
            "\u{1b}[A\n",
            "\t\n",
            "{backspace}f ~/work\n",
            "sudo rm -rf ~/work",
            "rm -r",
        ] {
            assert!(typed(input).is_err(), "{input:?}");
        }
    }
}
