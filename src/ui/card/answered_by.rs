//! Who answered a card, in a person's words and from where the card is read: "by you, in this
//! tab", "by you, in another tab", "by you, on Chrome on Pixel 8 (token phone)", "by rule".
//! "You" is said only of a person's answer through a credential (a browser login or a token),
//! never of a rule, the timeout, the mode or an outside agent; which tab and which browser
//! come from the resolution's `client_id` and `login` (the server writes the login from the
//! credential, so a body cannot claim another browser's).

use crate::protocol::{
    Actor, AnsweredBy, ApprovalRequestBody, Decision, LoginRef, Resolution, TimeoutOutcome, Via,
};

/// Where a card is read: this tab's id and this browser's login id (`Resolution::login`'s).
/// Either is empty where it is not known: the server's render has no tab, a page without the
/// server's `data-login` has no login.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reader<'a> {
    pub tab: &'a str,
    pub login: &'a str,
}

/// Who answered, for the card and the "Edited by" line: `by you, in this tab`, `by rule` …
pub fn answered_by(resolution: &Resolution, reader: Reader<'_>) -> String {
    // A routed card several people approved: each of them, by name.
    if !resolution.approved_by.is_empty() {
        return crate::protocol::by_each(&resolution.approved_by);
    }
    let actor = Actor::parse(&resolution.actor);
    match resolution.answered_by {
        AnsweredBy::User => by_a_person(resolution, actor, reader),
        AnsweredBy::Rule => "by rule".to_owned(),
        AnsweredBy::Timeout => "by the timeout".to_owned(),
        // An outside gate the mode answered at once (yolo, auto_edit for edits, reads).
        AnsweredBy::System if actor == Actor::Other("mode") => "by mode".to_owned(),
        AnsweredBy::System => "by the server".to_owned(),
        AnsweredBy::Reviewer => "by the reviewer".to_owned(),
    }
}

/// A person's answer: through which credential, and where from.
fn by_a_person(resolution: &Resolution, actor: Actor<'_>, reader: Reader<'_>) -> String {
    let token = match actor {
        Actor::Browser => None,
        Actor::Token(name) => Some(name),
        // Whoever reads the ntfy topic: not necessarily the person reading this.
        Actor::Ntfy => return "from an ntfy notification".to_owned(),
        Actor::Person { email, via } => return by_someone_named(resolution, email, via, reader),
        // Not a credential's spelling (an event from before actors existed, or a misspelling):
        // never "you".
        Actor::Other(_) => return by_someone(resolution),
    };
    match (&resolution.login, token) {
        (Some(login), _) => through_a_login(resolution, login, token, reader),
        (None, Some(name)) => with_token(name),
        (None, None) => by_a_browser_before_logins(resolution, reader),
    }
}

/// An answer through a browser login: this one (which tab), or another (which device).
fn through_a_login(
    resolution: &Resolution,
    login: &LoginRef,
    token: Option<&str>,
    reader: Reader<'_>,
) -> String {
    let notification = resolution.via == Some(Via::Push);
    if !reader.login.is_empty() && login.id == reader.login {
        let tab = resolution.client_id.as_deref().unwrap_or("");
        return match () {
            _ if notification => "by you, from a notification",
            _ if reader.tab.is_empty() || tab.is_empty() => "by you, in this browser",
            _ if tab == reader.tab => "by you, in this tab",
            _ => "by you, in another tab",
        }
        .to_owned();
    }
    let place = match (notification, login.device.as_str()) {
        (true, "") => "from a notification in another browser".to_owned(),
        (true, device) => format!("from a notification on {device}"),
        (false, "") => "in another browser".to_owned(),
        (false, device) => format!("on {device}"),
    };
    match token {
        Some(name) => format!("by you, {place} (token {name})"),
        None => format!("by you, {place}"),
    }
}

/// A signed-in person's answer (issue 41), or through a token they made: "you" only in the
/// very login that answered; anyone else reads the person's email and where it came from.
fn by_someone_named(
    resolution: &Resolution,
    email: &str,
    via: Option<&str>,
    reader: Reader<'_>,
) -> String {
    let login = resolution.login.as_ref();
    if let Some(login) = login.filter(|l| !reader.login.is_empty() && l.id == reader.login) {
        return through_a_login(resolution, login, via, reader);
    }
    let device = login.map(|l| l.device.as_str()).filter(|d| !d.is_empty());
    match (device, via) {
        (Some(device), Some(name)) => format!("by {email}, on {device} (token {name})"),
        (Some(device), None) => format!("by {email}, on {device}"),
        (None, Some(name)) => format!("by {email}, with token {name}"),
        (None, None) => format!("by {email}"),
    }
}

