//! Telling the person a gate needs them (`[notify]`): one webhook POST per gate that waits
//! for a person, with the card's URL, in a generic JSON, ntfy or Slack format.
//!
//! **Invariant 59** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): a notification never blocks a gate nor carries a credential.

pub mod reviewer;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol::{ApprovalId, ApprovalRequestBody, SessionId};
use crate::server::config::{Config, NotifyFormat};
use crate::server::retry::{self, Attempt};
use crate::shown;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends the notifications, and knows the address card links start with.
pub struct Notifier {
    http: Option<reqwest::Client>,
    listen_url: OnceLock<String>,
    /// Web Push to the person's subscribed devices (set once at startup).
    push: OnceLock<Arc<crate::server::push::Push>>,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier::new()
    }
}

/// One notification, ready to post.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub url: String,
    pub body: Value,
}

impl Notifier {
    pub fn new() -> Notifier {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| tracing::error!(error = %e, "notifications are off: no HTTP client"))
            .ok();
        Notifier {
            http,
            listen_url: OnceLock::new(),
            push: OnceLock::new(),
        }
    }

    pub fn set_push(&self, push: Arc<crate::server::push::Push>) {
        let _ = self.push.set(push);
    }

    /// Web Push, once the server has started it.
    pub fn push(&self) -> Option<&Arc<crate::server::push::Push>> {
        self.push.get()
    }

    /// Whether a gate that waits is told to anyone: a webhook, or Web Push.
    pub fn is_on(&self, config: &Config) -> bool {
        self.push.get().is_some() || !config.notify.webhook_url.is_empty()
    }

    /// Where the server listens (`http://127.0.0.1:8080`), once it is bound.
    pub fn set_listen_url(&self, url: String) {
        let _ = self.listen_url.set(url);
    }

    /// Where links start: `server.public_url`, else where the server listens.
    fn base_url<'a>(&'a self, config: &'a Config) -> &'a str {
        let base = if config.server.public_url.is_empty() {
            self.listen_url.get().map(String::as_str).unwrap_or("")
        } else {
            config.server.public_url.as_str()
        };
        base.trim_end_matches('/')
    }

    /// The link to a card.
    pub fn card_url(
        &self,
        config: &Config,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> String {
        format!(
            "{}/sessions/{session_id}#gate-{approval_id}",
            self.base_url(config)
        )
    }

    /// For an ntfy notification: what its Approve and Deny need (`NtfyAnswer::url` mints the
    /// one-time capability for this card and this topic); `None` for a card answered only on
    /// the card (`payload::answerable_from_notification`).
    fn ntfy_answer(&self, config: &Config, gate: &ApprovalRequestBody) -> Option<NtfyAnswer> {
        let push = Arc::clone(self.push.get()?);
        let needs_passkey = config.approvals.require_passkey.applies_to(gate.reason);
        // Nobody can tell who tapped an ntfy button: a routed card is answered on its page.
        if config.notify.format != NotifyFormat::Ntfy
            || gate.route.is_some()
            || !crate::server::push::payload::answerable_from_notification(gate, needs_passkey)
        {
            return None;
        }
        // A capability travels only over TLS: to the ntfy server, and back to this one.
        let base = self.base_url(config);
        let private = |url: &str| {
            url::Url::parse(url).is_ok_and(|u| {
                u.scheme() == "https"
                    || (config.notify.push_test_endpoints
                        && crate::server::push::subscription::endpoint_allowed(&u, true).is_ok())
            })
        };
        if !private(config.notify.webhook_url.reveal().trim()) || !private(base) {
            return None;
        }
        let grant = crate::server::push::capability::Grant {
            session_id: gate.session_id.clone(),
            approval_id: gate.approval_id.clone(),
            digest: gate.digest.clone(),
            holder: crate::server::push::capability::ntfy_holder(
                config.notify.webhook_url.reveal(),
            ),
            expires_ms: gate.expires_at.unix_ms().unwrap_or(0),
        };
        Some(NtfyAnswer {
            push,
            grant,
            base: base.to_owned(),
        })
    }

    /// Tells those a routed card escalated to (Web Push to their devices); returns at once.
    pub fn gate_escalated(&self, config: &Config, gate: &ApprovalRequestBody, session_title: &str) {
        if let Some(push) = self.push.get() {
            push.gate_escalated(config, gate, session_title);
        }
    }

    /// Tells the person a gate waits for them: their subscribed devices (Web Push), and the
    /// webhook if `[notify]` names one; returns at once.
    pub fn gate_opened(&self, config: &Config, gate: &ApprovalRequestBody, session_title: &str) {
        if let Some(push) = self.push.get() {
            push.gate_opened(config, gate, session_title);
        }
        let (Some(http), false) = (&self.http, config.notify.webhook_url.is_empty()) else {
            return;
        };
        let link = self.card_url(config, &gate.session_id, &gate.approval_id);
        let answer = self.ntfy_answer(config, gate);
        let (http, config, gate) = (http.clone(), config.clone(), gate.clone());
        let session_title = session_title.to_owned();
        tokio::spawn(async move {
            let answer_url = match answer {
                Some(answer) => answer.url().await,
                None => None,
            };
            let Some(message) =
                message(&config, &gate, &session_title, &link, answer_url.as_deref())
            else {
                tracing::warn!("notify.webhook_url is not a URL a notification can be sent to");
                return;
            };
            deliver(&http, &message, gate.approval_id.as_str()).await
        });
    }
}

