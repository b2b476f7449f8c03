//! `config_set {key, value}`: the agent changes one setting of this server. Class config:
//! asks in ask and auto_edit, runs in yolo, refused in plan; protected keys are refused
//! outright in every mode. Every change is audited as the agent's.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::spec::spec_for;
use super::{CardText, CheckEnv, Refusal, Tool, ToolContext, ToolError, ToolOutput, parse};
use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

pub const CONFIG_TOOL: &str = "config_set";

/// The keys the agent's `config_set` may change: limits on its own work, which it may lower
/// and never raise (`live::change::check_for_agent`). Every other key — provider kind, model
/// and endpoint, and any key added later — is refused to the agent in every mode.
pub const AGENT_KEYS: [&str; 5] = [
    "tools.shell_timeout_secs",
    "tools.output_limit_bytes",
    "tools.max_parallel",
    "provider.request_timeout_secs",
    "provider.max_retries",
];

/// Missing reads as empty (or null), so the model hears the same plain refusal either way.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(with = "String")]
    key: Option<String>,
    /// the new value: a string, number, boolean or list
    #[schemars(with = "Value")]
    value: Option<Value>,
}

/// The key and value a call asks for, checked for shape (the value itself is the config's to
/// check).
pub fn key_and_value(value: &Value) -> Result<(String, Value), ToolError> {
    let args: Args = parse(value)?;
    let key = args.key.as_deref().unwrap_or_default().trim();
    if key.is_empty() {
        return Err(ToolError::InvalidArgs(
            "`key` must be a non-empty string".into(),
        ));
    }
    match args.value {
        None | Some(Value::Null) => Err(ToolError::InvalidArgs("`value` is required".into())),
        Some(value) => Ok((key.to_owned(), value)),
    }
}

pub struct ConfigSet;

#[async_trait]
impl Tool for ConfigSet {
    fn name(&self) -> &'static str {
        CONFIG_TOOL
    }

    fn class(&self) -> ToolClass {
        ToolClass::Config
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            CONFIG_TOOL,
            "Lower one of this server's limits on your own work: tools.shell_timeout_secs, tools.output_limit_bytes, tools.max_parallel, provider.request_timeout_secs or provider.max_retries. Raising a limit, and every other key, is refused.",
            ToolClass::Config,
        )
    }

    fn check(&self, args: &Value, env: &CheckEnv<'_>) -> Result<(), Refusal> {
        let (key, value) = key_and_value(args)?;
        match env.settings {
            Some(settings) => settings.check(&key, &value),
            None => Ok(()),
        }
    }

    fn card(&self, args: &Value, _env: &super::CardEnv<'_>) -> CardText {
        let key = args.get("key").and_then(Value::as_str).unwrap_or("");
        let value = args.get("value").map(Value::to_string).unwrap_or_default();
        CardText {
            title: "Config".into(),
            summary: format!("config_set {key} = {value}"),
            diff: None,
            bound: None,
        }
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> ToolOutput {
        let Some(settings) = &ctx.settings else {
            return ToolOutput::error("the configuration cannot be changed from here");
        };
        let (key, value) = match key_and_value(args) {
            Ok(kv) => kv,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let via = format!("config_set in session {}", settings.session_id);
        match settings.settings.set_as_agent(&key, &value, &via).await {
            Ok(said) => ToolOutput::ok(said),
            Err(why) => ToolOutput::error(why),
        }
    }
}
