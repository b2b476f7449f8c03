//! Caps tool output so one call can't flood the conversation, and says when it did.

/// Keeps at most `limit` bytes of `bytes` (never splitting a UTF-8 character) and notes the
/// cut; `total` is the full size, which may exceed `bytes` when the rest was never read.
pub(crate) fn cap_bytes(bytes: &[u8], total: usize, limit: usize) -> String {
    let mut kept = bytes.get(..limit).unwrap_or(bytes);
    let truncated = total > kept.len();
    if truncated {
        // A character cut in half at the end would otherwise show up as U+FFFD.
        if let Err(e) = std::str::from_utf8(kept)
            && e.error_len().is_none()
        {
            kept = kept.get(..e.valid_up_to()).unwrap_or(kept);
        }
    }
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if truncated {
        text.push_str(&truncation_note(total));
    }
    text
}

/// [`cap_bytes`] for text that was built whole.
pub(crate) fn cap_text(text: &str, limit: usize) -> String {
    cap_bytes(text.as_bytes(), text.len(), limit)
}

fn truncation_note(total: usize) -> String {
    format!("\n…[truncated, {total} bytes total]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(cap_text("hello", 10), "hello");
    }

    #[test]
    fn long_text_is_cut_and_noted() {
        assert_eq!(
            cap_text("hello world", 5),
            "hello\n…[truncated, 11 bytes total]"
        );
    }

    #[test]
    fn cut_never_splits_a_character() {
        // "é" is two bytes; a cut after one byte drops it whole.
        assert_eq!(cap_text("aé", 2), "a\n…[truncated, 3 bytes total]");
    }

    #[test]
    fn unread_rest_counts_in_the_total() {
        assert_eq!(
            cap_bytes(b"abc", 100, 3),
            "abc\n…[truncated, 100 bytes total]"
        );
        // Read exactly up to the limit, mid-character: still trimmed to whole characters.
        assert_eq!(
            cap_bytes("aé".as_bytes().get(..2).unwrap(), 3, 2),
            "a\n…[truncated, 3 bytes total]"
        );
    }
}
