//! The parts every card is made of, pending or resolved: its kind and badge, its title, who
//! answered and how that reads, the countdown, and the body (what will happen, the diff, the
//! agent's words, the arguments).

use leptos::prelude::*;

use super::answered_by::{Reader, answered_by, outcome_of, reader_login};
use super::diff::Diff;
use super::sensitive::{self, FloorCall};
use crate::protocol::{
    ApprovalRequestBody, Decision, DecisionKind, GateKind, Resolution, TimeoutOutcome, Timestamp,
};
use crate::shown::{self, secrets};
use crate::text::has_hidden;
use crate::ui::when::Precision;

/// Which page a card is on, so a form's answer goes back there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CardPlace {
    #[default]
    Session,
    Inbox,
}

impl CardPlace {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            CardPlace::Session => "session",
            CardPlace::Inbox => "inbox",
        }
    }
}

/// The card's badge: the kind of thing asked. An outside agent's card names its own tool
/// (`Bash`, `Edit`, `apply_patch`), since that is how the person knows the call.
pub(super) fn badge(request: &ApprovalRequestBody) -> String {
    match (&request.kind, &request.decision_kind) {
        // `other` is no kind a person would name: the card says only that it is a decision.
        (GateKind::Decision, Some(DecisionKind::Other)) => "Decision".to_owned(),
        (GateKind::Decision, Some(k)) => format!("Decision: {}", k.label()),
        _ if request.is_outside_question() => "Decision".to_owned(),
        (GateKind::External, _) => request.tool.clone(),
        _ => request.title.clone(),
    }
}

/// An outside agent's own title for its card, when it says more than the badge and the
/// summary already do.
pub(super) fn external_title(request: &ApprovalRequestBody) -> Option<String> {
    (request.kind.is_outside_call()
        && request.title != request.tool
        && request.title != request.summary)
        .then(|| request.title.clone())
}

/// Who answered, in words, from this tab and this browser's login: `by you, in this tab`,
/// `by you, on Chrome on Pixel 8 (token phone)`, `by rule` (`answered_by`).
pub fn who_answered(resolution: &Resolution, my_client: &str) -> String {
    let login = reader_login();
    answered_by(
        resolution,
        Reader {
            tab: my_client,
            login: &login,
        },
    )
}

/// Whether the outcome is an answer given at a moment worth showing (a person's or a rule's),
/// rather than the timeout or a cancel.
pub(super) fn answered_at_a_time(resolution: &Resolution) -> bool {
    !matches!(resolution.decision, Decision::Timeout | Decision::Cancelled)
}

/// The outcome chip of a resolved card ("Approved by you, in this tab"); the time follows
/// it, in the browser's zone.
pub fn outcome_text(
    request: &ApprovalRequestBody,
    resolution: &Resolution,
    my_client: &str,
) -> String {
    outcome_of(request, resolution, &who_answered(resolution, my_client))
}

/// What happens when the card's time runs out, as the countdown's verb.
pub(super) fn at_zero(request: &ApprovalRequestBody) -> &'static str {
    if request.kind.is_budget_stop() {
        return "stops";
    }
    match request.timeout_outcome {
        TimeoutOutcome::ProceedUnapproved => "proceeds unapproved",
        TimeoutOutcome::Deny => "denies",
    }
}

/// The countdown in words: "denies in 4:32". Before the browser clock runs (the server's
/// render, or no JavaScript) it names the moment instead: "denies at 12:33 UTC".
pub(super) fn countdown(verb: &str, expires_at: &Timestamp, now_ms: f64) -> (String, &'static str) {
    if now_ms <= 0.0 {
        let at = crate::ui::when::utc_text(expires_at, Precision::Clock);
        return (format!("{verb} at {at}"), "");
    }
    // An unreadable deadline shows as expired, as the server treats it.
    let left = expires_at.ms_left(now_ms as i64) / 1000;
    if left == 0 {
        return ("expired".to_owned(), "expired");
    }
    let text = if left >= 3600 {
        format!(
            "{verb} in {}:{:02}:{:02}",
            left / 3600,
            (left % 3600) / 60,
            left % 60
        )
    } else {
        format!("{verb} in {}:{:02}", left / 60, left % 60)
    };
    let level = if left < 60 {
        "urgent"
    } else if left < 300 {
        "soon"
    } else {
        ""
    };
    (text, level)
}

