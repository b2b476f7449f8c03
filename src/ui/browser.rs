//! The few direct browser calls the UI makes, as no-ops on the server (where no event handler
//! ever runs) so components need no `cfg` of their own.

/// Full navigation (used when the current page's session no longer exists).
pub fn go_to(url: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href(url);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = url;
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> f64 {
    #[cfg(feature = "hydrate")]
    let now = js_sys::Date::now();
    #[cfg(not(feature = "hydrate"))]
    let now = 0.0;
    now
}

/// Milliseconds since the epoch of an RFC 3339 time, if it parses.
pub fn parse_time_ms(rfc3339: &str) -> Option<f64> {
    #[cfg(feature = "hydrate")]
    let ms = Some(js_sys::Date::parse(rfc3339)).filter(|ms| !ms.is_nan());
    #[cfg(not(feature = "hydrate"))]
    let ms = {
        let _ = rfc3339;
        None
    };
    ms
}

/// Scrolls the transcript's end into view.
pub fn scroll_to_end(element_id: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(element_id))
    {
        el.set_scroll_top(el.scroll_height());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = element_id;
}
