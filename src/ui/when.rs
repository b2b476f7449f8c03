//! A time as the person reads it: in the browser's own zone once the page is hydrated, with
//! the UTC time on hover. Before hydration (and with JavaScript off) it reads in UTC, labelled
//! so, which is also what the server renders: the first browser render matches it.
//!
//! A moment a person acts on (a card asked or answered, an Inbox entry) also says how long
//! ago it was, beside its clock time ([`ago_and_clock`], [`AgoAndClock`]): "3 min ago ·
//! 14:02". One timer for the whole page moves every such time on, every 30 s.

use leptos::prelude::*;

use crate::protocol::Timestamp;

/// How much of the time is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    /// `HH:MM`
    #[default]
    Clock,
    /// `YYYY-MM-DD HH:MM`
    Minute,
    /// `YYYY-MM-DD HH:MM:SS`
    Second,
}

fn shown(at: &Timestamp, precision: Precision) -> String {
    match precision {
        Precision::Clock => at.clock(),
        Precision::Minute => at.minute(),
        Precision::Second => at.second(),
    }
}

/// The UTC form: what the server renders and the hover says.
pub fn utc_text(at: &Timestamp, precision: Precision) -> String {
    let text = shown(at, precision);
    if text.is_empty() {
        text
    } else {
        format!("{text} UTC")
    }
}

/// The same instant in the browser's zone (its offset at that instant, so summer time is
/// right for last winter's entries too).
#[cfg(feature = "hydrate")]
fn local_text(at: &Timestamp, precision: Precision) -> Option<String> {
    let ms = at.unix_ms()?;
    let local = Timestamp::from_unix_ms(ms - offset_minutes(ms)? * 60_000);
    Some(shown(&local, precision))
}

