//! What a floor card's write would change in the file as it is now: computed on demand for
//! the person at the admin console (`GET /api/v1/sessions/{sid}/approvals/{aid}/floor-diff`),
//! never part of the card or the event log (invariant 40).

use serde::{Deserialize, Serialize};

/// The person's view of a pending floor write against the file it would change. Every value
/// that looks like a secret is masked on the server, on both sides of the diff (even the
/// agent's own proposed lines: their reveal is the card's, from the call it already holds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorDiff {
    /// Whether the card is one this view is for: a pending safety-floor `write_file` or
    /// `edit_file` card of the built-in agent. When `false`, nothing else is said.
    pub applicable: bool,
    /// Whether the file exists now (when not, the write makes a new file).
    pub exists: bool,
    /// The unified diff from the file now to what the call would leave, masked; `None` when
    /// the file is absent, too large, or (for an edit) does not hold the text replaced.
    pub diff: Option<String>,
    /// The file is larger than the view shows (256 KiB); it was not read.
    pub too_large: bool,
}

impl FloorDiff {
    /// The answer for a card this view is not for.
    pub fn not_applicable() -> FloorDiff {
        FloorDiff::default()
    }
}
