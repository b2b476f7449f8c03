//! `/audit`: the hash-chained audit log as a table, newest first, each subject linked to its
//! session (a gate's to its card), with a verify badge (checked in the browser), filters
//! (action on the server; actor and subject over the loaded entries), "Load older" by `n`,
//! and an export link to the REST route (oldest first, as before).

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::api;
use crate::protocol::{Actor, AuditEntry, AuditVerdict};
use crate::ui::browser;
use crate::ui::json;
use crate::ui::sidebar::PageLayout;
use crate::ui::when::{Precision, When};

/// The actions the audit log records (protocol.md), for the filter.
const ACTIONS: [&str; 17] = [
    "gate_opened",
    "gate_resolved",
    "rule_created",
    "rule_revoked",
    "rule_used",
    "mode_changed",
    "config_changed",
    "token_created",
    "token_revoked",
    "push_subscribed",
    "push_unsubscribed",
    "passkey_registered",
    "passkey_removed",
    "passkeys_reset",
    "floor_file_viewed",
    "browser_logged_in",
    "phone_link_made",
];

/// At most this many entries come per call.
const PAGE: usize = 500;

/// How much of an entry's detail the table shows before cutting.
const DETAIL_CHARS: usize = 140;

#[component]
pub fn AuditPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Audit/>
        </PageLayout>
    }
}

