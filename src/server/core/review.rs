//! The reviewer as a person reaches it: its standing (`GET /api/v1/review`), and the rule that
//! leaving `review.mode = "on"` — by a file edit or at a restart — ends every trust at once.

use std::sync::Arc;

use crate::protocol::{
    Answered, ApprovalRequest, ApprovalRequestBody, ClassStanding, EventBody, Predicted,
    Resolution, ReviewMode, ReviewState, SessionId, Timestamp, ToolClass,
};
use crate::server::config::ReviewConfig;
use crate::server::core::{Core, Error};
use crate::server::review::reviewable::reviewable;
use crate::server::review::shadow::Answerer;
use crate::server::review::standing::class_standing;
use crate::server::review::state::thresholds;
use crate::server::review::state::{COUNTED, review_state};
use crate::server::review::{Prediction, wrote_lately};
use crate::server::store::NewEvent;
use crate::server::store::review::TrustRow;

/// Why a class lost its trust at the person's "I would not have approved this".
pub const DISAGREED: &str = "the person would not have approved a card the reviewer answered";
/// Why a class lost its trust when the person withdrew it.
pub const WITHDRAWN: &str = "the person withdrew it";

/// Why every trust ended when the mode left `on`.
pub const MODE_LEFT_ON: &str = "review.mode is no longer \"on\"";
/// Why a trust ends when the reviewer in force is not the one that earned it.
pub const REVIEWER_CHANGED: &str = "the reviewer changed (review.reviewer, its endpoint or model): trust earned by another \
     reviewer does not carry over";

impl Core {
    /// `GET /api/v1/review`: mode, thresholds, each class's standing, the latest predictions.
    pub async fn review_state(&self) -> Result<ReviewState, Error> {
        let live = self.config();
        let in_force = crate::server::review::reviewer_key(&live.config);
        let repo = self.reviews.repo();
        let rows = repo.answered_predictions(COUNTED).await?;
        let trusted = repo.trusted_classes().await?;
        Ok(review_state(
            &live.config.review,
            &in_force,
            &rows,
            &trusted,
        ))
    }

    /// `PUT /api/v1/review/classes/{class}/{source}`: trusts the reviewer with a class (only
    /// in `on` mode, only once it is eligible) or withdraws that trust; its standing after.
    pub async fn set_review_trust(
        &self,
        class: &str,
        source: &str,
        trusted: bool,
        actor: &str,
    ) -> Result<ClassStanding, Error> {
        let class = ToolClass::parse(class)
            .filter(|c| *c != ToolClass::Config)
            .ok_or_else(|| {
                Error::InvalidRequest(format!(
                    "unknown class `{}`: one of read, edit, exec, decision, network",
                    class.chars().take(32).collect::<String>()
                ))
            })?;
        let repo = self.reviews.repo();
        if !trusted {
            repo.untrust_class(class, source, actor, WITHDRAWN).await?;
            return self.class_standing(class, source).await;
        }
        if self.config().config.review.mode != ReviewMode::On {
            return Err(Error::ReviewNotOn(
                "the reviewer can be trusted only with review.mode = \"on\" (set it in the config file)".into(),
            ));
        }
        let standing = self.class_standing(class, source).await?;
        if !standing.eligible {
            return Err(Error::NotEligible(not_eligible(
                &standing,
                &self.config().config.review,
            )));
        }
        let row = TrustRow {
            class,
            source: source.to_owned(),
            trusted_at: Timestamp::now(),
            reviewer: crate::server::review::reviewer_key(&self.config().config),
        };
        repo.trust_class(&row, actor).await?;
        self.class_standing(class, source).await
    }

    /// One class's standing (an empty one when it has no predictions yet).
    async fn class_standing(&self, class: ToolClass, source: &str) -> Result<ClassStanding, Error> {
        let state = self.review_state().await?;
        let config = &self.config().config.review;
        Ok(state
            .classes
            .into_iter()
            .find(|c| c.class == class && c.source == source)
            .unwrap_or_else(|| {
                class_standing(class, source.to_owned(), &[], &thresholds(config), false)
            }))
    }

