//! The pages whose code loads when they are first opened: Config, Audit, Tokens, Rules and
//! Your answers.
//! Each is a lazy route: in the browser bundle its view is a split point, so the build
//! (`scripts/lib.sh`, `countersign-wasm-split`) moves what only it uses into a chunk of its own
//! and the first page a phone loads carries none of it. On the server a lazy route is plain
//! code, rendered in order like every page.
//!
//! The split points are written out here (what `#[lazy_route]` would make) for one reason: a
//! chunk that cannot be fetched must not end the page. `#[lazy_route]`'s split panics on a
//! failed load, and a panic is the end of the module; here the load is `fallible`, and a
//! failure is tried again while the server cannot be reached ([`load_chunk`]), so a page
//! opened during an outage appears once the server is back. Only a chunk the server answers
//! without (a tab older than the running build) stops the page, with a Reload link.

use leptos::prelude::*;
use leptos_router::LazyRoute;

use crate::ui::answers_page::AnswersPage;
use crate::ui::audit_page::AuditPage;
use crate::ui::config_page::ConfigPage;
use crate::ui::rules_page::RulesPage;
use crate::ui::tokens_page::TokensPage;

/// A lazy route `$route` showing `$page`, split at `$split` (the chunk's name, and the key the
/// server preloads its chunks by).
macro_rules! lazy_page {
    ($(#[$doc:meta])* $route:ident, $page:ident, $split:ident, $view:ident, $preload:ident) => {
        $(#[$doc])*
        pub struct $route;

        #[cfg(feature = "hydrate")]
        #[::leptos::wasm_split::wasm_split(
            $split,
            wasm_split_path = ::leptos::wasm_split,
            preload(#[doc(hidden)] $preload),
            fallible
        )]
        fn $view() -> Result<AnyView, ChunkMissing> {
            Ok(view! { <$page/> }.into_any())
        }

        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            async fn view(_this: Self) -> AnyView {
                #[cfg(feature = "hydrate")]
                {
                    if !load_chunk(|| $preload()).await {
                        return ().into_any();
                    }
                    $view().await.unwrap_or_else(|_| ().into_any())
                }
                #[cfg(not(feature = "hydrate"))]
                {
                    leptos::prefetch_lazy_fn_on_server(stringify!($split));
                    view! { <$page/> }.into_any()
                }
            }

            async fn preload() {
                // A failure here is tried again when the page is opened (`view`).
                #[cfg(feature = "hydrate")]
                let _ = $preload().await;
            }
        }
    };
}

lazy_page!(
    /// `/config`.
    ConfigRoute,
    ConfigPage,
    __config_route_view,
    config_view,
    preload_config_view
);
lazy_page!(
    /// `/audit`.
    AuditRoute,
    AuditPage,
    __audit_route_view,
    audit_view,
    preload_audit_view
);
lazy_page!(
    /// `/tokens`.
    TokensRoute,
    TokensPage,
    __tokens_route_view,
    tokens_view,
    preload_tokens_view
);
lazy_page!(
    /// `/rules`.
    RulesRoute,
    RulesPage,
    __rules_route_view,
    rules_view,
    preload_rules_view
);

lazy_page!(
    /// `/answers`.
    AnswersRoute,
    AnswersPage,
    __answers_route_view,
    answers_view,
    preload_answers_view
);

/// A lazy page's code could not be loaded.
#[cfg(feature = "hydrate")]
pub struct ChunkMissing;

#[cfg(feature = "hydrate")]
impl From<leptos::wasm_split::SplitLoaderError> for ChunkMissing {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        ChunkMissing
    }
}

/// Loads a lazy page's code: tried again while the server cannot be reached (the page says
/// so meanwhile, `reach`), until it loads. `false` when the server answers and still the code
/// cannot be had (a newer build is running): the page is stopped, with a Reload link.
#[cfg(feature = "hydrate")]
async fn load_chunk<Fut>(load: impl Fn() -> Fut) -> bool
where
    Fut: Future<Output = Result<(), leptos::wasm_split::SplitLoaderError>>,
{
    use crate::ui::reach;
    let mut failures = 0u32;
    loop {
        if load().await.is_ok() {
            if failures > 0 {
                reach::reached();
            }
            return true;
        }
        if reach::server_answers().await {
            crate::ui::browser::stop_page();
            return false;
        }
        failures = failures.saturating_add(1);
        reach::went_down();
        reach::sleep(crate::ui::stream::retry_delay(failures)).await;
    }
}
