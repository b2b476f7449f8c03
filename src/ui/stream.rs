//! What the page's two long-lived streams (the session feed, `feed.rs`, and the change stream,
//! `changes.rs`) share: how long to wait before trying again, and the open `EventSource` with
//! the handlers it calls. Both close the source themselves on an error and open a new one
//! (the browser's own retry stops for good after an HTTP error, and would not carry a cursor).

use std::time::Duration;

/// The wait before the `failures`-th attempt in a row: 250 ms, 500 ms, then every second.
/// Short on purpose: a local server restarts in a second or two, and a page should be live
/// again as soon as it is back (one request a second while it is away costs nothing).
pub fn retry_delay(failures: u32) -> Duration {
    let doubled = 250u64.saturating_mul(1 << failures.saturating_sub(1).min(4));
    Duration::from_millis(doubled.min(1000))
}

/// The whole seconds a wait is shown as ("retry in 1s"), never 0.
pub fn shown_secs(delay: Duration) -> u32 {
    u32::try_from(delay.as_millis().div_ceil(1000)).map_or(u32::MAX, |s| s.max(1))
}

#[cfg(feature = "hydrate")]
pub use browser::Link;

#[cfg(feature = "hydrate")]
mod browser {
    use wasm_bindgen::closure::Closure;
    use web_sys::EventSource;

    /// An open stream and the handlers it calls; dropping it closes the stream.
    pub struct Link {
        pub source: EventSource,
        pub handlers: Vec<Closure<dyn FnMut(web_sys::Event)>>,
    }

    impl Drop for Link {
        fn drop(&mut self) {
            self.source.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_tries_again_within_a_second() {
        let waits: Vec<u128> = (1..=8).map(|n| retry_delay(n).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 1000, 1000, 1000, 1000, 1000]);
        assert_eq!(retry_delay(u32::MAX).as_millis(), 1000);
        assert_eq!(shown_secs(retry_delay(1)), 1);
        assert_eq!(shown_secs(Duration::from_millis(1500)), 2);
    }
}
