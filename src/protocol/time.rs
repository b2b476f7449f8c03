//! The one timestamp type: an instant as the wire and the database carry it — RFC 3339 in
//! UTC with milliseconds (`2026-11-30T17:17:15.123Z`) — with one parser, used alike by the
//! server, the browser and the CLI, and one rule for what cannot be read: as a deadline it has
//! passed (fail closed), so an unreadable `expires_at` never keeps a gate open.
//!
//! Pure arithmetic (no chrono, no JS Date): the browser bundle stays small and every side
//! reads a time the same way.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An instant. Holds the text it was given, so a stored value round-trips unchanged even if
/// it is unreadable; reading it is `unix_ms`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(String);

impl Timestamp {
    /// The instant `ms` milliseconds after the Unix epoch, in the canonical form.
    pub fn from_unix_ms(ms: i64) -> Timestamp {
        let days = ms.div_euclid(86_400_000);
        let in_day = ms.rem_euclid(86_400_000);
        let (y, m, d) = civil_from_days(days);
        let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
        let (min, rest) = (rest / 60_000, rest % 60_000);
        let (s, milli) = (rest / 1000, rest % 1000);
        Timestamp(format!(
            "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z"
        ))
    }

    /// Now, by the system clock (server and CLI; the browser has its own clock).
    #[cfg(feature = "ssr")]
    pub fn now() -> Timestamp {
        Timestamp::from_unix_ms(Timestamp::now_ms())
    }

    /// The system clock in Unix milliseconds.
    #[cfg(feature = "ssr")]
    pub fn now_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    /// Milliseconds since the Unix epoch; `None` when the text is not an RFC 3339 time.
    pub fn unix_ms(&self) -> Option<i64> {
        parse(&self.0)
    }

    /// As a deadline: whether it has passed at `now_ms`. An unreadable deadline has passed.
    pub fn has_passed(&self, now_ms: i64) -> bool {
        self.unix_ms().is_none_or(|t| t <= now_ms)
    }

    /// As a deadline: milliseconds left at `now_ms` (zero when passed or unreadable).
    pub fn ms_left(&self, now_ms: i64) -> u64 {
        self.unix_ms()
            .map(|t| u64::try_from(t.saturating_sub(now_ms)).unwrap_or(0))
            .unwrap_or(0)
    }

    /// This instant plus `ms` (an unreadable one stays unreadable).
    pub fn plus_ms(&self, ms: i64) -> Timestamp {
        match self.unix_ms() {
            Some(t) => Timestamp::from_unix_ms(t.saturating_add(ms)),
            None => self.clone(),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// In UTC for people: `len` characters of `YYYY-MM-DD HH:MM:SS` (the text as given when
    /// it is not a time).
    fn shown(&self, from: usize, to: usize) -> String {
        match self.unix_ms() {
            Some(ms) => {
                let canonical = Timestamp::from_unix_ms(ms).0.replacen('T', " ", 1);
                canonical.get(from..to).unwrap_or_default().to_owned()
            }
            None => self.0.clone(),
        }
    }

    /// `HH:MM` (UTC).
    pub fn clock(&self) -> String {
        self.shown(11, 16)
    }

    /// `YYYY-MM-DD HH:MM` (UTC).
    pub fn minute(&self) -> String {
        self.shown(0, 16)
    }

    /// `YYYY-MM-DD HH:MM:SS` (UTC).
    pub fn second(&self) -> String {
        self.shown(0, 19)
    }
}

impl From<String> for Timestamp {
    fn from(text: String) -> Self {
        Timestamp(text)
    }
}

impl From<&str> for Timestamp {
    fn from(text: &str) -> Self {
        Timestamp(text.to_owned())
    }
}

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> Self {
        t.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` → Unix milliseconds.
fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter().all(u8::is_ascii_digit).then(|| {
            part.iter()
                .fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, allowed: &[u8]| b.get(at).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, s) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let first3 = &b[at..at + digits.min(3)];
        millis = first3
            .iter()
            .fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0'))
            * 10i64.pow(3 - u32::try_from(first3.len()).unwrap_or(3));
        at += digits;
    }
    let offset_min = match b.get(at) {
        Some(b'Z' | b'z') if b.len() == at + 1 => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == at + 6 && sep(at + 3, b":") => {
            let minutes = num(at + 1, 2)? * 60 + num(at + 4, 2)?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s.min(59) - offset_min * 60;
    Some(secs * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        Timestamp::from(text.to_owned())
    }

    #[test]
    fn reads_rfc3339_in_its_forms() {
        assert_eq!(ts("1970-01-01T00:00:00Z").unix_ms(), Some(0));
        assert_eq!(ts("1970-01-01T00:00:01.5Z").unix_ms(), Some(1500));
        assert_eq!(
            ts("2026-11-30T17:17:15.123Z").unix_ms(),
            Some(1_796_059_035_123)
        );
        assert_eq!(
            ts("2026-11-30T18:17:15.123456+01:00").unix_ms(),
            Some(1_796_059_035_123)
        );
        assert_eq!(
            ts("2024-02-29t00:00:00z").unix_ms(),
            Some(1_709_164_800_000)
        );
        assert_eq!(ts("1969-12-31T23:59:59.999Z").unix_ms(), Some(-1));
    }

    #[test]
    fn refuses_what_is_not_a_time() {
        for bad in [
            "",
            "soon",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T17:17:15",
            "2026-11-30T17:17:15.Z",
            "2026-11-30T17:17:15Zjunk",
            "2026-11-30T17:17:15+0100",
        ] {
            assert_eq!(ts(bad).unix_ms(), None, "{bad}");
        }
    }

    #[test]
    fn formats_and_round_trips() {
        for ms in [
            0,
            1,
            999,
            1_796_059_035_123,
            -1,
            951_782_400_000,
            4_102_444_800_000,
        ] {
            let t = Timestamp::from_unix_ms(ms);
            assert_eq!(t.unix_ms(), Some(ms), "{t}");
        }
        assert_eq!(
            Timestamp::from_unix_ms(1_796_059_035_123).as_str(),
            "2026-11-30T17:17:15.123Z"
        );
        assert_eq!(Timestamp::from_unix_ms(0).clock(), "00:00");
        let t = ts("2026-11-30T18:17:15.9+01:00");
        assert_eq!(
            (t.clock(), t.minute(), t.second()),
            (
                "17:17".into(),
                "2026-11-30 17:17".into(),
                "2026-11-30 17:17:15".into()
            )
        );
        assert_eq!(ts("soon").minute(), "soon");
    }

    #[test]
    fn an_unreadable_deadline_has_passed() {
        let deadline = ts("2026-11-30T17:17:15.000Z");
        let at = deadline.unix_ms().unwrap();
        assert!(!deadline.has_passed(at - 1));
        assert!(deadline.has_passed(at));
        assert_eq!(deadline.ms_left(at - 250), 250);
        assert!(ts("never").has_passed(0), "fail closed");
        assert_eq!(ts("never").ms_left(0), 0);
        assert_eq!(deadline.plus_ms(1000).unix_ms(), Some(at + 1000));
    }
}
