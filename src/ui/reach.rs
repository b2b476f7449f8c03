//! Whether the page can reach its server, said in words while it cannot, and the one way a
//! read waits for it to come back.
//!
//! A lost connection heals by itself: a read that never reached the server (a list, a
//! session's snapshot, a lazy page's code) is tried again until it does, after 250 ms,
//! 500 ms, then every second (`stream::retry_delay`), and at once when anything finds the
//! server back, so a page opened or navigated to during an outage loads as soon as the
//! server answers. While it cannot, [`ReachBanner`] says so in
//! words. Only reads are tried again: an answer or a message that could not be sent is said
//! to be not sent where it was made (`api::error_message`), never sent later unseen.
//!
//! What says the server is away: a call that failed to reach it ([`went_down`]), or a stream
//! that broke ([`lost`], which only asks the server's health, every 250 ms while it is away:
//! a stream refused for another reason shows nothing). What says it is back: the health check answering, a stream opening,
//! a read getting through ([`reached`]).

use std::future::Future;

use leptos::prelude::*;

use crate::protocol::{ErrorBody, ErrorCode};

/// What the page says while the server cannot be reached.
pub const UNREACHABLE_WORDS: &str = "Can't reach Countersign — retrying…";

/// An outcome that says whether its call reached the server at all.
pub trait Unreached {
    /// `true` when the call never reached the server (nothing was done there).
    fn unreached(&self) -> bool;
}

impl<T> Unreached for Result<T, ErrorBody> {
    fn unreached(&self) -> bool {
        matches!(self, Err(err) if err.error.code == ErrorCode::Network)
    }
}

/// Calls `call` until it reaches the server (in the browser; on the server it runs once), so
/// a read made while the server is away completes once it is back. For reads only.
pub async fn until_reached<T, Fut>(call: impl Fn() -> Fut) -> T
where
    T: Unreached,
    Fut: Future<Output = T>,
{
    #[cfg(feature = "hydrate")]
    {
        let mut failures = 0u32;
        loop {
            let outcome = call().await;
            if !outcome.unreached() {
                if failures > 0 {
                    reached();
                }
                return outcome;
            }
            failures = failures.saturating_add(1);
            went_down();
            sleep(crate::ui::stream::retry_delay(failures)).await;
        }
    }
    #[cfg(not(feature = "hydrate"))]
    call().await
}

/// [`until_reached`] as a `Send` future, for a resource's fetcher.
pub fn until_reached_send<T, Fut>(
    call: impl Fn() -> Fut + Send + 'static,
) -> impl Future<Output = T> + Send + 'static
where
    T: Unreached + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    // The browser has one thread: the wait's timer is not `Send`, and never needs to be.
    #[cfg(feature = "hydrate")]
    let future = send_wrapper::SendWrapper::new(until_reached(call));
    #[cfg(not(feature = "hydrate"))]
    let future = until_reached(call);
    future
}

/// The banner every page shows while the server cannot be reached; it goes by itself once
/// the server answers again.
#[component]
pub fn ReachBanner() -> impl IntoView {
    let away = away();
    view! {
        <Show when=move || away.get()>
            <p class="unreachable" role="status" data-testid="unreachable">{UNREACHABLE_WORDS}</p>
        </Show>
    }
}

#[cfg(not(feature = "hydrate"))]
fn away() -> ArcRwSignal<bool> {
    ArcRwSignal::new(false)
}

#[cfg(feature = "hydrate")]
pub use browser::{lost, reached, server_answers, sleep, went_down};

#[cfg(feature = "hydrate")]
use browser::away;

#[cfg(feature = "hydrate")]
mod browser {
    //! One probe per tab: while the server is away, `GET /api/v1/health` on the streams'
    //! schedule until anything answers.

    use std::cell::{Cell, RefCell};
    use std::time::Duration;

    use leptos::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::JsValue;
    use wasm_bindgen_futures::JsFuture;

    /// How often the health check is asked while the server is away: often, since it is
    /// what wakes every waiting read, and cheap (a refused connection, or a tiny answer).
    const PROBE_EVERY: Duration = Duration::from_millis(250);

    thread_local! {
        static AWAY: ArcRwSignal<bool> = ArcRwSignal::new(false);
        static PROBING: Cell<bool> = const { Cell::new(false) };
        /// The waits under way ([`sleep`]): each ends early once the server is back.
        static WAITING: RefCell<Vec<js_sys::Function>> = const { RefCell::new(Vec::new()) };
    }

    /// `true` while the server cannot be reached.
    pub fn away() -> ArcRwSignal<bool> {
        AWAY.with(Clone::clone)
    }

    /// A call failed to reach the server: say so now, and watch for its return.
    pub fn went_down() {
        let away = away();
        if !away.get_untracked() {
            away.set(true);
        }
        lost();
    }

    /// Something broke (a stream): ask the server's health until it answers, saying the
    /// server is away only once the health check itself fails.
    pub fn lost() {
        if PROBING.with(|p| p.replace(true)) {
            return;
        }
        leptos::task::spawn_local(async {
            while !server_answers().await {
                let away = away();
                if !away.get_untracked() {
                    away.set(true);
                }
                sleep(PROBE_EVERY).await;
            }
            PROBING.with(|p| p.set(false));
            reached();
        });
    }

    /// The server answered: every read waiting to try again tries now, not at its timer.
    pub fn reached() {
        let away = away();
        if away.get_untracked() {
            away.set(false);
        }
        let waiting = WAITING.with(|w| std::mem::take(&mut *w.borrow_mut()));
        for wake in waiting {
            let _ = wake.call0(&JsValue::UNDEFINED);
        }
    }

    /// Whether the server answers at all (any status: only a failed fetch is "away").
    pub async fn server_answers() -> bool {
        let Some(window) = web_sys::window() else {
            return false;
        };
        let init = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&init, &"cache".into(), &"no-store".into());
        let fetch = js_sys::Reflect::get(&window, &"fetch".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        let Some(fetch) = fetch else {
            return false;
        };
        let Ok(promise) = fetch.call2(&window, &JsValue::from_str("/api/v1/health"), &init) else {
            return false;
        };
        match promise.dyn_into::<js_sys::Promise>() {
            Ok(promise) => JsFuture::from(promise).await.is_ok(),
            Err(_) => false,
        }
    }

    /// Waits `delay` (a browser timer), or less: until the server is found back ([`reached`]).
    pub async fn sleep(delay: Duration) {
        let millis = i32::try_from(delay.as_millis()).unwrap_or(i32::MAX);
        let promise = js_sys::Promise::new(&mut |resolve, _reject| {
            if let Some(window) = web_sys::window() {
                let _ =
                    window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, millis);
            }
            // Resolving twice (timer, then wake) is harmless.
            WAITING.with(|w| w.borrow_mut().push(resolve));
        });
        let _ = JsFuture::from(promise).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_call_that_never_reached_the_server_is_tried_again() {
        let lost: Result<(), ErrorBody> = Err(ErrorBody::new(ErrorCode::Network, "x"));
        assert!(lost.unreached());
        let refused: Result<(), ErrorBody> = Err(ErrorBody::new(ErrorCode::Internal, "x"));
        assert!(!refused.unreached());
        let done: Result<(), ErrorBody> = Ok(());
        assert!(!done.unreached());
    }

    #[test]
    fn the_banner_says_it_in_words() {
        assert!(UNREACHABLE_WORDS.starts_with("Can't reach Countersign"));
        assert!(UNREACHABLE_WORDS.contains("retrying"));
    }
}