/// An ntfy message's Approve and Deny, before their capability is minted.
struct NtfyAnswer {
    push: Arc<crate::server::push::Push>,
    grant: crate::server::push::capability::Grant,
    base: String,
}

impl NtfyAnswer {
    /// The URL the buttons post to, with a fresh capability; `None` (the message only links
    /// the card) when it cannot be kept.
    async fn url(self) -> Option<String> {
        match self.push.capabilities().mint(&self.grant).await {
            Ok(capability) => Some(format!("{}/api/v1/push/answers/{capability}", self.base)),
            Err(e) => {
                tracing::warn!(error = %e, "an ntfy message goes without Approve and Deny: its capability could not be kept");
                None
            }
        }
    }
}

/// The host a URL names, for logs: no user info, port, path or query (a webhook URL's path or
/// query is often its secret).
fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Posts `message`, retrying a failure a few times; gives up with a log line.
async fn deliver(http: &reqwest::Client, message: &Message, approval_id: &str) {
    let host = host_of(&message.url);
    let host = host.as_str();
    let settled = retry::with_pauses(&retry::PAUSES, |attempt| async move {
        match http.post(&message.url).json(&message.body).send().await {
            Ok(resp) if resp.status().is_success() => {
                tracing::debug!(approval = %approval_id, host, "notification sent");
                Attempt::Settled(())
            }
            Ok(resp) => {
                tracing::warn!(approval = %approval_id, host, attempt, status = resp.status().as_u16(), "notification refused");
                // A 4xx other than rate limiting will not get better by repeating it.
                if resp.status().is_client_error() && resp.status().as_u16() != 429 {
                    Attempt::Settled(())
                } else {
                    Attempt::Again
                }
            }
            Err(err) => {
                let why = crate::text::error_chain(&err.without_url());
                tracing::warn!(approval = %approval_id, host, attempt, error = %why, "notification not delivered");
                Attempt::Again
            }
        }
    })
    .await;
    if settled.is_none() {
        tracing::error!(approval = %approval_id, host, "gave up notifying about a gate");
    }
}

/// The notification of a gate in the configured format; `None` when the URL cannot carry it.
/// `answer_url` (ntfy only): where its Approve and Deny buttons post.
pub fn message(
    config: &Config,
    gate: &ApprovalRequestBody,
    session_title: &str,
    link: &str,
    answer_url: Option<&str>,
) -> Option<Message> {
    let webhook = config.notify.webhook_url.reveal().trim();
    // The agent wrote these: each is shown as the card and the push show it (`crate::shown`:
    // one line, nothing hidden or reordered, no quote of its own that could read as ours).
    let summary = crate::server::push::payload::shown_summary(gate);
    let headline = shown::line_within(&gate.title, 80);
    let title = format!("Approval needed: {headline}");
    let session_title = &shown::line_within(session_title, 80);
    let tool = shown::line_within(&gate.tool, 80);
    match config.notify.format {
        NotifyFormat::Json => Some(Message {
            url: webhook.to_owned(),
            body: json!({
                "event": "approval_needed",
                "title": title,
                "summary": summary,
                "tool": tool,
                "reason": shown::line(&gate.reason_detail),
                "session_id": gate.session_id,
                "session_title": session_title,
                "approval_id": gate.approval_id,
                "url": link,
                "expires_at": gate.expires_at,
            }),
        }),
        NotifyFormat::Ntfy => {
            ntfy_message(webhook, &title, &summary, session_title, link, answer_url)
        }
        NotifyFormat::Slack => Some(Message {
            url: webhook.to_owned(),
            body: json!({
                // The agent's words as literal text: no mention (`<!channel>`), no link of its
                // own (`<url|text>`), no formatting; only our link is a link.
                "text": format!(
                    "*Approval needed:* {}\n{}\n{} · <{link}|Open the card>",
                    slack_code(&headline),
                    slack_code(&summary),
                    slack_code(session_title)
                ),
                "unfurl_links": false,
                "unfurl_media": false,
            }),
        }),
    }
}

