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

pub mod api;
pub mod app;
pub mod protocol;
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
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(app::App);
}
