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

/// Stops a page whose script can no longer run (a panic ends the module in the browser, e.g.
/// a lazy page whose code could not be fetched): every control goes inert, so nothing on the
/// page looks live that no longer is, and a banner offers a reload (a plain link: no script of
/// ours runs any more).
pub fn stop_page() {
    #[cfg(feature = "hydrate")]
    {
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        let Some(body) = document.body() else {
            return;
        };
        // A dying module may panic more than once; one banner says it.
        if let Ok(Some(_)) = document.query_selector(".page-stopped") {
            return;
        }
        let children = body.children();
        for i in 0..children.length() {
            if let Some(child) = children.item(i) {
                let _ = child.set_attribute("inert", "");
            }
        }
        if let Ok(banner) = document.create_element("div") {
            let _ = banner.set_attribute("class", "page-stopped");
            let _ = banner.set_attribute("role", "alert");
            let _ = banner.set_attribute("data-testid", "page-stopped");
            banner.set_inner_html(
                // `rel=external`: the router's click handler (our dead module) leaves it to the
                // browser.
                "This page stopped working: part of it could not be loaded. \
                 <a href=\"\" rel=\"external\">Reload</a>",
            );
            let _ = body.append_child(&banner);
        }
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> f64 {
    #[cfg(feature = "hydrate")]
    let now = js_sys::Date::now();
    #[cfg(not(feature = "hydrate"))]
    let now = 0.0;
    now
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

/// Scrolls an element into view (smoothly, centred).
pub fn scroll_into_view(element_id: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(element_id))
    {
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_behavior(web_sys::ScrollBehavior::Smooth);
        options.set_block(web_sys::ScrollLogicalPosition::Center);
        el.scroll_into_view_with_scroll_into_view_options(&options);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = element_id;
}

/// Opens every closed `<details>` around an element (an Inbox row around its card), so it can
/// be seen and take focus.
pub fn reveal(element_id: &str) {
    #[cfg(feature = "hydrate")]
    {
        let mut at = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(element_id));
        while let Some(closed) = at.and_then(|el| el.closest("details:not([open])").ok().flatten())
        {
            let _ = closed.set_attribute("open", "");
            at = Some(closed);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = element_id;
}

/// Whether the element with this id holds keyboard focus.
pub fn has_focus(element_id: &str) -> bool {
    #[cfg(feature = "hydrate")]
    let focused = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element())
        .is_some_and(|el| el.id() == element_id);
    #[cfg(not(feature = "hydrate"))]
    let focused = {
        let _ = element_id;
        false
    };
    focused
}

/// Moves keyboard focus to an element, if it exists.
/// The approval id of the card that holds keyboard focus (the card itself or a control in
/// it), if any.
pub fn focused_card() -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .and_then(|el| el.closest("[data-testid=approval-card]").ok().flatten())
            .and_then(|card| card.get_attribute("data-approval-id"))
    }
    #[cfg(not(feature = "hydrate"))]
    None
}

pub fn focus(element_id: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(element_id))
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let _ = el.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = element_id;
}

/// Whether the page is currently hidden (another tab in front, window minimized).
pub fn page_hidden() -> bool {
    #[cfg(feature = "hydrate")]
    let hidden = web_sys::window()
        .and_then(|w| w.document())
        .map(|d| d.hidden())
        .unwrap_or(false);
    #[cfg(not(feature = "hydrate"))]
    let hidden = false;
    hidden
}

/// A new gate: ask for notification permission the first time; when the tab is hidden and
/// permission is granted, show a notification whose click focuses the tab and the card.
pub fn notify_gate(approval_id: &str, title: &str, summary: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        use web_sys::{Notification, NotificationOptions, NotificationPermission};
        match Notification::permission() {
            NotificationPermission::Default => {
                let _ = Notification::request_permission();
            }
            NotificationPermission::Granted if page_hidden() => {
                let options = NotificationOptions::new();
                options.set_body(summary);
                options.set_tag(approval_id);
                if let Ok(note) =
                    Notification::new_with_options(&format!("Approval needed: {title}"), &options)
                {
                    let card = format!("gate-{approval_id}");
                    let on_click = Closure::<dyn FnMut()>::new(move || {
                        if let Some(w) = web_sys::window() {
                            let _ = w.focus();
                        }
                        scroll_into_view(&card);
                        focus(&card);
                    });
                    note.set_onclick(Some(on_click.as_ref().unchecked_ref()));
                    // The notification lives beyond this call; so must its handler.
                    on_click.forget();
                }
            }
            _ => {}
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (approval_id, title, summary);
}

/// Sets the document title.
pub fn set_title(title: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
        doc.set_title(title);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = title;
}

/// This tab's id: created once per tab and kept in `sessionStorage`, so a reload keeps it.
pub fn tab_id() -> String {
    #[cfg(feature = "hydrate")]
    {
        const KEY: &str = "countersign-tab";
        let storage = web_sys::window().and_then(|w| w.session_storage().ok().flatten());
        if let Some(existing) = storage
            .as_ref()
            .and_then(|s| s.get_item(KEY).ok().flatten())
        {
            return existing;
        }
        let id = format!(
            "tab-{:08x}{:08x}",
            (js_sys::Math::random() * f64::from(u32::MAX)) as u32,
            (js_sys::Math::random() * f64::from(u32::MAX)) as u32
        );
        if let Some(storage) = storage {
            let _ = storage.set_item(KEY, &id);
        }
        id
    }
    #[cfg(not(feature = "hydrate"))]
    String::new()
}

/// Whether focus is somewhere a new card may take it from: nowhere, the page, a card itself,
/// or the (empty) composer — not a field the person is working in.
pub fn focus_is_free() -> bool {
    #[cfg(feature = "hydrate")]
    let free = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element())
        .is_none_or(|el| {
            let testid = el.get_attribute("data-testid").unwrap_or_default();
            // A card the person is working on (a second `a` pending, a panel open) keeps it.
            let engaged = el.has_attribute("data-engaged");
            el.tag_name() == "BODY"
                || (testid == "approval-card" && !engaged)
                || testid == "composer"
        });
    #[cfg(not(feature = "hydrate"))]
    let free = true;
    free
}

