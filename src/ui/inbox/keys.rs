//! The Inbox list from the keyboard: ↑/↓ (and Home/End) move between rows, Enter or Space
//! opens one in place (the `<summary>` does that itself) and its card takes focus, Escape
//! closes it again and puts focus back on its line.

use std::cell::RefCell;

use crate::protocol::ApprovalId;

thread_local! {
    /// The row the person just clicked or pressed Enter on: its card takes focus once it opens.
    static OPEN_ASKED: RefCell<Option<ApprovalId>> = const { RefCell::new(None) };
}

/// The person asked to open (or close) this row.
pub fn ask_open(id: ApprovalId) {
    OPEN_ASKED.with(|asked| *asked.borrow_mut() = Some(id));
}

/// Whether the person asked for this row (and forgets the asking).
pub fn take_open_request(id: &ApprovalId) -> bool {
    OPEN_ASKED.with(|asked| {
        let mut asked = asked.borrow_mut();
        let mine = asked.as_ref() == Some(id);
        if mine {
            *asked = None;
        }
        mine
    })
}

/// A key the list moves by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    First,
    Last,
}

impl Move {
    pub fn from_key(key: &str) -> Option<Move> {
        match key {
            "ArrowUp" => Some(Move::Up),
            "ArrowDown" => Some(Move::Down),
            "Home" => Some(Move::First),
            "End" => Some(Move::Last),
            _ => None,
        }
    }
}

/// Where focus goes from row `at` of `len` rows; the ends stop (no wrapping round).
pub fn next_row(len: usize, at: usize, step: Move) -> Option<usize> {
    let last = len.checked_sub(1)?;
    Some(match step {
        Move::Up => at.saturating_sub(1),
        Move::Down => (at + 1).min(last),
        Move::First => 0,
        Move::Last => last,
    })
}

/// The list's keydown: arrows on a row's line move between lines; Escape in a row (not while
/// typing, not while the card has a panel or a confirmation open: Escape closes that first)
/// closes the row and puts focus on its line.
#[cfg(feature = "hydrate")]
pub fn on_keydown(ids: Vec<ApprovalId>, ev: &web_sys::KeyboardEvent) {
    use wasm_bindgen::JsCast;
    let Some(target) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
        return;
    }
    let Some(row) = target.closest("[data-testid=inbox-item]").ok().flatten() else {
        return;
    };
    let Some(id) = row.get_attribute("data-approval-id").map(ApprovalId::from) else {
        return;
    };
    let on_line = target.get_attribute("data-testid").as_deref() == Some("inbox-row");
    let key = ev.key();
    if let (true, Some(step)) = (on_line, Move::from_key(&key)) {
        let at = ids.iter().position(|i| i == &id).unwrap_or(0);
        if let Some(next) = next_row(ids.len(), at, step) {
            ev.prevent_default();
            crate::ui::browser::focus(&row_id(&ids[next]));
        }
        return;
    }
    if key == "Escape" && !on_line {
        let typing = matches!(target.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT");
        let engaged = row
            .query_selector("[data-engaged]")
            .ok()
            .flatten()
            .is_some();
        if typing || engaged {
            return;
        }
        if let Some(details) = row.query_selector("details").ok().flatten() {
            let _ = details.remove_attribute("open");
        }
        crate::ui::browser::focus(&row_id(&id));
    }
}

/// The element id of a row's line (the arrow keys move between them).
pub fn row_id(approval_id: &ApprovalId) -> String {
    format!("row-{approval_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrows_move_one_row_and_stop_at_the_ends() {
        assert_eq!(next_row(3, 0, Move::Down), Some(1));
        assert_eq!(next_row(3, 2, Move::Down), Some(2));
        assert_eq!(next_row(3, 0, Move::Up), Some(0));
        assert_eq!(next_row(3, 2, Move::Up), Some(1));
        assert_eq!(next_row(3, 1, Move::First), Some(0));
        assert_eq!(next_row(3, 0, Move::Last), Some(2));
        assert_eq!(next_row(0, 0, Move::Down), None);
    }

    #[test]
    fn only_an_open_request_for_this_row_focuses_its_card() {
        ask_open("a".into());
        assert!(!take_open_request(&"b".into()));
        assert!(take_open_request(&"a".into()));
        // Taken once: a later toggle (the row closing) does not focus again.
        assert!(!take_open_request(&"a".into()));
    }
}
