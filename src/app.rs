//! The HTML shell and the client-side routes.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{Lazy, SsrMode, path};

use crate::ui::inbox::InboxPage;
use crate::ui::lazy_pages::{AnswersRoute, AuditRoute, ConfigRoute, RulesRoute, TokensRoute};
use crate::ui::notify_page::NotifyPage;
use crate::ui::security_page::SecurityPage;
use crate::ui::session_page::SessionPage;
use crate::ui::viewer::Viewer;

/// The document around every server-rendered page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::server::csp::set_page_policy();
    let viewer = Viewer::current();
    let (scope, modes) = (viewer.scope_attr(), viewer.modes.attr());
    // Who is signed in (absent for the admin's own login): the header says so.
    let person = viewer.person.clone();
    // Which browser login this is (a digest that grants nothing): a card tells this browser's
    // answers from another's by it.
    let login = crate::ui::card::answered_by::reader_login();
    // Their roles and groups, for the buttons of a card routed to some of them (issue 41).
    let approver = crate::ui::approver::page_approver();
    let (roles, groups) = (approver.roles_attr(), approver.groups_attr());
    // The page's own scripts carry the render's nonce too, as every script of a page does.
    let nonce = use_nonce().map(|n| n.to_string());
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="stylesheet" href="/pkg/countersign.css"/>
                <link rel="icon" type="image/svg+xml" href="/favicon.svg"/>
                // The installable app: its manifest (fetched without cookies: it is public)
                // and the service worker's registration.
                <link rel="manifest" href="/manifest.webmanifest"/>
                <meta name="theme-color" content="#2563eb"/>
                <script src="/pwa.js" defer nonce=nonce.clone()></script>
                <script src="/passkey.js" defer nonce=nonce></script>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body data-scope=scope data-modes=modes data-login=login data-person=person data-roles=roles data-groups=groups>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(Viewer::current());
    view! {
        <Title text="Countersign"/>
        <crate::ui::reach::ReachBanner/>
        // In order: every page is whole HTML as it arrives, readable and its cards answerable
        // (by their forms) before the script loads, or without it.
        <Router>
            <Routes fallback=|| view! { <p class="not-found">"Nothing here. " <a href="/">"Back to your sessions"</a></p> }>
                <Route path=path!("/sessions/:sid") view=SessionPage ssr=SsrMode::InOrder/>
                <Route path=path!("/inbox") view=InboxPage ssr=SsrMode::InOrder/>
                // The pages a person opens now and then load their code when first opened.
                <Route path=path!("/rules") view={Lazy::<RulesRoute>::new()} ssr=SsrMode::InOrder/>
                <Route path=path!("/audit") view={Lazy::<AuditRoute>::new()} ssr=SsrMode::InOrder/>
                <Route path=path!("/answers") view={Lazy::<AnswersRoute>::new()} ssr=SsrMode::InOrder/>
                <Route path=path!("/config") view={Lazy::<ConfigRoute>::new()} ssr=SsrMode::InOrder/>
                <Route path=path!("/tokens") view={Lazy::<TokensRoute>::new()} ssr=SsrMode::InOrder/>
                // Two pages whose controls a script of their own works (WebAuthn, Web Push):
                // the sidebar opens them with a full load, so the script runs with the page.
                <Route path=path!("/security") view=SecurityPage ssr=SsrMode::InOrder/>
                <Route path=path!("/notify") view=NotifyPage ssr=SsrMode::InOrder/>
            </Routes>
        </Router>
    }
}