/// Whether focus is on nothing in particular (the page itself): what is left when the
/// focused element was moved or removed.
pub fn focus_is_nowhere() -> bool {
    #[cfg(feature = "hydrate")]
    let nowhere = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element())
        .is_none_or(|el| el.tag_name() == "BODY");
    #[cfg(not(feature = "hydrate"))]
    let nowhere = true;
    nowhere
}

/// Whether the composer holds no text (and so may lose focus to a new card).
pub fn composer_is_empty() -> bool {
    #[cfg(feature = "hydrate")]
    let empty = {
        use wasm_bindgen::JsCast;
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector("[data-testid=composer]").ok().flatten())
            .and_then(|e| e.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
            .map(|t| t.value().trim().is_empty())
            .unwrap_or(true)
    };
    #[cfg(not(feature = "hydrate"))]
    let empty = true;
    empty
}

/// The address the page was opened at (`http://host:port`); empty on the server.
pub fn page_origin() -> String {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.location().origin().ok())
            .unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    String::new()
}

/// Sets a page's fixed title now and again on the next frame: arriving from a session page,
/// that page's own title effect may still run once after this page's.
pub fn set_page_title(title: &'static str) {
    set_title(title);
    #[cfg(feature = "hydrate")]
    leptos::prelude::request_animation_frame(move || set_title(title));
}

/// Copies the text of an `<input>` to the clipboard: selects it (so it can still be copied
/// by hand), then asks the browser to copy. Works over plain HTTP too (a phone on the LAN),
/// where `navigator.clipboard` does not exist. Whether the browser said it copied.
pub fn copy_field(element_id: &str) -> bool {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return false;
        };
        let Some(field) = document.get_element_by_id(element_id) else {
            return false;
        };
        // `select()` by name: the bundle does not carry the HtmlInputElement binding.
        if let Ok(select) = js_sys::Reflect::get(&field, &"select".into())
            .and_then(|f| f.dyn_into::<js_sys::Function>())
        {
            let _ = select.call0(&field);
        }
        document
            .dyn_into::<web_sys::HtmlDocument>()
            .ok()
            .and_then(|d| d.exec_command("copy").ok())
            .unwrap_or(false)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = element_id;
        false
    }
}

/// A passkey assertion for one answer to one card, made by the page's WebAuthn script
/// (`public/passkey.js`, `window.countersignPasskey`): the person confirms with their passkey,
/// and the assertion comes back as the JSON a decision carries. `answer` is the answer as the
/// decision will send it (its challenge is derived from it). `Err` says why there is none.
pub async fn passkey_for_card(
    session_id: &str,
    approval_id: &str,
    answer: &serde_json::Value,
) -> Result<crate::protocol::PasskeyAnswer, String> {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let window = web_sys::window().ok_or("no window")?;
        let function = js_sys::Reflect::get(&window, &"countersignPasskey".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .ok_or("this page cannot use passkeys (its script did not load)")?;
        let promise = function
            .call3(
                &window,
                &session_id.into(),
                &approval_id.into(),
                &answer.to_string().into(),
            )
            .ok()
            .and_then(|p| p.dyn_into::<js_sys::Promise>().ok())
            .ok_or("the passkey script failed")?;
        let text = wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .map_err(|e| {
                e.as_string()
                    .unwrap_or_else(|| "the passkey was not used".to_owned())
            })?
            .as_string()
            .ok_or("the passkey script answered nothing")?;
        // A parse error is for developers: the person learns only that it could not be used.
        serde_json::from_str(&text).map_err(|_| "the passkey's answer could not be read".to_owned())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (session_id, approval_id, answer);
        Err("passkeys are used in the browser".to_owned())
    }
}
