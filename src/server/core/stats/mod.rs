//! The person's own answering habits (`GET /api/v1/stats/decisions`, the "Your answers"
//! page): the window asked for is checked here, the cards are read once, and the figures come
//! from the pure functions of [`figures`].

pub mod figures;

use super::{Core, Error};
use crate::protocol::{DecisionStats, Timestamp};

/// At most this many resolved cards are read for one answer (the oldest of the window first);
/// past it the answer says `truncated`.
pub const MAX_CARDS: u32 = 100_000;
/// The longest window one answer covers.
pub const MAX_WINDOW_DAYS: i64 = 366;
/// The window when none is asked for: the last 30 days.
pub const DEFAULT_WINDOW_DAYS: i64 = 30;

const DAY_MS: i64 = 86_400_000;

/// The window `[since, until)` in milliseconds, from the request's optional RFC 3339 times:
/// `until` defaults to `now_ms`, `since` to 30 days before `until`. An unreadable time, a
/// `since` after `until` or a window over [`MAX_WINDOW_DAYS`] is `invalid_request`.
pub fn window(
    since: Option<&str>,
    until: Option<&str>,
    now_ms: i64,
) -> Result<(Timestamp, Timestamp), Error> {
    let read = |name: &str, raw: &str| {
        Timestamp::from(raw.trim()).unix_ms().ok_or_else(|| {
            Error::InvalidRequest(format!(
                "{name} must be an RFC 3339 time (2026-12-06T00:00:00Z), got `{}`",
                raw.chars().take(64).collect::<String>()
            ))
        })
    };
    let until = match until.filter(|raw| !raw.trim().is_empty()) {
        Some(raw) => read("until", raw)?,
        None => now_ms,
    };
    let since = match since.filter(|raw| !raw.trim().is_empty()) {
        Some(raw) => read("since", raw)?,
        None => until.saturating_sub(DEFAULT_WINDOW_DAYS * DAY_MS),
    };
    if since > until {
        return Err(Error::InvalidRequest(
            "since must not be after until".to_owned(),
        ));
    }
    if until - since > MAX_WINDOW_DAYS * DAY_MS {
        return Err(Error::InvalidRequest(format!(
            "the window must be at most {MAX_WINDOW_DAYS} days"
        )));
    }
    Ok((
        Timestamp::from_unix_ms(since),
        Timestamp::from_unix_ms(until),
    ))
}

/// The figures of the cards resolved in `[since, until)` (`truncated` past [`MAX_CARDS`]).
pub fn stats(
    since: Timestamp,
    until: Timestamp,
    cards: &[crate::server::store::ResolvedCard],
    truncated: bool,
) -> DecisionStats {
    let decisions: Vec<figures::Counted> = cards.iter().filter_map(figures::counted).collect();
    DecisionStats {
        since,
        until,
        total: figures::total(&decisions),
        by_actor: figures::grouped(&decisions, |d| &d.actor),
        by_person: figures::per_person(&decisions),
        by_class: figures::grouped(&decisions, |d| &d.class),
        by_device: figures::grouped(&decisions, |d| &d.device),
        by_agent: figures::grouped(&decisions, |d| &d.agent),
        per_day: figures::per_day(&decisions),
        decide_ms_histogram: figures::histogram(&decisions),
        truncated,
    }
}

impl Core {
    /// The person's answering figures over the window the request names (see [`window`]).
    pub async fn decision_stats(
        &self,
        since: Option<&str>,
        until: Option<&str>,
    ) -> Result<DecisionStats, Error> {
        let (since, until) = window(since, until, Timestamp::now_ms())?;
        let mut cards = self
            .repos
            .gates
            .resolved_cards(&since, &until, MAX_CARDS + 1)
            .await?;
        let truncated = cards.len() > MAX_CARDS as usize;
        cards.truncate(MAX_CARDS as usize);
        // Reading up to 100 000 cards' figures is CPU work: off the async worker.
        tokio::task::spawn_blocking(move || stats(since, until, &cards, truncated))
            .await
            .map_err(|e| Error::Internal(format!("figuring the stats failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_796_000_000_000;

    #[test]
    fn the_window_defaults_to_the_last_thirty_days() {
        let (since, until) = window(None, None, NOW).unwrap();
        assert_eq!(until, Timestamp::from_unix_ms(NOW));
        assert_eq!(since, Timestamp::from_unix_ms(NOW - 30 * DAY_MS));
        let (since, _) = window(Some(""), Some("2026-12-06T00:00:00Z"), NOW).unwrap();
        assert_eq!(since.as_str(), "2026-11-06T00:00:00.000Z");
    }

    #[test]
    fn a_window_is_read_into_utc_and_refused_when_it_cannot_be() {
        let (since, until) = window(
            Some("2026-12-01T02:00:00+02:00"),
            Some("2026-12-06T00:00:00Z"),
            NOW,
        )
        .unwrap();
        assert_eq!(since.as_str(), "2026-12-01T00:00:00.000Z");
        assert_eq!(until.as_str(), "2026-12-06T00:00:00.000Z");
        for (since, until) in [
            (Some("yesterday"), None),
            (None, Some("2026-13-01T00:00:00Z")),
            (Some("2026-12-06T00:00:00Z"), Some("2026-12-01T00:00:00Z")),
            (Some("2020-01-01T00:00:00Z"), Some("2026-12-01T00:00:00Z")),
        ] {
            assert!(
                matches!(window(since, until, NOW), Err(Error::InvalidRequest(_))),
                "{since:?} {until:?}"
            );
        }
    }
}