/// ntfy takes JSON at its root URL, with the topic in the body; `None` when the URL names no
/// one topic.
fn ntfy_message(
    webhook: &str,
    title: &str,
    summary: &str,
    session_title: &str,
    link: &str,
    answer_url: Option<&str>,
) -> Option<Message> {
    let (scheme, rest) = webhook.split_once("://")?;
    let (host, topic) = rest.split_once('/')?;
    let topic = topic.trim_matches('/');
    if host.is_empty() || topic.is_empty() || topic.contains('/') {
        return None;
    }
    Some(Message {
        url: format!("{scheme}://{host}/"),
        body: json!({
            "topic": topic,
            "title": title,
            "message": format!("{summary}\n{session_title}"),
            "click": link,
            "tags": ["lock"],
            "priority": 4,
            "actions": ntfy_actions(link, answer_url),
        }),
    })
}

/// ntfy's buttons: Approve and Deny post the decision to `answer_url` (its capability is the
/// only credential; ntfy clears the notification after), and one opens the card.
fn ntfy_actions(link: &str, answer_url: Option<&str>) -> Value {
    let view = json!({"action": "view", "label": "Open the card", "url": link});
    let Some(url) = answer_url else {
        return json!([view]);
    };
    let answer = |label: &str, decision: &str| {
        json!({
            "action": "http", "label": label, "url": url, "method": "POST",
            "headers": {"Content-Type": "application/json"},
            "body": json!({"decision": decision}).to_string(),
            "clear": true,
        })
    };
    json!([answer("Approve", "approve"), answer("Deny", "deny"), view])
}