/// The recommendation of a standing rule after three hand approvals: the tool and pattern
/// are the agent's, written out on one line (`shown::line`).
pub(super) fn rule_hint_text(rule: &crate::protocol::RuleSuggestion) -> String {
    format!(
        "You approved {} · {} {} times in this session — Always allow it?",
        shown::line(&rule.tool),
        shown::line(&rule.pattern),
        rule.approved_before
    )
}

/// Whether anything the card shows holds a character a reader cannot see (or one that
/// reorders what they see): the card says so, and shows each as `⟨U+…⟩`. The proposal is
/// read as rendered too (`shown::shows_hidden`): its markdown may only name one (`&#x202E;`).
pub(super) fn holds_hidden(request: &ApprovalRequestBody) -> bool {
    let args = serde_json::to_string(&request.args).unwrap_or_default();
    shown::shows_hidden(&request.proposal_html)
        || [
            request.summary.as_str(),
            request.title.as_str(),
            request.tool.as_str(),
            request.reason_detail.as_str(),
            request.proposal_md.as_str(),
            request.agent_says.as_deref().unwrap_or(""),
            request.cwd.as_deref().unwrap_or(""),
            request.diff.as_deref().unwrap_or(""),
            args.as_str(),
        ]
        .iter()
        .any(|text| has_hidden(text))
        || has_hidden(&request.args.to_string())
}

/// The agent's own words about the call, labelled as its claim: they say what it means to
/// do, the arguments below say what will run. A block of their own under the label, never
/// inside quotation marks the page opened (`shown::words` writes out any quote-like or hidden
/// character in them), so nothing in them can read as the page speaking.
pub(super) fn agent_says(request: &ApprovalRequestBody) -> Option<impl IntoView + use<>> {
    let words = shown::words(request.agent_says.as_deref()?)?;
    Some(view! {
        <figure class="card-agent-says" data-testid="agent-says">
            <figcaption class="card-agent-says-label">"The agent says:"</figcaption>
            " "
            <p class="card-agent-says-words" data-testid="agent-says-words">{words}</p>
        </figure>
    })
}

/// Where an outside agent's call runs: the same command means another thing in another
/// folder (`git clean -fdx`), so the card says which, beside the arguments.
fn runs_in(request: &ApprovalRequestBody) -> Option<impl IntoView + use<>> {
    let folder = shown::text(request.cwd.as_deref()?);
    Some(view! {
        <p class="card-runs-in" data-testid="card-runs-in">
            "Runs in " <code>{folder}</code>
        </p>
    })
}

