//! Which characters an agent's text may not show as they are, and why: the one classifier
//! behind [`crate::shown::text`], [`crate::shown::line`], [`crate::shown::words`] and
//! [`super::is_hidden_char`]. It lives under `text` so that `shown` builds on `text`, never the
//! other way round.
//!
//! The classes come from Unicode's own data wherever it has a property for them
//! (`icu_properties`, compiled in): `Default_Ignorable_Code_Point`, `Bidi_Control`,
//! `Quotation_Mark`, `White_Space`. What no property names is a table below, generated from
//! the Unicode Character Database and UTS #39's `confusables.txt` (17.0.0) and checked
//! against the properties by this module's tests.

use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint, QuotationMark};
use icu_properties::{CodePointSetData, CodePointSetDataBorrowed};

/// Why a character is written out (`⟨U+2067⟩`) rather than shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unseen {
    /// A reader cannot see it, or it changes how what they see is ordered: controls (other
    /// than a line break or a tab), format characters (bidi embeddings, overrides, isolates and
    /// marks; zero-width characters; tags), line and paragraph separators, and every other
    /// default-ignorable character (variation selectors, Hangul fillers …).
    Hidden,
    /// White space that is not an ASCII space, or a glyph that draws nothing: it can pass for
    /// a space a command splits on, or push the rest of a line out of sight.
    Blank,
    /// A quotation mark or something that reads as one (a prime, a modifier apostrophe, a
    /// fullwidth or ornamental quote): it could close a quotation the page opened, or pass
    /// for a quote a shell would read. The ASCII `"` and `'` stay: they are what runs.
    Quote,
}

const DEFAULT_IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();
const BIDI_CONTROL: CodePointSetDataBorrowed<'static> = CodePointSetData::new::<BidiControl>();
const QUOTATION_MARK: CodePointSetDataBorrowed<'static> = CodePointSetData::new::<QuotationMark>();

/// Format characters (General_Category `Cf`) that are neither default-ignorable nor bidi
/// controls: number signs that stretch over the digits after them, interlinear annotation
/// anchors, Egyptian hieroglyph format controls. (The test checks every `Cf` is hidden.)
const OTHER_FORMAT: &[(char, char)] = &[
    ('\u{0600}', '\u{0605}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1345F}'),
];

/// Quote-like characters `Quotation_Mark` leaves out, sorted: every character whose
/// `confusables.txt` skeleton is only apostrophes (`'`, `''` = `"`, primes …), and every one
/// whose name says `QUOTATION MARK`, `APOSTROPHE` or `PRIME` (the heavy ornaments
/// ❛ ❜ ❝ ❞ ❟ ❠ ❮ ❯ 🙶 🙷 🙸, the primes ′ ″ ‶ ʺ, ˝ ״ 〃 …) — but no letter of a script of its
/// own (General_Category `Lo`: a Hebrew yod or a Cree final written out would make that
/// script unreadable). Generated with Python's `unicodedata` and `confusables.txt` 17.0.0:
/// each line whose target is all `0027`, each name matching
/// `QUOTATION MARK|APOSTROPHE|\bPRIMES?\b`, less what is ASCII, `Lo`, hidden or already a
/// `Quotation_Mark` (the tests check the last three).
#[rustfmt::skip]
const QUOTE_LIKE: &[char] = &[
    '\u{00B4}', '\u{0149}', '\u{02B9}', '\u{02BA}', '\u{02BB}', '\u{02BC}', '\u{02BD}',
    '\u{02BE}', '\u{02C8}', '\u{02CA}', '\u{02CB}', '\u{02DD}', '\u{02EE}', '\u{02F4}',
    '\u{02F6}', '\u{0374}', '\u{0384}', '\u{055A}', '\u{055D}', '\u{05F3}', '\u{05F4}',
    '\u{07F4}', '\u{07F5}', '\u{1CD3}', '\u{1FBD}', '\u{1FBF}', '\u{1FEF}', '\u{1FFD}',
    '\u{1FFE}', '\u{2032}', '\u{2033}', '\u{2034}', '\u{2035}', '\u{2036}', '\u{2037}',
    '\u{2057}', '\u{275B}', '\u{275C}', '\u{275D}', '\u{275E}', '\u{275F}', '\u{2760}',
    '\u{276E}', '\u{276F}', '\u{3003}', '\u{A78C}', '\u{FF40}', '\u{16F51}', '\u{16F52}',
    '\u{1F676}', '\u{1F677}', '\u{1F678}',
];