    /// `POST /api/v1/review/disagree/{approval_id}`: "I would not have approved this" on a
    /// card the reviewer answered — a false approval; its class loses its trust at once.
    /// Saying it twice changes nothing more.
    pub async fn disagree_with_reviewer(
        &self,
        approval_id: &str,
        actor: &str,
    ) -> Result<ClassStanding, Error> {
        let repo = self.reviews.repo();
        let row = repo
            .prediction(approval_id)
            .await?
            .filter(|row| row.answered == Some(Answered::Reviewer))
            .ok_or_else(|| {
                Error::NotAnsweredByReviewer(
                    "the reviewer did not answer this card: only its own answers can be reported"
                        .into(),
                )
            })?;
        repo.mark_disagreed(approval_id, &Timestamp::now()).await?;
        repo.untrust_class(row.class, &row.source, actor, DISAGREED)
            .await?;
        self.class_standing(row.class, &row.source).await
    }

    /// Lets the reviewer answer through this core (its approvals, in `on` mode).
    pub fn answer_for_the_reviewer(self: &Arc<Self>) {
        let me: std::sync::Weak<dyn Answerer> = Arc::downgrade(self) as std::sync::Weak<Core>;
        self.reviews.set_answerer(me);
    }

    /// The reviewer's rows (its trusts read back by the tests).
    pub fn reviews_repo(&self) -> Arc<dyn crate::server::store::review::ReviewRepo> {
        Arc::clone(self.reviews.repo())
    }

    /// The prediction made for a card, if any: never shown before the card is answered (the
    /// disagree route reads it, and the tests, to know it was made).
    pub async fn review_prediction(
        &self,
        approval_id: &str,
    ) -> Result<Option<crate::server::store::review::PredictionRow>, Error> {
        Ok(self.reviews.repo().prediction(approval_id).await?)
    }

    /// Ends every trust unless the mode in force is `on`, and every trust another reviewer
    /// earned (its kind, endpoint or model changed): after a config reload, and at start (a
    /// change made while the server was down). Each ended trust is audited.
    pub async fn review_trust_follows_mode(&self, actor: &str) {
        let config = self.config();
        if config.config.review.mode != ReviewMode::On {
            match self.reviews.repo().untrust_all(actor, MODE_LEFT_ON).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    classes = n,
                    "the reviewer's trust ended: review.mode left on"
                ),
                Err(err) => tracing::error!(error = %err, "could not end the reviewer's trust"),
            }
            return;
        }
        let current = crate::server::review::reviewer_key(&config.config);
        let repo = self.reviews.repo();
        let trusts = match repo.trusted_classes().await {
            Ok(trusts) => trusts,
            Err(err) => {
                tracing::error!(error = %err, "could not read the reviewer's trust");
                return;
            }
        };
        for trust in trusts.iter().filter(|t| t.reviewer != current) {
            if let Err(err) = repo
                .untrust_class(trust.class, &trust.source, actor, REVIEWER_CHANGED)
                .await
            {
                tracing::error!(error = %err, "could not end a trust another reviewer earned");
            }
        }
    }
}

#[async_trait::async_trait]
impl Answerer for Core {
    /// In `on` mode, for a class the person trusts: the reviewer's `approve` answers the card
    /// (the first answer wins), its `escalate` puts its concern on the card, which still waits
    /// for the person. Anything else — an untrusted class, another mode, a card it may not
    /// answer — leaves the card to the person with nothing shown.
    async fn act_on(&self, card: &ApprovalRequestBody, source: &str, prediction: &Prediction) {
        if !self.reviewer_may_act(card, source).await {
            return;
        }
        let prediction = self.second_look(card, prediction).await;
        let id = &card.approval_id;
        match prediction.predicted {
            Predicted::Approve => match self.approve_as_reviewer(card, &prediction.reason).await {
                Ok(resolution) => {
                    tracing::info!(approval_id = %id, "the reviewer approved a card");
                    self.tell_reviewer_answered(card, &resolution).await;
                }
                Err(err) => {
                    tracing::info!(approval_id = %id, error = %err, "the reviewer's approval did not stand")
                }
            },
            Predicted::Escalate => match self.raise_concern(card, &prediction.reason).await {
                Ok(true) => tracing::info!(approval_id = %id, "the reviewer raised a concern"),
                Ok(false) => {}
                Err(err) => {
                    tracing::info!(approval_id = %id, error = %err, "the reviewer's concern was not shown")
                }
            },
        }
    }
}