/// The card's details, shared by the pending and the resolved form. `edit`: the answer that
/// edited the call — the card then shows what ran first, and the proposal folded below it.
#[component]
pub(super) fn CardBody(
    request: ApprovalRequestBody,
    #[prop(default = None)] edit: Option<Resolution>,
) -> impl IntoView {
    if let Some(edits) = edit.and_then(|r| r.edits) {
        return view! { <EditedBody request edits/> }.into_any();
    }
    // An outside agent's call has no diff to read unless it edits a file: its input is what
    // there is to read, so it shows unfolded.
    let open_args = request.kind.is_outside_call() && request.diff.is_none();
    let hidden = holds_hidden(&request).then(|| {
        view! {
            <p class="card-hidden" role="alert" data-testid="card-hidden">
                "This card holds invisible or direction-changing characters, written out as ⟨U+…⟩ below: read it closely before you answer."
            </p>
        }
    });
    let floor = sensitive::is_floor(&request);
    // Values that look like secrets stay masked on a floor card until this card's reveal.
    let revealed = RwSignal::new(false);
    let args_shown = {
        let (args, masked) = (request.args.clone(), sensitive::shown_args(&request));
        move || match floor && !revealed.get() {
            true => pretty(&masked),
            false => pretty(&args),
        }
    };
    view! {
        {hidden}
        {agent_says(&request)}
        {why_line(&request)}
        {runs_in(&request)}
        {proposal_of(&request)}
        {floor.then(|| view! { <FloorCall request=request.clone() revealed/> })}
        {diff_of(&request, revealed)}
        // A budget card has no call to show: what ran out is in its proposal.
        {request.kind.has_call_to_show().then(|| view! {
            <details class="card-args" open=open_args>
                <summary>"Arguments"</summary>
                <pre data-testid="card-args">{args_shown}</pre>
            </details>
        })}
    }
    .into_any()
}

/// Why the card asks. On a floor card its sentence already says so; what matched (the path
/// and the floor's pattern) is a smaller detail under it.
fn why_line(request: &ApprovalRequestBody) -> impl IntoView + use<> {
    if sensitive::is_floor(request) {
        let detail = request
            .reason_detail
            .replacen(" — always asks, even in Yolo", "", 1);
        return view! {
            <p class="card-why card-floor-match" data-testid="card-floor-match">
                "On the safety floor: " {shown::text(&detail)}
            </p>
        }
        .into_any();
    }
    view! { <p class="card-why">"Why: " {shown::text(&request.reason_detail)}</p> }.into_any()
}

/// An answered card whose answer edited it: what ran (or the revised proposal the agent was
/// told), and what the agent proposed folded beneath.
#[component]
fn EditedBody(request: ApprovalRequestBody, edits: serde_json::Value) -> impl IntoView {
    let ran = match &edits {
        serde_json::Value::String(revised) => view! {
            <p class="card-ran-label">"Revised proposal (what the agent was told):"</p>
            <pre class="card-ran" data-testid="card-ran">{shown::text(revised)}</pre>
        }
        .into_any(),
        other => view! {
            <details class="card-args" open=true>
                <summary>"Arguments, as edited (what ran)"</summary>
                <pre data-testid="card-args">{pretty(other)}</pre>
            </details>
        }
        .into_any(),
    };
    view! {
        {agent_says(&request)}
        <p class="card-why">"Why: " {shown::text(&request.reason_detail)}</p>
        {runs_in(&request)}
        {ran}
        <details class="card-proposed" data-testid="card-proposed">
            <summary>"As the agent proposed it"</summary>
            {proposal_of(&request)}
            {diff_of(&request, RwSignal::new(true))}
            <pre data-testid="card-proposed-args">{pretty(&request.args)}</pre>
        </details>
    }
}

/// JSON laid out to be read, through `shown`.
fn pretty(value: &serde_json::Value) -> String {
    shown::text(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// The proposal, as its sanitized HTML, if the card has one.
fn proposal_of(request: &ApprovalRequestBody) -> Option<impl IntoView + use<>> {
    (!request.proposal_html.is_empty()).then(|| {
        view! { <div class="proposal" data-testid="proposal" inner_html=request.proposal_html.clone()></div> }
    })
}

/// The diff of the file the call would change, if it has one; on a floor card, masked until
/// `revealed`.
fn diff_of(
    request: &ApprovalRequestBody,
    revealed: RwSignal<bool>,
) -> Option<impl IntoView + use<>> {
    let diff = request.diff.clone()?;
    let floor = sensitive::is_floor(request);
    Some(move || {
        let text = match floor && !revealed.get() {
            true => shown::text(&secrets::mask_diff(&diff)),
            false => shown::text(&diff),
        };
        view! { <Diff text/> }
    })
}