/// A token presented as a bearer: the API, a script, the CLI (the names the server gives the
/// local CLI's credential and the startup token, `server::principal`).
fn with_token(name: &str) -> String {
    match name {
        "cli" => "by you, with the CLI".to_owned(),
        "admin" => "by you, with the admin token".to_owned(),
        name => format!("by you, with token {name}"),
    }
}

/// `browser` in an event written before answers named their login: this tab if its id says
/// so, otherwise no telling which browser.
fn by_a_browser_before_logins(resolution: &Resolution, reader: Reader<'_>) -> String {
    match resolution.client_id.as_deref() {
        Some(id) if !reader.tab.is_empty() && id == reader.tab => "by you, in this tab",
        _ if reader.tab.is_empty() => "by you, in a browser",
        _ => "by you, in another tab or device",
    }
    .to_owned()
}

/// A person's answer whose actor names no credential (events from before actors existed).
fn by_someone(resolution: &Resolution) -> String {
    match resolution.client_id.as_deref() {
        None => "by a person (API)",
        Some("cli") => "by a person (CLI)",
        Some(_) => "by a person",
    }
    .to_owned()
}

/// The outcome chip of a resolved card ("Approved by you, in this tab"); the time follows
/// it, in the browser's zone.
pub fn outcome_of(request: &ApprovalRequestBody, resolution: &Resolution, who: &str) -> String {
    if request.kind.is_outside_call() {
        return external_outcome(resolution, who);
    }
    if request.kind.is_budget_stop() {
        return match resolution.decision {
            Decision::Timeout => "Timed out — turn stopped".to_owned(),
            Decision::Cancelled => "Cancelled".to_owned(),
            d if d.lets_it_run() => format!("Continued {who}"),
            _ => format!("Stopped {who}"),
        };
    }
    match resolution.decision {
        Decision::Timeout => match request.timeout_outcome {
            TimeoutOutcome::ProceedUnapproved => "Timed out — proceeded unapproved".to_owned(),
            TimeoutOutcome::Deny => "Timed out — not run".to_owned(),
        },
        Decision::Cancelled => "Cancelled — not run".to_owned(),
        _ => answered(resolution, who),
    }
}

/// The outcome chip of an outside agent's card. Nothing runs here: the agent acts on the
/// answer, so the words say what it was told, and a cancel says why it stopped waiting.
pub fn external_outcome(resolution: &Resolution, who: &str) -> String {
    match resolution.decision {
        Decision::Timeout => "Expired — not answered in time".to_owned(),
        Decision::Cancelled => match resolution.reason.as_deref() {
            Some("answered_elsewhere") => "Cancelled — answered elsewhere".to_owned(),
            None => "Cancelled".to_owned(),
            Some(why) => format!("Cancelled — {}", why.replace('_', " ")),
        },
        _ => answered(resolution, who),
    }
}

/// An answer someone gave (not the timeout, not a cancel), with who gave it.
fn answered(resolution: &Resolution, who: &str) -> String {
    match resolution.decision {
        Decision::Edit => format!("Approved (edited) {who}"),
        Decision::AllowAlways => format!("Always allowed {who}"),
        Decision::Deny => match &resolution.reason {
            Some(reason) => format!("Denied {who} — {reason}"),
            None => format!("Denied {who}"),
        },
        _ => format!("Approved {who}"),
    }
}