impl Core {
    /// Whether the reviewer acts on this card at all: `on` mode, a card it may see, a class
    /// (of this agent) the person trusts it with.
    async fn reviewer_may_act(&self, card: &ApprovalRequestBody, source: &str) -> bool {
        let live = self.config();
        if live.config.review.mode != ReviewMode::On || !reviewable(card, &live.config) {
            return false;
        }
        match self.reviews.repo().trusted_classes().await {
            Ok(rows) => rows
                .iter()
                .any(|t| t.class == card.class && t.source == source),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the reviewer's trusted classes");
                false
            }
        }
    }

    /// The prediction the reviewer acts on: its own, except that a command it would approve
    /// goes to the person when it approved a file edit lately, any agent's
    /// ([`wrote_lately`]); when those cannot be read, too.
    async fn second_look(&self, card: &ApprovalRequestBody, prediction: &Prediction) -> Prediction {
        if card.class != ToolClass::Exec || prediction.predicted != Predicted::Approve {
            return prediction.clone();
        }
        let since = Timestamp::now().plus_ms(-wrote_lately::WINDOW_MS);
        let limit = crate::server::store::review::PAST_CARDS;
        let wrote = match self.reviews.repo().answered_predictions(limit).await {
            Ok(rows) => wrote_lately::wrote_since(&rows, &since, limit as usize),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the reviewer's recent answers");
                true
            }
        };
        match wrote {
            true => Prediction::escalate(wrote_lately::CONCERN),
            false => prediction.clone(),
        }
    }

    /// Tells the person, as information, that the reviewer approved a card (the webhook; Web
    /// Push says it on the notification that replaces the card's).
    async fn tell_reviewer_answered(&self, card: &ApprovalRequestBody, resolution: &Resolution) {
        let title = match self.session_row(&card.session_id).await {
            Ok(row) => row.title,
            Err(_) => String::new(),
        };
        let live = self.config();
        self.notifier
            .reviewer_answered(&live.config, card, resolution, &title);
    }

    /// Waiting cards with the reviewer's concerns on them, read from their sessions' logs (the
    /// `review_concern` events are the record). Only the sessions of cards the reviewer
    /// predicted are read, their recent turns only: a waiting card is always in those.
    pub async fn with_concerns(
        &self,
        mut pending: Vec<ApprovalRequest>,
    ) -> Result<Vec<ApprovalRequest>, Error> {
        let mut sessions: Vec<SessionId> = Vec::new();
        for gate in &pending {
            // Any predicted card may carry one: an `approve` the reviewer held back
            // (`second_look`) shows its concern too.
            let predicted = self
                .reviews
                .repo()
                .prediction(gate.body.approval_id.as_str())
                .await?
                .is_some();
            if predicted && !sessions.contains(&gate.body.session_id) {
                sessions.push(gate.body.session_id.clone());
            }
        }
        for session in &sessions {
            // A session deleted meanwhile takes its cards with it: the list stands without.
            let events = match self.recent_snapshot(session).await {
                Ok(snapshot) => snapshot.events,
                Err(Error::UnknownSession(_)) => continue,
                Err(other) => return Err(other),
            };
            let concerns = super::concerns_in(&events);
            for gate in pending.iter_mut().filter(|g| &g.body.session_id == session) {
                gate.reviewer_concern = concerns
                    .get(gate.body.approval_id.as_str())
                    .map(|c| (*c).to_owned());
            }
        }
        Ok(pending)
    }

    /// Commits the reviewer's concern on a card that still waits, under the checks its answer
    /// passes (not answered, not cancelled, not expired); whether it was committed. Never
    /// after the answer: the check and the append share the session's append lock.
    pub async fn raise_concern(
        &self,
        card: &ApprovalRequestBody,
        reason: &str,
    ) -> Result<bool, Error> {
        let session = &card.session_id;
        let request = self.answerable(session, &card.approval_id).await?;
        let concern = NewEvent::new(
            Some(&request.turn_id),
            EventBody::ReviewConcern {
                approval_id: card.approval_id.clone(),
                reason: reason.to_owned(),
            },
        );
        let committed = self
            .hub
            .commit_while_waiting(
                session,
                &card.approval_id,
                self.repos.gates.as_ref(),
                vec![concern],
            )
            .await?;
        Ok(committed.is_some())
    }
}

/// Why a class may not be trusted yet, in numbers against the thresholds.
fn not_eligible(standing: &ClassStanding, config: &ReviewConfig) -> String {
    format!(
        "{}/{} is not eligible: {} cards at {:.1}% agreement with {} false approvals; it needs at least {} cards, at least {:.1}% agreement and no false approval among its last {}",
        standing.class.as_str(),
        standing.source,
        standing.cards,
        standing.agreement * 100.0,
        standing.false_approvals,
        config.min_cards,
        config.min_agreement * 100.0,
        config.min_cards,
    )
}
