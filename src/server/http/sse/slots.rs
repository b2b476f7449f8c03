//! How many live streams (session feeds and change streams) one credential below admin (a
//! phone's `approve` token) holds at once. Each stream re-checks its credential every few
//! seconds and holds a connection, so such a credential opening them without end (a stolen
//! phone token, a runaway script) could load the server; a phone needs a handful. An admin
//! credential is not counted: it may already do anything a flood of streams could (and the
//! benchmark's fan-out opens a thousand).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use crate::server::http::error::ApiError;
use crate::server::logins::Presented;

/// Streams one credential may hold at once: far more than tabs a person keeps open.
pub const MAX_STREAMS_PER_CREDENTIAL: usize = 32;

/// Open streams by credential (its hash, so two servers in one process never share a count).
static OPEN: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

/// One stream's place in its credential's count, given back when the stream ends.
#[derive(Debug)]
pub struct Slot {
    key: String,
}

impl Slot {
    /// A place for one more stream of `presented`, or `429 too_many_streams`.
    pub fn take(presented: &Presented) -> Result<Slot, ApiError> {
        let key = match presented {
            Presented::Bearer(hash) => format!("bearer:{hash}"),
            Presented::Cookie(hash) => format!("cookie:{hash}"),
        };
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        let held = open.entry(key.clone()).or_default();
        if *held >= MAX_STREAMS_PER_CREDENTIAL {
            return Err(ApiError::TooManyStreams(MAX_STREAMS_PER_CREDENTIAL));
        }
        *held += 1;
        Ok(Slot { key })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.key) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_holds_at_most_its_share_and_gets_each_back() {
        let phone = Presented::bearer("slots-test-phone");
        let other = Presented::bearer("slots-test-other");
        let mut held: Vec<Slot> = (0..MAX_STREAMS_PER_CREDENTIAL)
            .map(|_| Slot::take(&phone).unwrap())
            .collect();
        let refused = Slot::take(&phone).unwrap_err();
        assert_eq!(refused.status().as_u16(), 429);
        assert_eq!(refused.code().as_str(), "too_many_streams");
        // Another credential is not held back by this one's streams.
        assert!(Slot::take(&other).is_ok());
        // A stream that ends gives its place back.
        held.pop();
        assert!(Slot::take(&phone).is_ok());
        drop(held);
        let again: Vec<Slot> = (0..MAX_STREAMS_PER_CREDENTIAL)
            .map(|_| Slot::take(&phone).unwrap())
            .collect();
        assert_eq!(again.len(), MAX_STREAMS_PER_CREDENTIAL);
    }
}
