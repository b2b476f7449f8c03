//! The tests' own reading of what an agent's text may not show as it is (independent of the
//! server's `text::chars`): from Unicode's properties, plus lookalike quotes named by hand.

use serde_json::Value;

/// Quote lookalikes no property names, in spellings an agent reached for and our own.
pub const LOOKALIKE_QUOTES: &str = "❛❜❝❞❟❠❮❯〝〞〟＂＇″‶‴′‵ʺʹʻʼˮ˝˶´״׳〃🙶🙷🙸";

/// Whether `c` could pass for a quotation mark of the page's, hide, or reorder what a reader
/// sees: a quotation mark (ASCII's two aside) or a lookalike, a bidi control, a default-ignorable
/// or a control character (a line break and a tab aside).
pub fn deceives(c: char) -> bool {
    use icu_properties::CodePointSetData;
    use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint, QuotationMark};
    if c.is_ascii() {
        return c.is_ascii_control() && c != '\n' && c != '\t';
    }
    c.is_control()
        || CodePointSetData::new::<QuotationMark>().contains(c)
        || CodePointSetData::new::<BidiControl>().contains(c)
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || LOOKALIKE_QUOTES.contains(c)
}

/// Every string in `v` (keys too) that holds a character [`deceives`] names, with where it is.
pub fn deceiving_strings(v: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    walk(v, "$", &mut found);
    found
}

fn walk(v: &Value, at: &str, found: &mut Vec<(String, String)>) {
    let check = |found: &mut Vec<(String, String)>, at: String, s: &str| {
        if s.chars().any(deceives) {
            found.push((at, s.to_owned()));
        }
    };
    match v {
        Value::String(s) => check(found, at.to_owned(), s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}[{i}]"), found);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                check(found, format!("{at} key {k}"), k);
                walk(item, &format!("{at}.{k}"), found);
            }
        }
        _ => {}
    }
}
