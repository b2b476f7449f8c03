//! Web Push behind the routes: subscribing a device for its credential, sending a test, and
//! answering a card with a notification's one-time capability.
//!
//! **Invariant 58** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a capability answers one card, approve or deny, through `decide`.

use serde::Deserialize;

use super::{Answer, Core, Error};
use crate::protocol::{Decision, Timestamp, Via};
use crate::server::logins::Presented;
use crate::server::principal::Principal;
use crate::server::push::capability::Holder;
use crate::server::push::subscription::SubscriptionJson;
use crate::server::push::{self, Delivery, Push};
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions};

/// How many devices may be subscribed in all, and per credential: each card is pushed to
/// every one, so a token must not be able to make that thousands.
const MAX_SUBSCRIPTIONS: usize = 200;
const MAX_PER_CREDENTIAL: usize = 20;

/// The body of `POST /api/v1/push/answers/{capability}`.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct CapabilityAnswer {
    pub decision: Option<String>,
}

impl Core {
    fn push(&self) -> Result<&std::sync::Arc<Push>, Error> {
        self.notifier
            .push()
            .ok_or_else(|| Error::Internal("Web Push did not start".into()))
    }

    fn push_rows(&self) -> &dyn PushSubscriptions {
        self.repos.push.as_ref()
    }

    /// The key a page subscribes with (`applicationServerKey`).
    pub fn push_public_key(&self) -> Result<String, Error> {
        Ok(self.push()?.public_key().to_owned())
    }

    /// Stores a browser's subscription for `who`; a subscription with the same endpoint (the
    /// same browser, subscribing again or as someone else) is replaced.
    pub async fn subscribe_push(
        &self,
        body: SubscriptionJson,
        who: &Principal,
        presented: &Presented,
    ) -> Result<PushSubscriptionRow, Error> {
        if !who.scope().decides() {
            return Err(Error::Forbidden(
                "only a credential that may answer cards can subscribe to them".into(),
            ));
        }
        let checked = body
            .check(self.config().config.notify.push_test_endpoints)
            .map_err(Error::InvalidRequest)?;
        // The credential is recorded by its hash, checked again at every push and every tap:
        // revoking it (or signing that browser out) ends the subscription.
        let credential_check = presented.record();
        let mut existing = self.live_push_rows().await?;
        existing.retain(|r| r.endpoint != checked.endpoint.as_str());
        if existing.len() >= MAX_SUBSCRIPTIONS {
            return Err(Error::TooManySubscriptions(format!(
                "{MAX_SUBSCRIPTIONS} devices are subscribed already; remove one first"
            )));
        }
        if existing
            .iter()
            .filter(|r| r.credential == who.credential())
            .count()
            >= MAX_PER_CREDENTIAL
        {
            return Err(Error::TooManySubscriptions(format!(
                "this credential has {MAX_PER_CREDENTIAL} devices subscribed already; remove one first"
            )));
        }
        let row = PushSubscriptionRow {
            id: uuid::Uuid::new_v4().to_string(),
            endpoint: checked.endpoint.to_string(),
            p256dh: checked.p256dh,
            auth: checked.auth,
            credential: who.credential(),
            credential_check,
            created_at: Timestamp::now(),
        };
        self.push_rows().save_push_subscription(&row).await?;
        Ok(row)
    }

    /// The subscriptions whose credential is still the one that made them; the others (a new
    /// startup token, a token revoked or re-made) are removed as they are found, audited as
    /// `credential_gone`, so no list, cap or test counts a device that is never told.
    async fn live_push_rows(&self) -> Result<Vec<PushSubscriptionRow>, Error> {
        let rows = self.push_rows().push_subscriptions().await?;
        let mut live = Vec::with_capacity(rows.len());
        for row in rows {
            if self.subscriber(&row).await?.is_some() {
                live.push(row);
            } else {
                self.push_rows()
                    .delete_push_subscription(&row.id, "credential_gone")
                    .await?;
            }
        }
        Ok(live)
    }

    /// Who a subscription answers as, while the credential that made it still may.
    async fn subscriber(&self, row: &PushSubscriptionRow) -> Result<Option<Principal>, Error> {
        Ok(push::principal_of(
            row,
            self.repos.secrets.as_ref(),
            self.repos.tokens.as_ref(),
            self.repos.people.as_ref(),
        )
        .await?)
    }

    /// The caller's own subscriptions (an admin credential sees every one).
    pub async fn push_subscriptions(
        &self,
        who: &Principal,
    ) -> Result<Vec<PushSubscriptionRow>, Error> {
        let live = self.live_push_rows().await?;
        Ok(live.into_iter().filter(|row| owns(who, row)).collect())
    }

