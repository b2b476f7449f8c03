//! One push to one subscription (RFC 8030 with RFC 8291 encryption and RFC 8292 VAPID), with
//! its retries.

use std::time::Duration;

use super::encrypt::encrypt;
use super::payload::Message;
use super::subscription::{decode_key, endpoint_allowed};
use super::vapid::VapidKeys;
use crate::server::retry::{self, Attempt};
use crate::server::store::push::PushSubscriptionRow;

pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// What came of a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The push service took it (201).
    Delivered,
    /// The subscription no longer exists (404 or 410): it is to be dropped.
    Gone,
    /// It could not be sent after every retry, or was refused for good.
    Failed,
}

/// What a push service's answer means for the push: delivered, gone, refused for good, or
/// worth another try (only a 429 or a 5xx may get better by repeating it; a redirect is
/// never followed: a push service answers where it was asked).
fn after_answer(status: u16, subscription: &str, host: &str, attempt: usize) -> Attempt<Delivery> {
    match status {
        200..=299 => Attempt::Settled(Delivery::Delivered),
        404 | 410 => Attempt::Settled(Delivery::Gone),
        _ => {
            tracing::warn!(subscription, host, attempt, status, "push refused");
            if (500..=599).contains(&status) || status == 429 {
                Attempt::Again
            } else {
                Attempt::Settled(Delivery::Failed)
            }
        }
    }
}

/// Sends `message`, retrying a connection failure, a 429 or a 5xx after 1, 4 and 15 s
/// (`retry::PAUSES`).
pub async fn send(
    http: &reqwest::Client,
    keys: &VapidKeys,
    row: &PushSubscriptionRow,
    message: &Message,
    subject: &str,
    loopback: bool,
) -> Delivery {
    let Ok(endpoint) = url::Url::parse(&row.endpoint) else {
        return Delivery::Gone;
    };
    // Checked again at each send: the rule may have tightened since the row was stored.
    if endpoint_allowed(&endpoint, loopback).is_err() {
        return Delivery::Gone;
    }
    let (Some(p256dh), Some(auth)) = (decode_key(&row.p256dh), decode_key(&row.auth)) else {
        return Delivery::Gone;
    };
    let body = match encrypt(&message.body, &p256dh, &auth) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(subscription = %row.id, error = %e, "push not encrypted");
            return Delivery::Failed;
        }
    };
    let Some(authorization) = keys.authorization(&endpoint, subject) else {
        return Delivery::Failed;
    };
    let host = endpoint.host_str().unwrap_or("").to_owned();
    let (endpoint, host, body, authorization) = (&endpoint, &host, &body, &authorization);
    let settled = retry::with_pauses(&retry::PAUSES, |attempt| async move {
        let request = http
            .post(endpoint.clone())
            .header("TTL", message.ttl_secs.to_string())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Urgency", "high")
            .header("Topic", &message.topic)
            .header("Authorization", authorization)
            .body(body.clone());
        match request.send().await {
            Ok(resp) => after_answer(resp.status().as_u16(), &row.id, host, attempt),
            Err(err) => {
                let why = crate::text::error_chain(&err.without_url());
                tracing::warn!(subscription = %row.id, %host, attempt, error = %why, "push not delivered");
                Attempt::Again
            }
        }
    })
    .await;
    settled.unwrap_or_else(|| {
        tracing::error!(subscription = %row.id, %host, "gave up on a push");
        Delivery::Failed
    })
}
