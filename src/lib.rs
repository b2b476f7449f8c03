//! Countersign: a chat with a tool-using agent whose consequential actions wait for a
//! person's countersignature. One crate, two builds:
//!
//! - `ssr` (the `countersign` binary): `server/` — HTTP API, SSE feed, agent loop, storage —
//!   plus server-side rendering of the UI;
//! - `hydrate` (the wasm bundle): the same UI made live in the browser.
//!
//! Layout: `protocol` (wire types both sides share), `app` (shell and routes), `ui/`
//! (components and the client-side feed reducer), `api` (server functions, thin wrappers over
//! `server::core`), `server/` (ssr only).

#![recursion_limit = "256"]
// Short functions: no production function of 100 lines or more (the threshold is in
// clippy.toml; CONTRIBUTING.md, "Short functions"). Tests may read as one story.
#![warn(clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod api;
pub mod app;
pub mod protocol;
pub mod shown;
pub mod text;
#[cfg(feature = "ssr")]
pub mod timeline;
pub mod ui;

#[cfg(feature = "ssr")]
pub mod bench;
#[cfg(feature = "ssr")]
pub mod cli;
#[cfg(feature = "ssr")]
pub mod external;
#[cfg(feature = "ssr")]
pub mod server;

/// The browser entry point: hydrate the server-rendered page. `hydrate_lazy` because the
/// Config, Audit, Tokens and Rules pages are lazy routes (their code is a chunk of its own):
/// a first load of one waits for its chunk before hydrating.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    // A panic is the end of the module: say so on the page and make its controls inert,
    // rather than leave buttons that look live and run nothing.
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        ui::browser::stop_page();
    }));
    leptos::mount::hydrate_lazy(app::App);
}