    /// One of the caller's live subscriptions, or `unknown_subscription` (also for another's).
    async fn own_subscription(
        &self,
        id: &str,
        who: &Principal,
    ) -> Result<PushSubscriptionRow, Error> {
        match self
            .live_push_rows()
            .await?
            .into_iter()
            .find(|r| r.id == id)
        {
            Some(row) if owns(who, &row) => Ok(row),
            _ => Err(Error::UnknownSubscription(id.chars().take(64).collect())),
        }
    }

    pub async fn unsubscribe_push(&self, id: &str, who: &Principal) -> Result<(), Error> {
        self.own_subscription(id, who).await?;
        if self
            .push_rows()
            .delete_push_subscription(id, &who.actor())
            .await?
        {
            Ok(())
        } else {
            Err(Error::UnknownSubscription(id.chars().take(64).collect()))
        }
    }

    /// Sends the test push to one of the caller's subscriptions, and says what came of it.
    pub async fn test_push(&self, id: &str, who: &Principal) -> Result<Delivery, Error> {
        let row = self.own_subscription(id, who).await?;
        let live = self.config();
        let push = self.push()?;
        push.follow(&live.config);
        let subject = push::subject(&live.config);
        Ok(push
            .send_now(&row, &push::payload::test_message(), &subject)
            .await)
    }

    /// Answers the card a notification's capability names, as that capability's holder.
    pub async fn answer_with_capability(
        &self,
        capability: &str,
        body: CapabilityAnswer,
    ) -> Result<super::Answered, Error> {
        let grant = match self.push()?.capabilities().open(capability).await {
            Ok(grant) => grant,
            Err(push::capability::Invalid::Unknown) => return Err(Error::InvalidCapability),
            Err(push::capability::Invalid::Storage(e)) => return Err(e.into()),
        };
        let decision = match body.decision.as_deref() {
            Some("approve") => Decision::Approve,
            Some("deny") => Decision::Deny,
            _ => {
                return Err(Error::InvalidDecision(
                    "a notification answers `approve` or `deny`".into(),
                ));
            }
        };
        if grant.expires_ms <= Timestamp::now_ms() {
            return Err(Error::CapabilityEnded(
                "this card's deadline has passed".into(),
            ));
        }
        let who = self.holder_now(&grant.holder).await?;
        self.answerable_from_a_notification(&grant).await?;
        let answer = Answer {
            decision,
            digest: Some(grant.digest),
            edits: None,
            reason: None,
            rule: None,
            client_id: None,
            execution_mode: None,
            via: Some(Via::Push),
            passkey: None,
        };
        self.decide(&grant.session_id, &grant.approval_id, answer, &who)
            .await
    }

    /// Who a capability answers as, if its holder still may: the device still subscribed and
    /// its credential not revoked, or the ntfy topic notifications still go to.
    async fn holder_now(&self, holder: &Holder) -> Result<Principal, Error> {
        match holder {
            Holder::Subscription(id) => {
                let Some(row) = self.push_rows().push_subscription(id).await? else {
                    return Err(Error::CapabilityEnded(
                        "this device is no longer subscribed".into(),
                    ));
                };
                self.subscriber(&row).await?.ok_or_else(|| {
                    Error::CapabilityEnded(
                        "the credential this device answered as was revoked".into(),
                    )
                })
            }
            Holder::Ntfy(topic) => {
                let live = self.config();
                let notify = &live.config.notify;
                let current = push::capability::ntfy_holder(notify.webhook_url.reveal());
                if notify.format != crate::server::config::NotifyFormat::Ntfy
                    || notify.webhook_url.is_empty()
                    || current != Holder::Ntfy(topic.clone())
                {
                    return Err(Error::CapabilityEnded(
                        "notifications no longer go to that ntfy topic".into(),
                    ));
                }
                Ok(Principal::Ntfy)
            }
        }
    }

    /// What a notification cannot show whole (the floor, a proposal, a long call) or a
    /// passkey must confirm is answered on the card itself: the same rule that minted it.
    async fn answerable_from_a_notification(
        &self,
        grant: &push::capability::Grant,
    ) -> Result<(), Error> {
        if let Some(gate) = self
            .repos
            .gates
            .get_gate(&grant.session_id, &grant.approval_id)
            .await?
            && gate.resolution.is_none()
            && !push::payload::answerable_from_notification(
                &gate.request.body,
                self.needs_passkey(&gate.request.body),
            )
        {
            return Err(Error::Forbidden(
                "this card is answered on the card itself, not from a notification".into(),
            ));
        }
        Ok(())
    }
}

/// Whether `who` may see and remove `row`: its own credential's, or any for an admin.
fn owns(who: &Principal, row: &PushSubscriptionRow) -> bool {
    who.scope() == crate::server::principal::Scope::Admin || row.credential == who.credential()
}