/// A blank glyph that is not white space: the braille pattern with no dots.
const BLANK_GLYPHS: &[char] = &['\u{2800}'];

/// Why `c` is written out, or `None` when it is shown as it is. A line break and a tab are
/// `None`: where text must stay on one line, the caller writes them as `⏎` and `⇥`.
pub fn unseen(c: char) -> Option<Unseen> {
    if c.is_ascii() {
        return (c.is_ascii_control() && c != '\n' && c != '\t').then_some(Unseen::Hidden);
    }
    if c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}')
        || DEFAULT_IGNORABLE.contains(c)
        || BIDI_CONTROL.contains(c)
        || OTHER_FORMAT.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
    {
        Some(Unseen::Hidden)
    } else if c.is_whitespace() || BLANK_GLYPHS.contains(&c) {
        Some(Unseen::Blank)
    } else if QUOTATION_MARK.contains(c) || QUOTE_LIKE.binary_search(&c).is_ok() {
        Some(Unseen::Quote)
    } else {
        None
    }
}

/// The plain ASCII quote the agent's prose uses for an ordinary Latin typographic quote
/// (‘ ’ ‚ ‛ “ ” „ ‟ « » ‹ ›), so its "I’ll" reads as "I'll"; `None` for anything else (an
/// ornament, a prime or a fullwidth quote in prose is written out like everywhere else).
pub fn plain_quote(c: char) -> Option<char> {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2039}' | '\u{203A}' => Some('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{00AB}' | '\u{00BB}' => Some('"'),
        _ => None,
    }
}

/// `c` written out: `⟨U+2067⟩`.
pub fn push_written_out(out: &mut String, c: char) {
    use std::fmt::Write;
    let _ = write!(out, "⟨U+{:04X}⟩", u32::from(c));
}

#[cfg(test)]
mod tests {
    use super::*;
    use icu_properties::props::{GeneralCategory, WhiteSpace};
    use icu_properties::{CodePointMapData, CodePointSetData};

    fn every_char() -> impl Iterator<Item = char> {
        (0..=0x10FFFFu32).filter_map(char::from_u32)
    }

    #[test]
    fn the_tables_are_sorted_and_name_nothing_a_property_already_decides() {
        assert!(QUOTE_LIKE.windows(2).all(|w| w[0] < w[1]));
        for &c in QUOTE_LIKE {
            assert!(!c.is_ascii() && !QUOTATION_MARK.contains(c), "{c:?}");
            assert!(
                !DEFAULT_IGNORABLE.contains(c) && !c.is_whitespace(),
                "{c:?}"
            );
            let category = CodePointMapData::<GeneralCategory>::new().get(c);
            assert_ne!(category, GeneralCategory::OtherLetter, "{c:?}");
        }
    }

    /// Against Unicode's own data, over every code point: what its properties call
    /// default-ignorable, a bidi control, a format or a control character is hidden; a
    /// quotation mark (bar ASCII's two) is a quote; white space bar ASCII's is blank.
    #[test]
    fn every_character_a_property_names_is_written_out() {
        let categories = CodePointMapData::<GeneralCategory>::new();
        let white = CodePointSetData::new::<WhiteSpace>();
        for c in every_char() {
            let category = categories.get(c);
            let must_hide = DEFAULT_IGNORABLE.contains(c)
                || BIDI_CONTROL.contains(c)
                || category == GeneralCategory::Format
                || category == GeneralCategory::LineSeparator
                || category == GeneralCategory::ParagraphSeparator
                || (category == GeneralCategory::Control && c != '\n' && c != '\t');
            if must_hide {
                assert_eq!(unseen(c), Some(Unseen::Hidden), "U+{:04X}", u32::from(c));
            } else if white.contains(c) && c != ' ' && c != '\n' && c != '\t' {
                assert_eq!(unseen(c), Some(Unseen::Blank), "U+{:04X}", u32::from(c));
            } else if QUOTATION_MARK.contains(c) && !c.is_ascii() {
                assert_eq!(unseen(c), Some(Unseen::Quote), "U+{:04X}", u32::from(c));
            }
        }
    }