/// This browser's login id, as the server wrote it into `<body data-login>` (on the server:
/// from the request's credential), so a card can tell this browser's answers from another's.
pub fn reader_login() -> String {
    #[cfg(feature = "ssr")]
    {
        use crate::server::principal::Principal;
        leptos::prelude::use_context::<http::request::Parts>()
            .and_then(|parts| {
                let who = parts.extensions.get::<Principal>()?;
                who.login().map(|login| login.id.clone())
            })
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        thread_local! {
            static LOGIN: String = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.body())
                .and_then(|b| b.get_attribute("data-login"))
                .unwrap_or_default();
        }
        LOGIN.with(String::clone)
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{GateKind, Timestamp};

    const PHONE: &str = "login-phone";
    const DESK: &str = "login-desk";

    fn by(actor: &str, answered_by: AnsweredBy) -> Resolution {
        Resolution::plain(
            &"a".into(),
            Decision::Approve,
            answered_by,
            actor,
            Timestamp::now(),
        )
    }

    /// A person's answer through `login` (with its device) from the tab `tab`.
    fn from(actor: &str, login: &str, device: &str, tab: Option<&str>) -> Resolution {
        let mut r = by(actor, AnsweredBy::User);
        r.login = Some(LoginRef {
            id: login.into(),
            device: device.into(),
        });
        r.client_id = tab.map(str::to_owned);
        r
    }

    fn reader<'a>(tab: &'a str, login: &'a str) -> Reader<'a> {
        Reader { tab, login }
    }

    #[test]
    fn this_browser_says_which_tab() {
        let r = from("browser", DESK, "Firefox on Linux", Some("tab-1"));
        assert_eq!(
            answered_by(&r, reader("tab-1", DESK)),
            "by you, in this tab"
        );
        assert_eq!(
            answered_by(&r, reader("tab-2", DESK)),
            "by you, in another tab"
        );
        // The server's render knows the browser, not the tab; a form's answer has no tab.
        assert_eq!(answered_by(&r, reader("", DESK)), "by you, in this browser");
        let form = from("browser", DESK, "Firefox on Linux", None);
        assert_eq!(
            answered_by(&form, reader("tab-2", DESK)),
            "by you, in this browser"
        );
    }

    /// A person (or their token) is named by email to everyone but the login that answered.
    #[test]
    fn a_person_is_named_by_email_and_is_you_only_in_their_own_login() {
        let alice = from(
            "person:alice@x.test",
            PHONE,
            "Chrome on Pixel 8",
            Some("tab-9"),
        );
        assert_eq!(
            answered_by(&alice, reader("tab-1", DESK)),
            "by alice@x.test, on Chrome on Pixel 8"
        );
        assert_eq!(
            answered_by(&alice, reader("tab-9", PHONE)),
            "by you, in this tab"
        );
        let wall = by("person:alice@x.test via token:ci", AnsweredBy::User);
        assert_eq!(
            answered_by(&wall, reader("tab-1", DESK)),
            "by alice@x.test, with token ci"
        );
        let phone = from(
            "person:bob@x.test via token:phone",
            PHONE,
            "Safari on iPhone",
            None,
        );
        assert_eq!(
            answered_by(&phone, reader("", DESK)),
            "by bob@x.test, on Safari on iPhone (token phone)"
        );
    }

    #[test]
    fn another_browser_says_its_device_and_token() {
        let phone = from("token:phone", PHONE, "Chrome on Pixel 8", Some("tab-9"));
        assert_eq!(
            answered_by(&phone, reader("tab-1", DESK)),
            "by you, on Chrome on Pixel 8 (token phone)"
        );
        // The phone itself, in the tab that answered and in another.
        assert_eq!(
            answered_by(&phone, reader("tab-9", PHONE)),
            "by you, in this tab"
        );
        assert_eq!(
            answered_by(&phone, reader("tab-8", PHONE)),
            "by you, in another tab"
        );
        let laptop = from("browser", "login-laptop", "Safari on macOS", Some("tab-1"));
        assert_eq!(
            answered_by(&laptop, reader("tab-1", DESK)),
            "by you, on Safari on macOS",
            "another login's tab with the same id is not this tab"
        );
        let old_login = from("token:phone", PHONE, "", None);
        assert_eq!(
            answered_by(&old_login, reader("tab-1", DESK)),
            "by you, in another browser (token phone)"
        );
        // Where this browser's login is not known, no answer is this browser's.
        assert_eq!(
            answered_by(&phone, reader("tab-9", "")),
            "by you, on Chrome on Pixel 8 (token phone)"
        );
    }

    #[test]
    fn a_notification_says_so() {
        let mut push = from("token:phone", PHONE, "Chrome on Pixel 8", None);
        push.via = Some(Via::Push);
        assert_eq!(
            answered_by(&push, reader("tab-1", DESK)),
            "by you, from a notification on Chrome on Pixel 8 (token phone)"
        );
        assert_eq!(
            answered_by(&push, reader("tab-1", PHONE)),
            "by you, from a notification"
        );
    }

    /// A bearer's answer names its token; a token that copied this tab's id is still the token.
    #[test]
    fn a_bearer_is_named_by_its_token() {
        let mut api = by("token:ci", AnsweredBy::User);
        api.client_id = Some("tab-1".into());
        assert_eq!(
            answered_by(&api, reader("tab-1", DESK)),
            "by you, with token ci"
        );
        assert_eq!(
            answered_by(&by("token:cli", AnsweredBy::User), reader("tab-1", DESK)),
            "by you, with the CLI"
        );
        assert_eq!(
            answered_by(&by("token:admin", AnsweredBy::User), reader("", "")),
            "by you, with the admin token"
        );
    }

    /// Events written before answers named their login, and actors that are no credential.
    #[test]
    fn older_events_and_other_actors() {
        let mut old = by("browser", AnsweredBy::User);
        old.client_id = Some("tab-1".into());
        assert_eq!(
            answered_by(&old, reader("tab-1", DESK)),
            "by you, in this tab"
        );
        assert_eq!(
            answered_by(&old, reader("tab-2", DESK)),
            "by you, in another tab or device"
        );
        assert_eq!(answered_by(&old, reader("", DESK)), "by you, in a browser");
        // Not a credential's spelling: never "you", never a token.
        for actor in ["Browser", "token:", "user:tab-1"] {
            let mut r = by(actor, AnsweredBy::User);
            r.client_id = Some("tab-1".into());
            assert_eq!(
                answered_by(&r, reader("tab-1", DESK)),
                "by a person",
                "{actor}"
            );
        }
        assert_eq!(
            answered_by(&by("token:", AnsweredBy::User), reader("tab-1", DESK)),
            "by a person (API)"
        );
        assert_eq!(
            answered_by(&by("ntfy", AnsweredBy::User), reader("tab-1", DESK)),
            "from an ntfy notification"
        );
    }

    /// Nothing a person did not answer says "you", whatever its actor or login.
    #[test]
    fn never_you_for_what_no_person_answered() {
        let cases = [
            (by("rule:r1", AnsweredBy::Rule), "by rule"),
            (by("timeout", AnsweredBy::Timeout), "by the timeout"),
            (by("mode", AnsweredBy::System), "by mode"),
            (by("token:x", AnsweredBy::System), "by the server"),
            (by("cancel", AnsweredBy::System), "by the server"),
        ];
        for (mut r, want) in cases {
            r.login = Some(LoginRef {
                id: DESK.into(),
                device: "Firefox on Linux".into(),
            });
            r.client_id = Some("tab-1".into());
            let said = answered_by(&r, reader("tab-1", DESK));
            assert_eq!(said, want);
            assert!(!said.contains("you"), "{said}");
        }
    }

    fn request(kind: GateKind) -> ApprovalRequestBody {
        let mut request: ApprovalRequestBody = serde_json::from_value(serde_json::json!({
            "approval_id": "a", "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "shell", "class": "exec", "args": {}, "title": "Shell", "summary": "s",
            "proposal_md": "", "proposal_html": "", "reason": "mode", "reason_detail": "",
            "allowed_decisions": ["approve"], "digest": "d", "timeout_outcome": "deny",
            "created_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T00:30:00.000Z"
        }))
        .unwrap();
        request.kind = kind;
        request
    }

    #[test]
    fn the_outcome_says_what_and_who() {
        let tool = request(GateKind::Tool);
        let mut r = from("browser", DESK, "Firefox on Linux", Some("tab-1"));
        let who = answered_by(&r, reader("tab-1", DESK));
        assert_eq!(outcome_of(&tool, &r, &who), "Approved by you, in this tab");
        r.decision = Decision::Edit;
        assert_eq!(
            outcome_of(&tool, &r, &who),
            "Approved (edited) by you, in this tab"
        );
        r.decision = Decision::Deny;
        r.reason = Some("use b.txt".into());
        assert_eq!(
            outcome_of(&tool, &r, &who),
            "Denied by you, in this tab — use b.txt"
        );
        let timeout = by("timeout", AnsweredBy::Timeout);
        let timeout = Resolution {
            decision: Decision::Timeout,
            ..timeout
        };
        assert_eq!(
            outcome_of(&tool, &timeout, "by the timeout"),
            "Timed out — not run"
        );
        let mut cancelled = by("cancel", AnsweredBy::System);
        cancelled.decision = Decision::Cancelled;
        cancelled.reason = Some("answered_elsewhere".into());
        assert_eq!(
            outcome_of(&request(GateKind::External), &cancelled, "by the server"),
            "Cancelled — answered elsewhere"
        );
    }
}
