//! What a request costs in tokens, and how many a model takes: so what is sent can be kept
//! inside its context window (`fit.rs`).
//!
//! OpenAI's model families are counted with their real tokenizer (tiktoken's BPE, whose ranks
//! are compiled into the binary: nothing is downloaded at build or run time); any other model
//! is estimated on the large side, since a low estimate is what makes a call fail. Counting
//! with a BPE costs milliseconds (in a release build: 5 ms for 64 KiB of code, 80 ms a MiB,
//! and 0.25 s to build o200k's tables on first use), so callers count off the async workers;
//! [`Tokenizer::at_most`] is the free bound that usually makes counting unneeded.

use serde_json::Value;

use super::{ChatMessage, ToolSpec};

/// The window assumed for a model this table does not know (most local models run with 32k
/// or more; fewer, and the provider's refusal tightens the budget: `agent::context`).
pub const DEFAULT_CONTEXT: u64 = 32_768;

/// Tokens each message costs besides its text (role and separators), as OpenAI counts them.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// Tokens each tool call in an assistant message costs besides its id, name and arguments.
const CALL_OVERHEAD: u64 = 8;

/// Tokens each offered tool costs besides its JSON (the model sees it rewritten as a type).
const TOOL_OVERHEAD: u64 = 8;

/// Tokens every reply is primed with.
pub const REPLY_PRIMING: u64 = 3;

/// How a model's text is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokenizer {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-4.5, GPT-5, the o-series.
    O200k,
    /// `cl100k_base`: GPT-4 and GPT-3.5.
    Cl100k,
    /// Any other model: one token per 3 bytes, rounded up (code and JSON run nearer 3 bytes a
    /// token than English's 4, and an estimate must not be low).
    Estimate,
}

/// What is known of a model family: its window and how it counts.
struct Family {
    prefix: &'static str,
    context: u64,
    tokenizer: Tokenizer,
}

/// OpenAI's families, the more specific prefix first (`gpt-4o` before `gpt-4`).
const FAMILIES: &[Family] = &[
    family("gpt-4.1", 1_047_576, Tokenizer::O200k),
    family("gpt-4.5", 128_000, Tokenizer::O200k),
    family("gpt-4o", 128_000, Tokenizer::O200k),
    family("chatgpt-4o", 128_000, Tokenizer::O200k),
    family("gpt-4-turbo", 128_000, Tokenizer::Cl100k),
    family("gpt-4-1106", 128_000, Tokenizer::Cl100k),
    family("gpt-4-0125", 128_000, Tokenizer::Cl100k),
    family("gpt-4-32k", 32_768, Tokenizer::Cl100k),
    family("gpt-4", 8_192, Tokenizer::Cl100k),
    family("gpt-3.5-turbo", 16_385, Tokenizer::Cl100k),
    family("gpt-5", 400_000, Tokenizer::O200k),
    family("o1-mini", 128_000, Tokenizer::O200k),
    family("o1-preview", 128_000, Tokenizer::O200k),
    family("o1", 200_000, Tokenizer::O200k),
    family("o3", 200_000, Tokenizer::O200k),
    family("o4", 200_000, Tokenizer::O200k),
];

const fn family(prefix: &'static str, context: u64, tokenizer: Tokenizer) -> Family {
    Family {
        prefix,
        context,
        tokenizer,
    }
}

/// The model's own name: without a router's `openai/` in front or a fine-tune's `ft:…:org`
/// around it.
fn base_name(model: &str) -> &str {
    let model = model.trim();
    let model = match model.strip_prefix("ft:") {
        Some(rest) => rest.split(':').next().unwrap_or(rest),
        None => model,
    };
    model.rsplit('/').next().unwrap_or(model)
}

fn family_of(model: &str) -> Option<&'static Family> {
    let name = base_name(model).to_ascii_lowercase();
    FAMILIES.iter().find(|f| name.starts_with(f.prefix))
}

/// The context window of a model this table knows.
pub fn known_context(model: &str) -> Option<u64> {
    family_of(model).map(|f| f.context)
}

/// The window `provider.context_tokens = "auto"` means for `model`.
pub fn context_for(model: &str) -> u64 {
    known_context(model).unwrap_or(DEFAULT_CONTEXT)
}

/// What is kept free of a window for the answer: a quarter, at most 16,384 tokens.
pub fn answer_reserve(context: u64) -> u64 {
    (context / 4).min(16_384)
}