/// The agent's words in Slack's `mrkdwn`, as inline code: Slack links nothing inside it and
/// formats nothing; its three control characters are escaped (so `<!channel>` and
/// `<https://x|y>` stay text) and backticks replaced, so the code span cannot be closed.
fn slack_code(text: &str) -> String {
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "'")
        .replace('\n', " ");
    format!("`{escaped}`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{GateKind, GateReason, TimeoutOutcome, Timestamp, ToolClass};

    pub(super) fn gate() -> ApprovalRequestBody {
        ApprovalRequestBody {
            route: None,
            cwd: None,
            source: None,
            approval_id: "a1".into(),
            session_id: "s1".into(),
            call_id: "c".into(),
            kind: GateKind::External,
            tool: "Bash".into(),
            class: ToolClass::Exec,
            args: json!({"command": "npm test"}),
            decision_kind: None,
            title: "Bash".into(),
            summary: "npm test".into(),
            proposal_md: String::new(),
            proposal_html: String::new(),
            diff: None,
            reason: GateReason::Mode,
            reason_detail: "Ask mode".into(),
            allowed_decisions: vec![],
            digest: "d".into(),
            created_at: Timestamp::now(),
            expires_at: Timestamp::now(),
            timeout_outcome: TimeoutOutcome::Deny,
            suggested_rule: None,
            execution_mode: None,
            agent_says: None,
        }
    }

    fn config(url: &str, format: NotifyFormat) -> Config {
        let mut config = Config::default();
        config.notify.webhook_url = crate::server::secret::Secret::new(url);
        config.notify.format = format;
        config
    }

    #[test]
    fn each_format_carries_the_title_the_summary_and_the_link() {
        let link = "https://cs.example/sessions/s1#gate-a1";
        let json = message(
            &config("https://hook.example/x", NotifyFormat::Json),
            &gate(),
            "claude-code · app",
            link,
            None,
        )
        .unwrap();
        assert_eq!(json.url, "https://hook.example/x");
        assert_eq!(json.body["url"], link);
        assert_eq!(json.body["summary"], "npm test");
        let ntfy = message(
            &config("https://ntfy.sh/my-topic", NotifyFormat::Ntfy),
            &gate(),
            "t",
            link,
            None,
        )
        .unwrap();
        assert_eq!(ntfy.url, "https://ntfy.sh/");
        assert_eq!(ntfy.body["topic"], "my-topic");
        assert_eq!(ntfy.body["click"], link);
        let slack = message(
            &config(
                "https://hooks.slack.com/services/T/B/X",
                NotifyFormat::Slack,
            ),
            &gate(),
            "t",
            link,
            None,
        )
        .unwrap();
        let text = slack.body["text"].as_str().unwrap();
        assert!(text.contains("npm test") && text.contains(link), "{text}");
        assert!(
            message(
                &config("https://ntfy.sh/", NotifyFormat::Ntfy),
                &gate(),
                "t",
                link,
                None
            )
            .is_none()
        );
    }

    /// The agent's words cannot forge a mention, a link or hidden text in a notification.
    #[test]
    fn markup_in_the_agents_words_stays_text() {
        let mut sneaky = gate();
        sneaky.title = "<!channel> urgent <https://evil.example|Approve here>".into();
        sneaky.summary = "rm -rf \u{202E}fdp.exe` <@U123> https://evil.example/ok".into();
        let link = "https://cs.example/sessions/s1#gate-a1";
        let slack = message(
            &config(
                "https://hooks.slack.com/services/T/B/X",
                NotifyFormat::Slack,
            ),
            &sneaky,
            "codex · <!here>",
            link,
            None,
        )
        .unwrap();
        let text = slack.body["text"].as_str().unwrap();
        for forged in [
            "<!channel>",
            "<!here>",
            "<@U123>",
            "<https://evil",
            "\u{202E}",
        ] {
            assert!(!text.contains(forged), "{forged} in {text}");
        }
        assert!(text.contains("&lt;!channel&gt;"), "{text}");
        assert!(text.contains("⟨U+202E⟩"), "{text}");
        // Only our own link is a link; the agent's URL sits in a code span.
        assert_eq!(text.matches('<').count(), 1, "{text}");
        assert!(text.contains(&format!("<{link}|Open the card>")), "{text}");
        assert_eq!(slack.body["unfurl_links"], false);
        let ntfy = message(
            &config("https://ntfy.sh/topic", NotifyFormat::Ntfy),
            &sneaky,
            "t",
            link,
            None,
        )
        .unwrap();
        assert!(!ntfy.body.to_string().contains('\u{202E}'));
        assert!(
            ntfy.body.get("markdown").is_none(),
            "ntfy reads it as plain text"
        );
    }

    /// ntfy gets Approve and Deny as HTTP actions on the capability URL, and the card's link;
    /// without a capability (a floor card) only the link.
    #[test]
    fn ntfy_buttons_post_the_decision_to_the_capability_url() {
        let link = "https://cs.example/sessions/s1#gate-a1";
        let answer = "https://cs.example/api/v1/push/answers/cs1.abc.def";
        let ntfy = message(
            &config("https://ntfy.sh/topic", NotifyFormat::Ntfy),
            &gate(),
            "t",
            link,
            Some(answer),
        )
        .unwrap();
        let actions = ntfy.body["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 3, "ntfy shows at most three");
        for (action, decision) in actions.iter().zip(["approve", "deny"]) {
            assert_eq!(action["action"], "http");
            assert_eq!(action["method"], "POST");
            assert_eq!(action["url"], answer);
            let body: Value = serde_json::from_str(action["body"].as_str().unwrap()).unwrap();
            assert_eq!(body, json!({"decision": decision}));
        }
        assert_eq!(actions[2]["action"], "view");
        assert!(!ntfy.body.to_string().contains("Bearer"));
        let floor = message(
            &config("https://ntfy.sh/topic", NotifyFormat::Ntfy),
            &gate(),
            "t",
            link,
            None,
        )
        .unwrap();
        assert_eq!(floor.body["actions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn card_links_use_the_public_url_else_the_listening_address() {
        let notifier = Notifier::new();
        let mut config = Config::default();
        notifier.set_listen_url("http://127.0.0.1:8080".into());
        assert_eq!(
            notifier.card_url(&config, &"s".into(), &"a".into()),
            "http://127.0.0.1:8080/sessions/s#gate-a"
        );
        config.server.public_url = "https://cs.example/".into();
        assert_eq!(
            notifier.card_url(&config, &"s".into(), &"a".into()),
            "https://cs.example/sessions/s#gate-a"
        );
        assert_eq!(
            host_of("https://hooks.slack.com/services/T/B/X"),
            "hooks.slack.com"
        );
    }
}
