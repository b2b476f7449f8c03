//! The `Provider` trait: one model call, streamed. The agent loop knows nothing else about models.
//!
//! Implementations: `demo` (the offline command language), `openai` (any OpenAI-compatible
//! chat-completions endpoint), `scripted` (tests drive a turn step by step).

pub mod demo;
pub mod openai;
#[cfg(test)]
mod openai_tests;
pub mod scripted;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::ToolClass;

/// One message of the conversation as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatMessage {
    System(String),
    User(String),
    /// What the model said and the tool calls it asked for, in one message.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCallRequest>,
    },
    /// The result of one tool call, as text the model reads.
    Tool {
        call_id: String,
        output: String,
    },
}

/// A tool call the model asked for. `args` is the parsed JSON object; arguments that were not
/// valid JSON arrive as `Value::String` holding the raw text, and the tool rejects them.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// What a provider is told about one tool.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub class: ToolClass,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

pub struct CompletionRequest {
    /// Shared messages: a long conversation is handed over without copying it.
    pub messages: Vec<std::sync::Arc<ChatMessage>>,
    pub tools: Vec<ToolSpec>,
}

impl CompletionRequest {
    pub fn new(messages: impl IntoIterator<Item = ChatMessage>, tools: Vec<ToolSpec>) -> Self {
        CompletionRequest {
            messages: messages.into_iter().map(std::sync::Arc::new).collect(),
            tools,
        }
    }
}

/// One model reply: text (already streamed through the delta sink) and zero or more tool calls.
/// No tool calls means the turn is over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tokens the call consumed (prompt + completion), when the provider reports them.
    pub tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the model call was cancelled")]
    Cancelled,
    #[error("the model endpoint could not be reached: {0}")]
    Transport(String),
    #[error("the model endpoint answered {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the model's answer could not be read: {0}")]
    Protocol(String),
    #[error("provider misconfigured: {0}")]
    Config(String),
}

/// Receives streamed assistant text as it arrives (becomes transient `assistant_delta` events).
pub type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for logs and the config page.
    fn name(&self) -> &str;

    /// Runs one model call over the whole conversation so far. Streams text through `deltas`;
    /// returns promptly with `ProviderError::Cancelled` once `cancel` fires.
    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError>;
}
