//! One tool call in the transcript, as one row: the card it was put to (if it was), then what
//! ran — what it does, whether it runs (and for how long), and its result, collapsed to one
//! line unless it failed. The call is told once: the card's line says who answered, the line
//! below it what ran (the edited call, marked once, the proposal a click away).

use leptos::prelude::*;

use crate::protocol::{Timestamp, ToolClass, ToolStatus, Verdict};
use crate::ui::card::ApprovalCard;
use crate::ui::card::edited::EditedMarker;
use crate::ui::transcript::{ToolItem, outcome_line, summary};

/// The class's one spelling, as a CSS class suffix.
fn class_name(class: ToolClass) -> &'static str {
    class.as_str()
}

/// Seconds since `started_at`, once the browser clock is ticking (`now_ms > 0`).
fn elapsed(started_at: &Timestamp, now_ms: f64) -> Option<u64> {
    if now_ms <= 0.0 {
        return None;
    }
    let start = started_at.unix_ms()? as f64;
    Some(((now_ms - start).max(0.0) / 1000.0) as u64)
}

/// The call's row: its card(s), then what ran — nothing below a card still waiting, since
/// nothing has run.
#[component]
pub fn ToolCard(item: ToolItem, now_ms: RwSignal<f64>) -> impl IntoView {
    let waiting = item.waiting_card().is_some();
    let call_id = item.call_id.clone();
    let cards = item
        .cards
        .iter()
        .cloned()
        .map(|gate| view! { <ApprovalCard item=gate now_ms in_row=true/> })
        .collect_view();
    let ran = (!waiting).then(|| view! { <WhatRan item now_ms/> });
    view! {
        <div class="call-row" data-testid="call-row" data-call-id=call_id>
            {cards}
            {ran}
        </div>
    }
}

/// What ran and its result (or that it runs, or waits to).
#[component]
fn WhatRan(item: ToolItem, now_ms: RwSignal<f64>) -> impl IntoView {
    let title = crate::shown::text(&summary(&item.tool, &item.args));
    let class = class_name(item.class);
    let edited_chip = item
        .edited
        .is_some()
        .then(|| view! { <span class="edited-chip" data-testid="edited-chip">"edited"</span> });
    match item.result.clone() {
        Some((status, output)) => view! { <FinishedRow item title status output/> }.into_any(),
        None => {
            let started = item.started_at.clone();
            // Asked, with no card on the page to say so (its page not loaded).
            let awaiting =
                item.verdict == Verdict::Ask && started.is_none() && item.cards.is_empty();
            let state = if started.is_some() {
                "running"
            } else if awaiting {
                "awaiting"
            } else {
                "pending"
            };
            let clock = move || match started.as_ref() {
                Some(at) => match elapsed(at, now_ms.get()) {
                    Some(secs) => format!("running · {secs}s"),
                    None => "running…".to_owned(),
                },
                None if awaiting => "awaiting approval".to_owned(),
                None => "waiting…".to_owned(),
            };
            view! {
                <div class=format!("tool tool-{class} status-{state}") data-testid="tool-result" data-status=state data-call-id=item.call_id>
                    <span class="spinner" aria-hidden="true"></span>
                    <span class="tool-title">{title}</span>
                    {edited_chip}
                    <span class="tool-status">{clock}</span>
                </div>
            }
            .into_any()
        }
    }
}

/// A call that has its result: what it printed (open when it failed), the rule that let it
/// run, and for an edited call what the agent proposed.
#[component]
fn FinishedRow(item: ToolItem, title: String, status: ToolStatus, output: String) -> impl IntoView {
    let class = class_name(item.class);
    let args = crate::shown::text(&serde_json::to_string_pretty(&item.args).unwrap_or_default());
    let edited_chip = item
        .edited
        .is_some()
        .then(|| view! { <span class="edited-chip" data-testid="edited-chip">"edited"</span> });
    let edit_details = item
        .edited
        .clone()
        .map(|edit| edit_details(*edit, &item.tool, &item.args));
    let by_rule = item.rule_pattern.clone().map(|pattern| {
        view! {
            <span class="rule-chip" data-testid="allowed-by-rule">
                "allowed by rule " <code>{crate::shown::text(&pattern)}</code>
            </span>
        }
    });
    // A denial's reason is on the card above; the row only says it did not run.
    let failed = !matches!(status, ToolStatus::Ok | ToolStatus::Denied);
    let line = match status {
        ToolStatus::Denied => "denied, not run".to_owned(),
        _ => outcome_line(&output),
    };
    // What a tool printed is the world's text, and the agent's to shape: shown.
    let output = crate::shown::text(&output);
    view! {
        <details class=format!("tool tool-{class} status-{}", status.as_str())
            data-testid="tool-result" data-status=status.as_str() data-call-id=item.call_id open=failed>
            <summary>
                <span class="tool-title">{title}</span>
                {edited_chip}
                {by_rule}
                <span class="tool-outcome">{format!(" → {line}")}</span>
                <span class="tool-status">{status.as_str()}</span>
            </summary>
            <pre class="tool-output">{output}</pre>
            {edit_details}
            <details class="tool-args"><summary>"arguments"</summary><pre data-testid="tool-args">{args}</pre></details>
        </details>
    }
}

/// An edited call: the row shows the edited arguments (`item.args`), says who edited them,
/// and keeps the proposal one click away.
fn edit_details(
    edit: crate::ui::transcript::EditedCall,
    tool: &str,
    args: &serde_json::Value,
) -> impl IntoView + use<> {
    let unchanged = edit.proposed == *args;
    let proposed =
        crate::shown::text(&serde_json::to_string_pretty(&edit.proposed).unwrap_or_default());
    let proposed_line = crate::shown::text(&summary(tool, &edit.proposed));
    view! {
        <div class="tool-edit" data-testid="tool-edited">
            <EditedMarker resolution=edit.resolution unchanged/>
            <p class="tool-proposed muted" data-testid="tool-proposed">"proposed: " <code>{proposed_line}</code></p>
            <details class="tool-args"><summary>"as the agent proposed it"</summary>
                <pre data-testid="tool-proposed-args">{proposed}</pre>
            </details>
        </div>
    }
}