    /// Only what a class names is written out: letters of every script, digits, ASCII
    /// punctuation (the `"` and `'` a command runs included), emoji and CJK stay as they are.
    #[test]
    fn ordinary_text_in_any_script_is_shown_as_it_is() {
        let plain = "ls -la \"a b\" 'c' `d` é ü ß Ж ж ζ ע י ש ب ت 日本語 한국어 ᓀᐦᐃᔭᐍᐏᐣ 😀 ⟨⟩ ⏎ ⇥ — – … \\ | <> {} []";
        for c in plain.chars() {
            assert_eq!(unseen(c), None, "{c:?} U+{:04X}", u32::from(c));
        }
        let categories = CodePointMapData::<GeneralCategory>::new();
        let shown_letters = every_char()
            .filter(|&c| {
                matches!(
                    categories.get(c),
                    GeneralCategory::UppercaseLetter
                        | GeneralCategory::LowercaseLetter
                        | GeneralCategory::DecimalNumber
                        | GeneralCategory::MathSymbol
                )
            })
            .filter(|&c| unseen(c).is_some())
            .collect::<Vec<_>>();
        // The only cased letters written out are the two that are an apostrophe and a letter.
        assert_eq!(shown_letters, ['\u{0149}', '\u{A78C}'], "{shown_letters:?}");
    }

    /// The spellings an agent reached for, and some of our own: each is a quote.
    #[test]
    fn lookalike_quotes_of_every_kind_are_quotes() {
        let quotes = "“”„‟‘’‚‛«»‹›❛❜❝❞❟❠❮❯〝〞〟＂＇″‶‴‷⁗′‵ʺʹʻʼʽˮ˝˶´\u{1FEF}\u{FF40}΄״׳〃「」『』﹁﹂﹃﹄｢｣⹂🙶🙷🙸";
        for c in quotes.chars() {
            assert_eq!(
                unseen(c),
                Some(Unseen::Quote),
                "{c:?} U+{:04X}",
                u32::from(c)
            );
        }
        // Every quote the prose straightens is a quote, and straightens to ASCII.
        for c in every_char().filter(|&c| plain_quote(c).is_some()) {
            assert_eq!(unseen(c), Some(Unseen::Quote), "{c:?}");
            assert!(matches!(plain_quote(c), Some('"' | '\'')));
        }
    }

    #[test]
    fn every_bidi_control_and_invisible_character_is_hidden() {
        let hidden = [
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}', // embeddings, overrides
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}', // isolates
            '\u{200E}',
            '\u{200F}',
            '\u{061C}', // marks
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{034F}',
            '\u{180E}',
            '\u{115F}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{FE0F}',
            '\u{E0041}',
            '\u{E0100}',
            '\u{1D173}',
            '\u{1BCA1}',
            '\u{FFF9}',
            '\u{2028}',
            '\u{2029}',
            '\u{0085}',
            '\u{0007}',
            '\u{001B}',
            '\u{007F}',
            '\u{009B}',
            '\r',
        ];
        for c in hidden {
            assert_eq!(unseen(c), Some(Unseen::Hidden), "U+{:04X}", u32::from(c));
        }
        assert_eq!(unseen('\n'), None);
        assert_eq!(unseen('\t'), None);
        for c in [
            '\u{00A0}', '\u{2007}', '\u{202F}', '\u{3000}', '\u{1680}', '\u{2800}',
        ] {
            assert_eq!(unseen(c), Some(Unseen::Blank), "U+{:04X}", u32::from(c));
        }
    }
}
