//! The pages whose code loads when they are first opened: Config, Audit, Tokens and Rules.
//! Each is a lazy route: in the browser bundle its view is a split point, so the build
//! (`scripts/lib.sh`, `countersign-wasm-split`) moves what only it uses into a chunk of its own
//! and the first page a phone loads carries none of it. On the server a lazy route is plain
//! code, rendered in order like every page.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

use crate::ui::audit_page::AuditPage;
use crate::ui::config_page::ConfigPage;
use crate::ui::rules_page::RulesPage;
use crate::ui::tokens_page::TokensPage;

/// `/config`.
pub struct ConfigRoute;

#[lazy_route]
impl LazyRoute for ConfigRoute {
    fn data() -> Self {
        ConfigRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <ConfigPage/> }.into_any()
    }
}

/// `/audit`.
pub struct AuditRoute;

#[lazy_route]
impl LazyRoute for AuditRoute {
    fn data() -> Self {
        AuditRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <AuditPage/> }.into_any()
    }
}

/// `/tokens`.
pub struct TokensRoute;

#[lazy_route]
impl LazyRoute for TokensRoute {
    fn data() -> Self {
        TokensRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <TokensPage/> }.into_any()
    }
}

/// `/rules`.
pub struct RulesRoute;

#[lazy_route]
impl LazyRoute for RulesRoute {
    fn data() -> Self {
        RulesRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <RulesPage/> }.into_any()
    }
}