/// The browser's minutes behind UTC at an instant (Tokyo is -540); `None` off the browser.
#[cfg(feature = "hydrate")]
fn offset_minutes(ms: i64) -> Option<i64> {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    let offset = date.get_timezone_offset();
    offset.is_finite().then_some(offset as i64)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// How long ago `at` was at `now_ms`, and its clock time in a zone `offset_minutes` behind UTC
/// (the browser's `getTimezoneOffset` at that instant; 0 for UTC): `just now · 14:02`,
/// `3 min ago · 14:02`, `5 h ago · 14:02`; a day or more ago, its date instead: `Dec 4 ·
/// 14:02` (with the year when it is not this year's). Empty when `at` cannot be read.
pub fn ago_and_clock(at: &Timestamp, now_ms: i64, offset_minutes: i64) -> String {
    let Some(at_ms) = at.unix_ms() else {
        return String::new();
    };
    let local = |ms: i64| Timestamp::from_unix_ms(ms - offset_minutes * 60_000);
    let (then, now) = (local(at_ms), local(now_ms));
    let clock = then.clock();
    let secs = (now_ms - at_ms).max(0) / 1000;
    let ago = match secs {
        0..45 => "just now".to_owned(),
        45..3_600 => format!("{} min ago", (secs / 60).max(1)),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        _ => {
            let date = then.as_str();
            let month = date
                .get(5..7)
                .and_then(|m| m.parse::<usize>().ok())
                .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
                .copied()
                .unwrap_or("");
            let day = date.get(8..10).unwrap_or("").trim_start_matches('0');
            match (date.get(0..4), now.as_str().get(0..4)) {
                (Some(year), Some(this_year)) if year != this_year => {
                    format!("{month} {day} {year}")
                }
                _ => format!("{month} {day}"),
            }
        }
    };
    format!("{ago} · {clock}")
}

/// The page's one slow clock for "… ago" times: Unix ms, moved on every 30 s by one timer
/// for the whole page (never one per time shown). Reference-counted, not owned by any view, so
/// no page's cleanup takes it away (and making it sets no owner for the views after it).
#[cfg(feature = "hydrate")]
fn page_tick() -> ArcRwSignal<f64> {
    thread_local! {
        static TICK: ArcRwSignal<f64> = {
            let tick = ArcRwSignal::new(crate::ui::browser::now_ms());
            let ticking = tick.clone();
            let _ = set_interval_with_handle(
                move || ticking.set(crate::ui::browser::now_ms()),
                std::time::Duration::from_secs(30),
            );
            tick
        };
    }
    TICK.with(ArcRwSignal::clone)
}

/// "3 min ago · 14:02" in the browser's zone, moving on with the page's clock; the full date
/// and UTC time on hover. The server (and a page without its script) shows the UTC clock
/// time, labelled, which the first browser render matches: the words come after hydration.
#[component]
pub fn AgoAndClock(at: Timestamp) -> impl IntoView {
    let first = utc_text(&at, Precision::Clock);
    let hover = utc_text(&at, Precision::Second);
    let hydrated = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    let text = {
        let at = at.clone();
        Effect::new(move |_| hydrated.set(true));
        let tick = page_tick();
        move || {
            if !hydrated.get() {
                return first.clone();
            }
            let now = tick.get() as i64;
            let offset = at.unix_ms().and_then(offset_minutes).unwrap_or(0);
            ago_and_clock(&at, now, offset)
        }
    };
    #[cfg(not(feature = "hydrate"))]
    let text = move || {
        let _ = hydrated.get();
        first.clone()
    };
    view! {
        <time class="ago" datetime=at.as_str().to_owned() title=hover data-testid="when">{text}</time>
    }
}

/// `<time>` with the instant in `datetime`, the browser-zone text, and UTC on hover.
#[component]
pub fn When(at: Timestamp, #[prop(optional)] precision: Precision) -> impl IntoView {
    let text = RwSignal::new(utc_text(&at, precision));
    #[cfg(feature = "hydrate")]
    {
        let at = at.clone();
        Effect::new(move |_| {
            if let Some(local) = local_text(&at, precision) {
                text.set(local);
            }
        });
    }
    let hover = utc_text(&at, Precision::Second);
    view! {
        <time datetime=at.as_str().to_owned() title=hover data-testid="when">{move || text.get()}</time>
    }
}

/// The time now, in the browser, ticking once a second (countdowns read it); on the server it
/// stays at 0.
pub fn clock() -> RwSignal<f64> {
    let now_ms = RwSignal::new(0.0f64);
    Effect::new(move |_| {
        now_ms.set(crate::ui::browser::now_ms());
        if let Ok(handle) = set_interval_with_handle(
            move || now_ms.set(crate::ui::browser::now_ms()),
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    now_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::from(text.to_owned())
    }

    #[test]
    fn a_time_says_how_long_ago_and_its_local_clock() {
        let now = at("2026-12-06T14:05:30.000Z").unix_ms().unwrap();
        let utc = |text: &str| ago_and_clock(&at(text), now, 0);
        assert_eq!(utc("2026-12-06T14:05:00.000Z"), "just now · 14:05");
        assert_eq!(utc("2026-12-06T14:04:40.000Z"), "1 min ago · 14:04");
        assert_eq!(utc("2026-12-06T14:02:10.000Z"), "3 min ago · 14:02");
        assert_eq!(utc("2026-12-06T11:02:00.000Z"), "3 h ago · 11:02");
        assert_eq!(utc("2026-12-04T14:02:00.000Z"), "Dec 4 · 14:02");
        assert_eq!(utc("2025-01-09T08:00:00.000Z"), "Jan 9 2025 · 08:00");
        // A clock a little ahead of ours is "just now", never a negative age.
        assert_eq!(utc("2026-12-06T14:06:00.000Z"), "just now · 14:06");
        // Tokyo (9 h ahead: -540 min behind): the clock and the date are Tokyo's.
        let tokyo = |text: &str| ago_and_clock(&at(text), now, -540);
        assert_eq!(tokyo("2026-12-06T14:02:10.000Z"), "3 min ago · 23:02");
        assert_eq!(tokyo("2026-12-04T20:00:00.000Z"), "Dec 5 · 05:00");
        assert_eq!(ago_and_clock(&at("not a time"), now, 0), "");
    }
}
