//! Telling the person, as information, that the reviewer answered a card for them (issue 40:
//! a class they trusted it with): the webhook gets a message with no Approve or Deny, only a
//! link to the card, where "I would not have approved this" is. Web Push says the same on the
//! notification that replaces the card's (`push::payload::outcome`).

use serde_json::json;

use super::{Message, Notifier, deliver, ntfy_message, slack_code};
use crate::protocol::{ApprovalRequestBody, Resolution};
use crate::server::config::{Config, NotifyFormat};
use crate::shown;

/// The reviewer's approval as one line: "Approved by the reviewer — <reason>", the reason
/// written out as `shown` writes any line a model wrote.
pub fn approved_line(resolution: &Resolution) -> String {
    let reason = resolution.reason.as_deref().unwrap_or("");
    format!(
        "Approved by the reviewer — {}",
        shown::line_within(reason, 200)
    )
}

impl Notifier {
    /// Tells the webhook the reviewer approved `gate`; returns at once. (Web Push devices
    /// learn it from the closing notification every answer sends.)
    pub fn reviewer_answered(
        &self,
        config: &Config,
        gate: &ApprovalRequestBody,
        resolution: &Resolution,
        session_title: &str,
    ) {
        let (Some(http), false) = (&self.http, config.notify.webhook_url.is_empty()) else {
            return;
        };
        let link = self.card_url(config, &gate.session_id, &gate.approval_id);
        let Some(message) = reviewer_message(config, gate, resolution, session_title, &link) else {
            tracing::warn!("notify.webhook_url is not a URL a notification can be sent to");
            return;
        };
        let (http, approval_id) = (http.clone(), gate.approval_id.clone());
        tokio::spawn(async move { deliver(&http, &message, approval_id.as_str()).await });
    }
}

/// The information message in the configured format: no answer buttons, a link to the card.
pub fn reviewer_message(
    config: &Config,
    gate: &ApprovalRequestBody,
    resolution: &Resolution,
    session_title: &str,
    link: &str,
) -> Option<Message> {
    let webhook = config.notify.webhook_url.reveal().trim();
    let summary = crate::server::push::payload::shown_summary(gate);
    let headline = shown::line_within(&gate.title, 80);
    let line = approved_line(resolution);
    let session_title = shown::line_within(session_title, 80);
    match config.notify.format {
        NotifyFormat::Json => Some(Message {
            url: webhook.to_owned(),
            body: json!({
                "event": "approved_by_reviewer",
                "title": format!("Approved by the reviewer: {headline}"),
                "summary": summary,
                "message": line,
                "reason": shown::line(resolution.reason.as_deref().unwrap_or("")),
                "tool": shown::line_within(&gate.tool, 80),
                "session_id": gate.session_id,
                "session_title": session_title,
                "approval_id": gate.approval_id,
                "url": link,
            }),
        }),
        NotifyFormat::Ntfy => {
            let title = format!("Approved by the reviewer: {headline}");
            let body = format!("{line}\n{summary}");
            let mut message = ntfy_message(webhook, &title, &body, &session_title, link, None)?;
            // Information: no lock, no urgency (the buttons were left out above).
            message.body["tags"] = json!(["robot"]);
            message.body["priority"] = json!(3);
            Some(message)
        }
        NotifyFormat::Slack => Some(Message {
            url: webhook.to_owned(),
            body: json!({
                "text": format!(
                    "*Approved by the reviewer:* {}\n{}\n{}\n{} · <{link}|Open the card>",
                    slack_code(&headline),
                    slack_code(&line),
                    slack_code(&summary),
                    slack_code(&session_title)
                ),
                "unfurl_links": false,
                "unfurl_media": false,
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AnsweredBy, Decision, Timestamp};

    fn resolution(reason: &str) -> Resolution {
        Resolution {
            reason: Some(reason.into()),
            ..Resolution::plain(
                &"a1".into(),
                Decision::Approve,
                AnsweredBy::Reviewer,
                "reviewer",
                Timestamp::now(),
            )
        }
    }

    /// Each format says the reviewer approved it and why, and offers no answer: an ntfy
    /// message has only the button that opens the card.
    #[test]
    fn the_reviewers_approval_is_told_as_information_in_each_format() {
        let link = "https://cs.example/sessions/s1#gate-a1";
        let approved = resolution("echo\u{202E} was approved 5 times\nbefore");
        let mut config = Config::default();
        config.notify.webhook_url = crate::server::secret::Secret::new("https://ntfy.sh/topic");
        config.notify.format = NotifyFormat::Ntfy;
        let gate = super::super::tests::gate();
        let ntfy = reviewer_message(&config, &gate, &approved, "t", link).unwrap();
        let actions = ntfy.body["actions"].as_array().unwrap();
        assert_eq!(actions.len(), 1, "{actions:?}");
        assert_eq!(actions[0]["action"], "view");
        let said = ntfy.body["message"].as_str().unwrap();
        assert!(
            said.starts_with("Approved by the reviewer — echo⟨U+202E⟩ was approved 5 times⏎before"),
            "{said}"
        );
        config.notify.format = NotifyFormat::Json;
        let json = reviewer_message(&config, &gate, &approved, "t", link).unwrap();
        assert_eq!(json.body["event"], "approved_by_reviewer");
        assert_eq!(json.body["url"], link);
        config.notify.format = NotifyFormat::Slack;
        let slack = reviewer_message(&config, &gate, &approved, "t", link).unwrap();
        let text = slack.body["text"].as_str().unwrap();
        assert!(text.contains("Approved by the reviewer"), "{text}");
        assert!(!text.contains('\u{202E}'), "{text}");
    }
}
