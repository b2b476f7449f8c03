//! Small text helpers every part of the crate shares (server, CLI, browser): one way to cut a
//! string, shorten an id or spell out an error with its causes — and `chars`, which characters
//! a reader cannot see or could mistake (what `shown` writes out).

pub mod chars;
mod title;

pub use title::{TITLE_CHARS, title_from};

/// An error and its causes on one line. Libraries often say only the outermost part
/// ("error sending request") and keep the useful one ("Connection refused") in `source()`;
/// a cause already spelled out by its parent is not repeated.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// At most `max` characters, ending in `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().nth(max).is_none() {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `61440` as `61,440`: a size a person reads at a glance.
pub fn thousands(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// At most `max` bytes (never splitting a character), ending in `…` when cut.
pub fn truncate_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

/// Whether a reader cannot see `c`, or it changes how what they see is ordered: controls
/// other than a line break or a tab, format characters (bidi embeddings, overrides, isolates
/// and marks; zero-width characters; tags), line and paragraph separators, and every other
/// default-ignorable character — `chars::Unseen::Hidden`, from Unicode's properties.
pub fn is_hidden_char(c: char) -> bool {
    chars::unseen(c) == Some(chars::Unseen::Hidden)
}

/// Whether `text` holds a character [`is_hidden_char`] calls hidden.
pub fn has_hidden(text: &str) -> bool {
    text.chars().any(is_hidden_char)
}

/// `text` with every hidden character written out as `⟨U+202E⟩` (markdown before it is
/// parsed, so none steers the parser or sits in a link). What is shown of an agent's text goes
/// through `crate::shown`, which also writes out lookalike quotes and blanks.
pub fn reveal_hidden(text: &str) -> String {
    if !has_hidden(text) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden_char(c) {
            chars::push_written_out(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// How long a title made from an outside agent's call may be (a person's own title may be
/// longer).
pub const MADE_TITLE_CHARS: usize = 60;

/// The most of an agent's own words a card carries.
pub const MAX_AGENT_SAYS_CHARS: usize = 300;

/// An agent's words for its card (`agent_says`): one line (runs of white space become one
/// space), its ordinary curly quotes made plain (`chars::plain_quote`: "I’ll" reads
/// "I'll"), cut at [`MAX_AGENT_SAYS_CHARS`] — a headline, not a page that pushes the call off
/// the screen; none when empty. What is left that a reader could mistake (a lookalike quote,
/// a bidi control) is written out where it is shown (`shown::words`).
pub fn agent_words(text: &str) -> Option<String> {
    let line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| chars::plain_quote(c).unwrap_or(c))
        .collect();
    (!line.is_empty()).then(|| truncate(&line, MAX_AGENT_SAYS_CHARS))
}

/// How many leading characters of an id are shown (and, in the CLI, accepted back).
pub const SHORT_ID: usize = 8;

/// The first [`SHORT_ID`] characters of an id.
pub fn short_id(id: &str) -> String {
    id.chars().take(SHORT_ID).collect()
}

/// A length of time in words a person reads at a glance: `25 s`, `1 min 30 s`, `30 min`,
/// `2 h 5 min`, `7 d`. Exact to the second below an hour, to the minute above.
pub fn duration_words(secs: u64) -> String {
    let (days, hours, minutes, seconds) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    let parts: Vec<String> = if secs < 60 {
        vec![format!("{secs} s")]
    } else if secs < 3600 {
        [(minutes, "min"), (seconds, "s")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, unit)| format!("{n} {unit}"))
            .collect()
    } else {
        [(days, "d"), (hours, "h"), (minutes, "min")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, unit)| format!("{n} {unit}"))
            .collect()
    };
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_words_are_one_line_with_plain_quotes() {
        assert_eq!(
            agent_words(
                "Listing.\u{201D} Countersign:\n\n read-only \u{201C}ok\u{201D} \u{2039}x\u{203A}"
            )
            .as_deref(),
            Some("Listing.\" Countersign: read-only \"ok\" 'x'")
        );
        // A lookalike is kept, to be written out where it is shown.
        assert_eq!(agent_words("a\u{275E} b").as_deref(), Some("a\u{275E} b"));
        assert_eq!(agent_words(" \n\t "), None);
        let long = agent_words(&"word ".repeat(400)).unwrap();
        assert_eq!(long.chars().count(), MAX_AGENT_SAYS_CHARS);
    }

    #[test]
    fn durations_read_as_the_real_window() {
        for (secs, words) in [
            (0, "0 s"),
            (25, "25 s"),
            (60, "1 min"),
            (90, "1 min 30 s"),
            (1800, "30 min"),
            (3600, "1 h"),
            (3661, "1 h 1 min"),
            (7 * 86_400, "7 d"),
            (86_400 + 7200, "1 d 2 h"),
        ] {
            assert_eq!(duration_words(secs), words, "{secs}");
        }
    }

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }
    impl std::fmt::Display for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Connection refused")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    impl std::error::Error for Inner {}

    #[test]
    fn the_chain_names_every_cause_once() {
        assert_eq!(
            error_chain(&Outer(Inner)),
            "error sending request: Connection refused"
        );
        assert_eq!(error_chain(&Inner), "Connection refused");
    }

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncate("héllo", 5), "héllo");
        assert_eq!(truncate("héllo!", 5), "héll…");
        assert_eq!(truncate("", 0), "");
        assert_eq!(truncate_bytes("aé", 2), "a…");
        assert_eq!(truncate_bytes("abc", 3), "abc");
    }

    #[test]
    fn hidden_characters_are_written_out() {
        let sneaky = "rm -rf \u{202E}txt.gnp\u{202C} ./x\u{200B}y";
        assert!(has_hidden(sneaky));
        assert_eq!(
            reveal_hidden(sneaky),
            "rm -rf ⟨U+202E⟩txt.gnp⟨U+202C⟩ ./x⟨U+200B⟩y"
        );
        assert_eq!(reveal_hidden("tab\tand\nnewline"), "tab\tand\nnewline");
        assert_eq!(reveal_hidden("bell\u{7}"), "bell⟨U+0007⟩");
        assert!(!has_hidden("plain ascii, é and 日本"));
    }

    #[test]
    fn short_ids_are_the_first_eight_characters() {
        assert_eq!(short_id("0123456789abcdef"), "01234567");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn thousands_are_grouped_in_threes() {
        assert_eq!(thousands(1_047_576), "1,047,576");
        assert_eq!(thousands(61_440u64), "61,440");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(0), "0");
    }
}
