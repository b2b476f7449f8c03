//! The reviewer as a person reaches it: its standing (`GET /api/v1/review`), and the rule that
//! leaving `review.mode = "on"` — by a file edit or at a restart — ends every trust at once.

use crate::protocol::{ReviewMode, ReviewState};
use crate::server::core::{Core, Error};
use crate::server::review::state::{COUNTED, review_state};

/// Why every trust ended when the mode left `on`.
pub const MODE_LEFT_ON: &str = "review.mode is no longer \"on\"";

impl Core {
    /// `GET /api/v1/review`: mode, thresholds, each class's standing, the latest predictions.
    pub async fn review_state(&self) -> Result<ReviewState, Error> {
        let config = self.config().config.review.clone();
        let repo = self.reviews.repo();
        let rows = repo.answered_predictions(COUNTED).await?;
        let trusted = repo.trusted_classes().await?;
        Ok(review_state(&config, &rows, &trusted))
    }

    /// The prediction made for a card, if any: never shown before the card is answered (the
    /// disagree route reads it, and the tests, to know it was made).
    pub async fn review_prediction(
        &self,
        approval_id: &str,
    ) -> Result<Option<crate::server::store::review::PredictionRow>, Error> {
        Ok(self.reviews.repo().prediction(approval_id).await?)
    }

    /// Ends every trust unless the mode in force is `on`: after a config reload, and at
    /// start (a mode changed while the server was down). Each ended trust is audited.
    pub async fn review_trust_follows_mode(&self, actor: &str) {
        if self.config().config.review.mode == ReviewMode::On {
            return;
        }
        match self.reviews.repo().untrust_all(actor, MODE_LEFT_ON).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                classes = n,
                "the reviewer's trust ended: review.mode left on"
            ),
            Err(err) => tracing::error!(error = %err, "could not end the reviewer's trust"),
        }
    }
}