impl Tokenizer {
    pub fn for_model(model: &str) -> Tokenizer {
        family_of(model).map_or(Tokenizer::Estimate, |f| f.tokenizer)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k_base",
            Tokenizer::Cl100k => "cl100k_base",
            Tokenizer::Estimate => "estimate",
        }
    }

    /// The tokens of `text`. The first use of a BPE builds its tables (a fraction of a second).
    ///
    /// tiktoken-rs panics on some inputs (a run of about a million spaces exhausts its regex
    /// engine); such a text is counted at its byte length, an upper bound, so one odd message
    /// never fails every later turn of its session.
    pub fn count(self, text: &str) -> u64 {
        let counted = std::panic::catch_unwind(|| match self {
            Tokenizer::O200k => Some(tiktoken_rs::o200k_base_singleton().count_ordinary(text)),
            Tokenizer::Cl100k => Some(tiktoken_rs::cl100k_base_singleton().count_ordinary(text)),
            Tokenizer::Estimate => None,
        });
        match counted {
            Ok(Some(n)) => u64::try_from(n).unwrap_or(u64::MAX),
            Ok(None) => estimate(text),
            Err(_) => {
                tracing::warn!(
                    bytes = text.len(),
                    "the tokenizer failed on a text; counting its bytes"
                );
                len(text)
            }
        }
    }

    /// An upper bound on [`count`](Self::count) that costs nothing: a byte-level BPE token
    /// is at least one byte.
    pub fn at_most(self, text: &str) -> u64 {
        match self {
            Tokenizer::Estimate => estimate(text),
            _ => len(text),
        }
    }

    /// Whether [`count`](Self::count) is expensive enough to keep off the async workers.
    pub fn is_costly(self) -> bool {
        self != Tokenizer::Estimate
    }
}

fn len(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

fn estimate(text: &str) -> u64 {
    len(text).div_ceil(3)
}

/// A tool call's arguments as they are sent (raw text that was not JSON stays raw).
pub fn arguments_text(args: &Value) -> std::borrow::Cow<'_, str> {
    match args {
        Value::String(raw) => raw.as_str().into(),
        other => other.to_string().into(),
    }
}

/// What one message costs, its text counted by `text`.
pub fn message_cost(message: &ChatMessage, text: impl Fn(&str) -> u64) -> u64 {
    let body = match message {
        ChatMessage::System(content) | ChatMessage::User(content) => text(content),
        ChatMessage::Assistant {
            text: said,
            tool_calls,
        } => {
            let calls: u64 = tool_calls
                .iter()
                .map(|call| {
                    CALL_OVERHEAD
                        + text(call.id.as_str())
                        + text(&call.name)
                        + text(&arguments_text(&call.args))
                })
                .sum();
            text(said) + calls
        }
        ChatMessage::Tool { call_id, output } => text(call_id.as_str()) + text(output),
    };
    MESSAGE_OVERHEAD + body
}

/// What the offered tools cost, their JSON counted by `text`.
pub fn tools_cost(tools: &[ToolSpec], text: impl Fn(&str) -> u64) -> u64 {
    tools
        .iter()
        .map(|tool| {
            let json = serde_json::json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            });
            TOOL_OVERHEAD + text(&json.to_string())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_have_their_real_windows() {
        assert_eq!(known_context("gpt-4o"), Some(128_000));
        assert_eq!(known_context("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(known_context("gpt-4.1"), Some(1_047_576));
        assert_eq!(known_context("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(known_context("gpt-4"), Some(8_192));
        assert_eq!(known_context("gpt-4-turbo"), Some(128_000));
        assert_eq!(known_context("gpt-3.5-turbo"), Some(16_385));
        assert_eq!(known_context("o1-mini"), Some(128_000));
        assert_eq!(known_context("o3-mini"), Some(200_000));
        assert_eq!(known_context("o4-mini"), Some(200_000));
        assert_eq!(known_context("openai/gpt-4o"), Some(128_000));
        assert_eq!(known_context("ft:gpt-4o-mini:acme::abc"), Some(128_000));
        assert_eq!(known_context("llama3.1:8b"), None);
        assert_eq!(context_for("qwen2.5-coder"), DEFAULT_CONTEXT);
    }

    #[test]
    fn families_choose_their_tokenizer() {
        assert_eq!(Tokenizer::for_model("gpt-4o-mini"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("o3"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("gpt-4"), Tokenizer::Cl100k);
        assert_eq!(Tokenizer::for_model("mistral-small"), Tokenizer::Estimate);
    }

    #[test]
    fn a_real_tokenizer_counts_and_stays_under_its_bound() {
        let text = "fn main() { println!(\"hello, world\"); }\n".repeat(50);
        for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let n = tokenizer.count(&text);
            assert!(n > 0 && n <= tokenizer.at_most(&text), "{tokenizer:?}: {n}");
            // Code is several bytes a token, far from one.
            assert!(n * 2 < len(&text), "{tokenizer:?}: {n} tokens");
        }
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Estimate.count("1234567"), 3);
        assert_eq!(Tokenizer::Estimate.count(""), 0);
    }

    #[test]
    fn a_text_the_tokenizer_cannot_take_is_counted_at_its_bytes() {
        // A million spaces makes tiktoken-rs panic; the count falls back instead.
        let spaces = " ".repeat(1_100_000);
        let n = Tokenizer::O200k.count(&spaces);
        assert!(n > 0 && n <= spaces.len() as u64);
    }

    #[test]
    fn reserve_is_a_quarter_up_to_16k() {
        assert_eq!(answer_reserve(8_192), 2_048);
        assert_eq!(answer_reserve(128_000), 16_384);
    }
}