#[component]
fn Audit() -> impl IntoView {
    Effect::new(|_| browser::set_page_title("Audit — Countersign"));
    let action = RwSignal::new(String::new());
    let actor = RwSignal::new(String::new());
    let subject = RwSignal::new(String::new());
    let checks = RwSignal::new(0u64);
    // Checked in the browser only: walking the whole chain must not hold back the page the
    // server sends (every page is sent in order).
    let verdict = LocalResource::new(move || {
        checks.track();
        api::verify_audit()
    });
    let first = json::resource(
        move || action.get(),
        |action| api::audit(None, (!action.is_empty()).then_some(action), None),
    );
    view! {
        <AuditHeader action checks verdict/>
        <div class="page-body">
            <AuditFilters action actor subject/>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match first.await {
                        Ok(initial) => view! { <AuditTable initial action actor subject/> }.into_any(),
                        Err(err) => view! { <p class="error" role="alert">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
}

/// The page's title, the chain's verdict with Verify again, and the export link (for the
/// chosen action).
#[component]
fn AuditHeader(
    action: RwSignal<String>,
    checks: RwSignal<u64>,
    verdict: LocalResource<Result<AuditVerdict, crate::protocol::ErrorBody>>,
) -> impl IntoView {
    let export = move || match action.get() {
        a if a.is_empty() => "/api/v1/audit".to_owned(),
        a => format!("/api/v1/audit?action={a}"),
    };
    view! {
        <header class="page-header">
            <h1>"Audit"</h1>
            <div class="audit-tools">
                <Transition fallback=|| view! { <span class="verify" data-testid="audit-verify" data-state="checking">"Checking chain…"</span> }>
                    {move || Suspend::new(async move {
                        view! { <VerifyBadge verdict=verdict.await/> }
                    })}
                </Transition>
                <button type="button" class="small" data-testid="audit-reverify" on:click=move |_| checks.update(|n| *n += 1)>
                    "Verify again"
                </button>
                <a class="button-link" data-testid="audit-export" href=export rel="external" download="countersign-audit.json">
                    "Export JSON"
                </a>
            </div>
        </header>
    }
}

/// The filters: an action asked of the server, actor and subject matched on the page.
#[component]
fn AuditFilters(
    action: RwSignal<String>,
    actor: RwSignal<String>,
    subject: RwSignal<String>,
) -> impl IntoView {
    view! {
        <form class="filters" on:submit=|ev| ev.prevent_default()>
            <label>
                "Action"
                <select data-testid="audit-action" prop:value=move || action.get()
                    on:change=move |ev| action.set(event_target_value(&ev))>
                    <option value="">"all"</option>
                    {ACTIONS.into_iter().map(|a| view! { <option value=a>{a}</option> }).collect_view()}
                </select>
            </label>
            <label>
                "Actor"
                <input type="search" data-testid="audit-actor" placeholder="browser, token, person, rule:, agent…"
                    prop:value=move || actor.get() on:input=move |ev| actor.set(event_target_value(&ev))/>
            </label>
            <label>
                "Subject"
                <input type="search" data-testid="audit-subject" placeholder="approval, rule or session id"
                    prop:value=move || subject.get() on:input=move |ev| subject.set(event_target_value(&ev))/>
            </label>
        </form>
    }
}

#[component]
fn VerifyBadge(verdict: Result<AuditVerdict, crate::protocol::ErrorBody>) -> impl IntoView {
    match verdict {
        Ok(v) if v.ok => view! {
            <span class="verify ok" data-testid="audit-verify" data-state="intact"
                title="Every entry's hash matches its content and its predecessor">
                {format!("Chain intact · {} {}", v.entries, if v.entries == 1 { "entry" } else { "entries" })}
            </span>
        }
        .into_any(),
        Ok(v) => view! {
            <span class="verify broken" data-testid="audit-verify" data-state="broken" role="alert">
                {match v.first_bad {
                    Some(k) => format!("Chain broken at entry {k}"),
                    None => "Chain broken".to_owned(),
                }}
            </span>
        }
        .into_any(),
        Err(err) => view! {
            <span class="verify broken" data-testid="audit-verify" data-state="error">
                {format!("Could not verify: {}", api::error_message(&err))}
            </span>
        }
        .into_any(),
    }
}

#[component]
fn AuditTable(
    initial: Vec<AuditEntry>,
    action: RwSignal<String>,
    actor: RwSignal<String>,
    subject: RwSignal<String>,
) -> impl IntoView {
    let full_page = initial.len() >= PAGE;
    let entries = RwSignal::new(initial);
    let loading = RwSignal::new(false);
    let note = RwSignal::new((!full_page).then(|| "These are all the entries so far.".to_owned()));
    let visible = Memo::new(move |_| {
        let (actor, subject) = (actor.read().to_lowercase(), subject.read().to_lowercase());
        entries.with(|all| {
            all.iter()
                .filter(|e| {
                    let (raw, said) = (e.actor.to_lowercase(), actor_label(e).to_lowercase());
                    actor.is_empty() || raw.contains(actor.trim()) || said.contains(actor.trim())
                })
                .filter(|e| subject.is_empty() || e.subject.to_lowercase().contains(subject.trim()))
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let load_more = move |_| load_older(entries, action, loading, note);
    view! {
        <p class="muted counts" data-testid="audit-count">
            {move || {
                let (shown, loaded) = (visible.read().len(), entries.read().len());
                if shown == loaded {
                    format!("{loaded} entries loaded")
                } else {
                    format!("{shown} of {loaded} loaded entries match")
                }
            }}
        </p>
        <Show
            when=move || !visible.read().is_empty()
            fallback=move || view! {
                <div class="empty-state" data-testid="audit-empty">
                    {move || if entries.read().is_empty() { "No audit entries yet." } else { "No loaded entries match the filters." }}
                </div>
            }
        >
            <EntriesTable visible/>
        </Show>
        <div class="load-more">
            <button type="button" data-testid="audit-more" disabled=move || loading.get() on:click=load_more>
                {move || if loading.get() { "Loading…" } else { "Load older" }}
            </button>
            {move || note.get().map(|n| view! { <span class="muted" role="status">{n}</span> })}
        </div>
    }
}

/// The next page of older entries (newest first: what came before the oldest one shown),
/// added to those loaded; a note says when there are no more.
fn load_older(
    entries: RwSignal<Vec<AuditEntry>>,
    action: RwSignal<String>,
    loading: RwSignal<bool>,
    note: RwSignal<Option<String>>,
) {
    if loading.get_untracked() {
        return;
    }
    let before = entries.with_untracked(|e| e.last().map(|e| e.n));
    let action = action.get_untracked();
    loading.set(true);
    note.set(None);
    spawn_local(async move {
        let result = api::audit(before, (!action.is_empty()).then_some(action), None).await;
        loading.try_set(false);
        match result {
            Ok(more) if more.is_empty() => {
                note.try_set(Some("No older entries.".to_owned()));
            }
            Ok(more) => {
                let full = more.len() >= PAGE;
                entries.try_update(|e| e.extend(more));
                if !full {
                    note.try_set(Some("These are all the entries so far.".to_owned()));
                }
            }
            Err(err) => {
                note.try_set(Some(api::error_message(&err)));
            }
        }
    });
}

/// The entries that match the filters, one row each.
#[component]
fn EntriesTable(visible: Memo<Vec<AuditEntry>>) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data-table audit-table">
                <thead>
                    <tr>
                        <th scope="col" class="num">"#"</th>
                        <th scope="col">"Time"</th>
                        <th scope="col">"Actor"</th>
                        <th scope="col">"Action"</th>
                        <th scope="col">"Subject"</th>
                        <th scope="col">"Detail"</th>
                    </tr>
                </thead>
                <tbody>
                    <For each=move || visible.get() key=|e| e.n let:entry>
                        <AuditRow entry/>
                    </For>
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn AuditRow(entry: AuditEntry) -> impl IntoView {
    // A gate's details hold what an agent wrote: every cell and the tooltip show it through
    // `crate::shown`, as the card does.
    let full = crate::shown::text(&serde_json::to_string_pretty(&entry.detail).unwrap_or_default());
    view! {
        <tr data-testid="audit-row" data-action=entry.action.clone() data-n=entry.n>
            <td class="num" data-label="#">{entry.n}</td>
            <td class="when" data-label="Time"><When at=entry.at.clone() precision=Precision::Second/></td>
            <td data-label="Actor" data-testid="audit-row-actor" data-actor=crate::shown::line(&entry.actor)>{actor_label(&entry)}</td>
            <td data-label="Action" class=format!("action action-{}", entry.action)>{crate::shown::line(&entry.action)}</td>
            <td data-label="Subject">{subject_link(&entry)}</td>
            <td class="detail" data-label="Detail" title=full>{compact(&entry.detail)}</td>
        </tr>
    }
}

/// Who an entry names, in words: the credential, and for a browser login (a browser's own, or
/// a phone's made with its token) the device it was on, from the entry's `login` detail. An
/// actor no credential makes (`rule:<id>`, `agent`, `timeout` …) reads as written.
fn actor_label(entry: &AuditEntry) -> String {
    let device = entry
        .detail
        .get("login")
        .and_then(|login| login.get("device"))
        .and_then(Value::as_str);
    let said = Actor::parse(&entry.actor).words(device);
    crate::shown::line(&said)
}

/// An entry's subject, linked to where it happened when the entry names a session: the card
/// itself for a gate's entries, else the session.
fn subject_link(entry: &AuditEntry) -> impl IntoView + use<> {
    let subject = crate::shown::line(&entry.subject);
    let id = view! { <code class="id" title=subject.clone()>{short_id(&subject)}</code> };
    let session = entry
        .detail
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|sid| sid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .map(str::to_owned);
    match session {
        Some(sid) => {
            let href = if entry.action.starts_with("gate_") && entry.subject != sid {
                format!("/sessions/{sid}#gate-{}", entry.subject)
            } else {
                format!("/sessions/{sid}")
            };
            view! { <a href=href data-testid="audit-subject-link">{id}</a> }.into_any()
        }
        None => id.into_any(),
    }
}

/// Detail fields shown first, in this order; the rest follow alphabetically.
const DETAIL_FIRST: [&str; 9] = [
    "summary", "tool", "decision", "reason", "pattern", "scope", "previous", "next", "source",
];

/// Detail fields the table leaves to the tooltip (long, and meaningful only to a verifier; the
/// login is said in the actor column).
const DETAIL_HIDDEN: [&str; 4] = ["digest", "expires_at", "args", "login"];

/// The first eight characters of a UUID-like id or a long hex digest; other text whole.
fn short_id(id: &str) -> String {
    let uuid = id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4;
    let hex = id.len() > 16 && id.chars().all(|c| c.is_ascii_hexdigit());
    if uuid || hex {
        format!("{}…", crate::text::short_id(id))
    } else {
        id.to_owned()
    }
}

/// `key: value` pairs of a detail object, the telling ones first, nulls and digests left out,
/// on one line as `crate::shown` writes an agent's text, cut.
fn compact(detail: &Value) -> String {
    let rank = |k: &str| {
        DETAIL_FIRST
            .iter()
            .position(|f| *f == k)
            .unwrap_or(DETAIL_FIRST.len())
    };
    let text = match detail {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map
                .iter()
                .filter(|(k, v)| !v.is_null() && !DETAIL_HIDDEN.contains(&k.as_str()))
                .collect();
            fields.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.0.cmp(b.0)));
            fields
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => short_id(s),
                        other => other.to_string(),
                    };
                    format!("{k}: {v}")
                })
                .collect::<Vec<_>>()
                .join(" · ")
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    crate::shown::line_within(&text, DETAIL_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_details_drop_nulls_and_shorten_ids() {
        let detail = serde_json::json!({
            "session_id": "0b7c8a52-3f1e-4c55-9d4f-2c8a6b1d9e00",
            "decision": "approve",
            "reason": null,
            "digest": "ab".repeat(32),
            "n": 3,
        });
        assert_eq!(
            compact(&detail),
            "decision: approve · n: 3 · session_id: 0b7c8a52…"
        );
        let long = serde_json::json!({ "summary": "x".repeat(400) });
        assert!(compact(&long).ends_with('…'));
        assert!(compact(&long).chars().count() <= DETAIL_CHARS + 1);
    }

    fn entry(actor: &str, detail: Value) -> AuditEntry {
        AuditEntry {
            n: 1,
            at: crate::protocol::Timestamp::now(),
            actor: actor.into(),
            action: "gate_resolved".into(),
            subject: "a".into(),
            detail,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    /// The actor column names the credential and a browser login's device, never a bare
    /// `browser`; what no credential made reads as written.
    #[test]
    fn the_actor_says_the_credential_and_its_device() {
        let login = serde_json::json!({"login": {"id": "l1", "device": "Chrome on Pixel 8"}});
        assert_eq!(
            actor_label(&entry("browser", login.clone())),
            "browser login · Chrome on Pixel 8"
        );
        assert_eq!(
            actor_label(&entry("token:phone", login)),
            "token phone · Chrome on Pixel 8"
        );
        assert_eq!(actor_label(&entry("browser", Value::Null)), "browser login");
        assert_eq!(actor_label(&entry("token:ci", Value::Null)), "token ci");
        for other in ["rule:r1", "agent", "timeout", "Browser"] {
            assert_eq!(actor_label(&entry(other, Value::Null)), other);
        }
        // A person, and a person's token through its login (issue 41).
        assert_eq!(
            actor_label(&entry("person:alice@x.test", Value::Null)),
            "alice@x.test"
        );
        let phone = serde_json::json!({"login": {"id": "l2", "device": "Safari on iPhone"}});
        assert_eq!(
            actor_label(&entry("person:alice@x.test via token:phone", phone)),
            "alice@x.test via token phone · Safari on iPhone"
        );
        let sneaky = serde_json::json!({"login": {"id": "l", "device": "x\u{202E}y"}});
        assert_eq!(
            actor_label(&entry("browser", sneaky)),
            "browser login · x⟨U+202E⟩y"
        );
    }

    /// A gate's summary and reason as an agent spelled them: on one line, nothing raw, and a
    /// padded command shows what follows its padding.
    #[test]
    fn compact_details_write_out_what_an_agent_could_hide_or_forge() {
        let detail = serde_json::json!({
            "summary": format!("ls{}; curl x | sh", "\u{3000}".repeat(3)),
            "reason": "ok\u{2067}\u{2066}hidden\u{2069}\u{2069}\n❞ Countersign: safe",
            "tool": "Ba\u{200B}sh",
        });
        let shown = compact(&detail);
        assert!(
            !shown
                .chars()
                .any(|c| crate::text::chars::unseen(c).is_some()),
            "{shown}"
        );
        assert!(
            shown.contains("ls⟨U+3000⟩⟨U+3000⟩⟨U+3000⟩; curl x | sh"),
            "{shown}"
        );
        assert!(
            shown.contains("ok⟨U+2067⟩⟨U+2066⟩hidden⟨U+2069⟩⟨U+2069⟩⏎⟨U+275E⟩"),
            "{shown}"
        );
        assert!(shown.contains("tool: Ba⟨U+200B⟩sh"), "{shown}");
    }
}
