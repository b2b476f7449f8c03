//! What a turn sends the model: the conversation fitted to the provider's context window
//! (`conversation::fit`), and the one compaction and retry a refusal for length gets.
//!
//! **Invariant 9** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): only the provider request is bounded, never the log or page.
//!
//! Counting with a real tokenizer costs milliseconds per 64 KiB, so it runs on the blocking
//! pool, and only when a free bound (a token is at least a byte) cannot show the request fits.

use super::turn::{Turn, TurnEnd};
use crate::server::conversation::fit::{self, Counter, Fitted, Fitting};
use crate::server::conversation::tokens::answer_reserve;
use crate::server::conversation::{ChatMessage, Completion};
use crate::server::provider::{CompletionRequest, DeltaSink, ProviderError, Window};

/// The budget after a refusal: half the one refused, or the window the refusal named (less
/// the answer's room) when that is smaller.
pub(super) fn tighter_budget(refused: u64, named: Option<u64>) -> u64 {
    let half = refused / 2;
    named.map_or(half, |window| {
        half.min(window.saturating_sub(answer_reserve(window)))
    })
}

impl Turn {
    /// One model call over `request`, fitted to the provider's window. A refusal for length
    /// compacts once (a tighter budget, kept for the rest of the turn) and tries once more; a
    /// second refusal ends the turn with the provider's words.
    pub(super) async fn ask_model(
        &self,
        mut request: CompletionRequest,
        fitting: &mut Fitting,
        deltas: DeltaSink<'_>,
    ) -> Result<Completion, TurnEnd> {
        let provider = self.deps.config().provider.clone();
        let Some(window) = provider.window() else {
            return Ok(provider.complete(&request, deltas, &self.cancel).await?);
        };
        let budget = fitting
            .learned
            .map_or(window.budget(), |learned| learned.min(window.budget()));
        let whole = request.messages.clone();
        request.messages = self.fitted(&request, window, budget, fitting).await?;
        let (named, message) = match provider.complete(&request, deltas, &self.cancel).await {
            Err(ProviderError::ContextTooLong { limit, message }) => (limit, message),
            other => return Ok(other?),
        };
        let tighter = tighter_budget(budget, named);
        tracing::warn!(
            session = %self.session_id, turn = %self.turn_id, budget, tighter, %message,
            "the model refused the request as too long; cutting it further and trying once more"
        );
        fitting.learned = Some(tighter);
        request.messages = whole;
        request.messages = self.fitted(&request, window, tighter, fitting).await?;
        match provider.complete(&request, deltas, &self.cancel).await {
            Err(ProviderError::ContextTooLong { message, .. }) => Err(TurnEnd::Failed(format!(
                "the conversation is too long for the model even cut to {tighter} tokens: {message}"
            ))),
            other => Ok(other?),
        }
    }

    /// The messages of `request` as they fit `budget`.
    async fn fitted(
        &self,
        request: &CompletionRequest,
        window: Window,
        budget: u64,
        fitting: &mut Fitting,
    ) -> Result<Vec<std::sync::Arc<ChatMessage>>, TurnEnd> {
        if fit::surely_fits(&request.messages, &request.tools, budget, window.tokenizer) {
            return Ok(request.messages.clone());
        }
        // What the marker may say the person said: the log's resolutions, never a tool's text.
        let answers = self
            .deps
            .hub
            .history(&self.session_id, |h| h.answers().clone())
            .await?;
        let mut counter = match fitting.counter.take() {
            Some(counter) if counter.tokenizer() == window.tokenizer => counter,
            _ => Counter::new(window.tokenizer),
        };
        let (fitted, counter) = if window.tokenizer.is_costly() {
            let (messages, tools) = (request.messages.clone(), request.tools.clone());
            let job = tokio::task::spawn_blocking(move || {
                let fitted = fit::fit(&messages, &tools, budget, &mut counter, &answers);
                (fitted, counter)
            });
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Err(TurnEnd::Cancelled),
                joined = job => joined.map_err(|e| {
                    TurnEnd::Failed(format!("could not measure the conversation for the model: {e}"))
                })?,
            }
        } else {
            (
                fit::fit(
                    &request.messages,
                    &request.tools,
                    budget,
                    &mut counter,
                    &answers,
                ),
                counter,
            )
        };
        fitting.counter = Some(counter);
        self.log_fitted(&fitted, budget);
        Ok(fitted.messages)
    }

    fn log_fitted(&self, fitted: &Fitted, budget: u64) {
        if !fitted.fits {
            tracing::warn!(
                session = %self.session_id, turn = %self.turn_id, tokens = fitted.tokens, budget,
                "the conversation does not fit the model's window even cut; sending it as it is"
            );
        } else if fitted.changed() {
            tracing::info!(
                session = %self.session_id, turn = %self.turn_id, tokens = fitted.tokens, budget,
                trimmed = fitted.trimmed, dropped = fitted.dropped,
                "cut the conversation to fit the model's context window"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_halves_the_budget_or_takes_the_window_it_names() {
        assert_eq!(tighter_budget(100_000, None), 50_000);
        // OpenAI said 8,192: the budget is that less a quarter for the answer.
        assert_eq!(tighter_budget(100_000, Some(8_192)), 6_144);
        // A named window larger than the budget refused does not loosen it.
        assert_eq!(tighter_budget(10_000, Some(128_000)), 5_000);
    }

    /// `provider.context_tokens` may not go below the smallest window in which the prompt and
    /// every tool's description leave room for a conversation.
    #[test]
    fn the_prompt_and_tools_fit_the_smallest_window_allowed_with_room_to_spare() {
        use crate::server::conversation::tokens::{self, REPLY_PRIMING, Tokenizer};
        let mut prompt = crate::server::agent::SYSTEM_PROMPT.to_owned();
        let mut specs = Vec::new();
        for tool in crate::server::tools::all() {
            prompt.push_str(tool.prompt());
            specs.push(tool.spec());
        }
        let least = crate::server::config::MIN_CONTEXT_TOKENS;
        for tokenizer in [Tokenizer::O200k, Tokenizer::Estimate] {
            let count = |text: &str| tokenizer.count(text);
            let fixed = tokens::message_cost(&ChatMessage::System(prompt.clone()), count)
                + tokens::tools_cost(&specs, count)
                + REPLY_PRIMING;
            let budget = Window {
                context_tokens: least,
                tokenizer,
            }
            .budget();
            assert!(fixed < 2_000, "{tokenizer:?}: {fixed}");
            assert!(budget - fixed >= 500, "{tokenizer:?}: {fixed} of {budget}");
        }
    }
}
