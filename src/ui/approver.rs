//! Who reads the page, for a routed card (issue 41): the signed-in person's roles and groups
//! beside their email (`data-person`). The server writes them into `<body data-roles
//! data-groups>` from the people store as it read them for this page; the browser reads them
//! back, so both draw the same buttons. The server checks every answer again either way.

use crate::protocol::PageApprover;

/// The page's reader as a routed card sees them.
pub fn page_approver() -> PageApprover {
    #[cfg(feature = "ssr")]
    {
        use leptos::prelude::use_context;
        // Put there by the server as it drew the page (`http::person_now`): none for the
        // admin's own credentials.
        use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<PageApprover>().cloned())
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        thread_local! {
            static APPROVER: PageApprover = {
                let body = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body());
                let attr = |name: &str| {
                    body.as_ref()
                        .and_then(|b| b.get_attribute(name))
                        .unwrap_or_default()
                };
                PageApprover::parse(&attr("data-person"), &attr("data-roles"), &attr("data-groups"))
            };
        }
        APPROVER.with(PageApprover::clone)
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    PageApprover::default()
}
