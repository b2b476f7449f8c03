//! The state every handler and server function sees.

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use super::core::Core;

#[derive(Clone)]
pub struct AppState {
    pub core: Arc<Core>,
    pub leptos_options: LeptosOptions,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
