//! A session's title made from its first message: a few words saying what it asks, so
//! sessions can be told apart in a list. A line of the demo agent's command language (the
//! grammar of `server/provider/demo.rs`, read here on its own since the page makes the same
//! title before the list reloads) is described in words — `write plan.md: first draft` is
//! "Write plan.md", a `parallel:` block "Three calls at once" — and prose gives its first
//! sentence. Never a raw command prefix, never a `\n`; cut at a word near
//! [`TITLE_CHARS`]. The whole message is the header's hover text.

use super::is_hidden_char;

/// About how long a title made from a message is (a person's own title may be longer).
pub const TITLE_CHARS: usize = 48;

/// The title a session's first message gives it, `None` when it has no words. The demo's
/// `\n` (a line break, as the demo reads it) is one here too.
pub fn title_from(text: &str) -> Option<String> {
    let text = text.replace("\\n", "\n");
    let lines: Vec<String> = text.lines().map(clean).collect();
    let first = lines.iter().position(|l| !l.is_empty())?;
    let title = commands_title(&lines[first..]).unwrap_or_else(|| first_sentence(&lines[first]));
    let title = capitalized(&title);
    (!title.is_empty()).then(|| cut_at_word(&title, TITLE_CHARS))
}

/// One line, as a title may hold it: hidden characters dropped, runs of blanks made one space.
fn clean(line: &str) -> String {
    let visible: String = line.chars().filter(|c| !is_hidden_char(*c)).collect();
    visible.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The words of a message in the demo's language: its first command (or `parallel:` block)
/// described, and how many more follow. `None` when the first line is not a command.
fn commands_title(lines: &[String]) -> Option<String> {
    let lines: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .skip_while(|l| l.is_empty() || l.starts_with("say:"))
        .collect();
    let first = *lines.first()?;
    let (head, used) = if first == "parallel:" {
        let block = lines[1..].iter().take_while(|l| !l.is_empty()).count();
        let calls = lines[1..=block].iter().filter(|l| describe(l).is_some());
        match calls.count() {
            0 => return None,
            1 => (
                describe(lines[1..=block].iter().find(|l| describe(l).is_some())?)?,
                block + 1,
            ),
            n => (format!("{} calls at once", number_word(n)), block + 1),
        }
    } else {
        (describe(first)?, 1)
    };
    let more = lines[used..]
        .iter()
        .filter(|l| *l == &"parallel:" || describe(l).is_some())
        .count();
    Some(match more {
        0 => head,
        1 => format!("{head}, then one more step"),
        n => format!("{head}, then {} more steps", number_word(n)),
    })
}

/// One command line in words, as the demo reads it.
fn describe(line: &str) -> Option<String> {
    if let Some(command) = line.strip_prefix("run:") {
        let command = command.trim();
        return Some(if command.is_empty() {
            "Run a command".to_owned()
        } else {
            format!("Run `{}`", super::truncate(command, 32))
        });
    }
    if line.starts_with("propose plan:") {
        return Some("Propose a plan".to_owned());
    }
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    let path_before_colon = || {
        rest.split_once(':')
            .map(|(path, _)| path.trim())
            .filter(|p| !p.is_empty())
    };
    match word {
        "read" if !rest.is_empty() => Some(format!("Read {rest}")),
        "list" if rest.is_empty() || rest == "." => Some("List the files".to_owned()),
        "list" => Some(format!("List {rest}")),
        "search" if !rest.is_empty() => Some(format!("Search for {rest}")),
        "write" => path_before_colon().map(|path| format!("Write {path}")),
        "edit" if rest.contains("=>") => path_before_colon().map(|path| format!("Edit {path}")),
        "ask" => rest.split_once(':').map(|(_, body)| {
            let title = body.split_once('|').map_or(body, |(t, _)| t).trim();
            if title.is_empty() {
                "Ask for a decision".to_owned()
            } else {
                format!("Ask: {title}")
            }
        }),
        "set" => rest
            .split_once('=')
            .map(|(key, _)| format!("Set {}", key.trim())),
        "loop" => rest
            .parse::<u32>()
            .ok()
            .map(|n| format!("List the files {n} times")),
        _ => None,
    }
}

/// Small counts as words ("Three calls at once"), larger ones as digits.
fn number_word(n: usize) -> String {
    const WORDS: [&str; 11] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// The first sentence of a line of prose, without its closing full stop.
fn first_sentence(line: &str) -> String {
    let end = line
        .char_indices()
        .find(|(i, c)| matches!(c, '.' | '?' | '!') && line[i + c.len_utf8()..].starts_with(' '))
        .map_or(
            line.len(),
            |(i, c)| {
                if c == '.' { i } else { i + c.len_utf8() }
            },
        );
    line[..end].trim_end_matches('.').trim().to_owned()
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` within about `max` characters, cut after a whole word (or mid-word when its first
/// word alone is longer), `…` marking the cut.
fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let within: String = text.chars().take(max.saturating_sub(1)).collect();
    let at_word = within
        .rfind(' ')
        .filter(|at| *at >= max / 2)
        .map_or(within.as_str(), |at| &within[..at]);
    format!(
        "{}…",
        at_word.trim_end_matches([' ', ',', ';', ':', '-', '—'])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(text: &str) -> String {
        title_from(text).unwrap_or_else(|| "<none>".to_owned())
    }

    #[test]
    fn a_demo_command_is_described_in_words() {
        assert_eq!(title("write plan.md: first draft"), "Write plan.md");
        assert_eq!(title("run: ls -la"), "Run `ls -la`");
        assert_eq!(title("read notes.md"), "Read notes.md");
        assert_eq!(title("list"), "List the files");
        assert_eq!(title("list src"), "List src");
        assert_eq!(title("search TODO"), "Search for TODO");
        assert_eq!(title("edit a.txt: old => new"), "Edit a.txt");
        assert_eq!(
            title("ask prep_plan: Drop null rows | Remove rows where **price** is empty"),
            "Ask: Drop null rows"
        );
        assert_eq!(
            title("propose plan: 1. read the data\\n2. clean it"),
            "Propose a plan"
        );
        assert_eq!(
            title("set tools.shell_timeout_secs = 60"),
            "Set tools.shell_timeout_secs"
        );
        assert_eq!(title("loop 3"), "List the files 3 times");
        assert_eq!(
            title("run: cargo test --features ssr --all-targets -- --nocapture"),
            "Run `cargo test --features ssr --all…`"
        );
    }

    #[test]
    fn a_parallel_block_and_several_steps_are_counted() {
        assert_eq!(
            title("parallel:\nrun: echo one\nrun: echo two\nrun: echo three"),
            "Three calls at once"
        );
        assert_eq!(
            title("parallel:\\nwrite a.txt: 1\\nwrite b.txt: 2"),
            "Two calls at once"
        );
        assert_eq!(title("parallel:\nread a.md\n"), "Read a.md");
        assert_eq!(
            title("say: Looking first.\nread a.md\nwrite b.md: x"),
            "Read a.md, then one more step"
        );
        assert_eq!(
            title("parallel:\nread a\nread b\n\nrun: ls\nrun: pwd"),
            "Two calls at once, then two more steps"
        );
    }

    #[test]
    fn prose_gives_its_first_sentence_on_one_line() {
        assert_eq!(
            title("Fix the failing test. Then push."),
            "Fix the failing test"
        );
        assert_eq!(title("why does it crash? see log"), "Why does it crash?");
        assert_eq!(title("  \n\n  hello   there \n more"), "Hello there");
        assert_eq!(title("first\\nsecond"), "First");
        assert_eq!(title("v1.2 is out"), "V1.2 is out");
        let long = title(
            "please refactor the session list so that every row shows its title and its state clearly",
        );
        assert_eq!(long, "Please refactor the session list so that every…");
        assert!(long.chars().count() <= TITLE_CHARS, "{long}");
        let word = title(&"x".repeat(100));
        assert_eq!(word.chars().count(), TITLE_CHARS);
        assert!(word.ends_with('…'));
    }

    #[test]
    fn nothing_hidden_and_no_line_break_reaches_a_title() {
        assert_eq!(title("fix \u{202E}txt.exe"), "Fix txt.exe");
        assert_eq!(title("a\u{200B}b\tc"), "Ab c");
        assert_eq!(title(" \u{200B} \n\t"), "<none>");
        assert_eq!(title("\\n\\n"), "<none>");
        for text in [
            "run: a\\nb",
            "x\ny",
            "parallel:\\nrun: a\\nrun: b",
            "word\\n",
        ] {
            let t = title(text);
            assert!(!t.contains('\n') && !t.contains("\\n"), "{text:?} → {t:?}");
        }
        // A prefix with nothing after it is not a command: the words stand as they are.
        assert_eq!(title("parallel:"), "Parallel:");
        assert_eq!(title("write"), "Write");
    }
}
