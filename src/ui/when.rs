//! A time as the person reads it: in the browser's own zone once the page is hydrated, with
//! the UTC time on hover. Before hydration (and with JavaScript off) it reads in UTC, labelled
//! so, which is also what the server renders: the first browser render matches it.

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
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    // Minutes behind UTC (Tokyo is -540).
    let offset_minutes = date.get_timezone_offset();
    if !offset_minutes.is_finite() {
        return None;
    }
    let local = Timestamp::from_unix_ms(ms - (offset_minutes as i64) * 60_000);
    Some(shown(&local, precision))
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
