//! `request_approval {kind, title, proposal, context?}`: the agent's own checkpoint, a decision
//! put to the person before it goes on (every mode but yolo).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CardText, CheckEnv, GateStyle, Refusal, Tool, ToolContext, ToolError, ToolOutput, parse,
    spec::spec_for,
};
use crate::protocol::{DecisionKind, Mode, ToolClass};
use crate::server::conversation::ToolSpec;

pub const CHECKPOINT_TOOL: &str = "request_approval";

/// Added to the system prompt whenever checkpoints are offered.
const PROMPT: &str = "\n\nBefore a consequential decision — choosing the target column, a data preparation plan, \
a model shortlist, or an expensive run — put it to the person with request_approval (kind: target_column, prep_plan, \
model_shortlist, expensive_run or other; a one-line title; the proposal in markdown) and follow the answer. \
If the result says nobody answered in time, you may proceed, but say clearly in your reply that the decision is UNAPPROVED.";

/// A checkpoint's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub kind: DecisionKind,
    pub title: String,
    pub proposal: String,
}

/// Missing reads as empty: a checkpoint is read leniently (an unknown kind is `other`), and
/// the model is told what a good one holds.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "checkpoint_kinds")]
    kind: Option<String>,
    /// one line
    #[schemars(with = "String")]
    title: Option<String>,
    /// the proposal, in markdown
    #[schemars(with = "String")]
    proposal: Option<String>,
    /// optional background
    #[serde(default)]
    #[schemars(with = "String")]
    context: Option<String>,
}

/// Every kind an agent may ask about: all but `plan` (only `exit_plan` makes those).
fn checkpoint_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let kinds: Vec<&str> = DecisionKind::ALL
        .into_iter()
        .filter(|k| *k != DecisionKind::Plan)
        .map(DecisionKind::as_str)
        .collect();
    schemars::json_schema!({"type": "string", "enum": kinds})
}

impl Checkpoint {
    /// Reads and checks a checkpoint's arguments.
    pub fn parse(value: &Value) -> Result<Checkpoint, ToolError> {
        let args: Args = parse(value)?;
        let title = args.title.as_deref().unwrap_or_default().trim();
        if title.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`title` must be a non-empty string".into(),
            ));
        }
        // A kind it does not know is `other`; so is `plan`: plan cards come only from
        // `exit_plan` (approving one leaves plan mode, which a checkpoint must never do).
        let kind = DecisionKind::parse(args.kind.as_deref().unwrap_or_default().trim())
            .filter(|k| *k != DecisionKind::Plan)
            .unwrap_or(DecisionKind::Other);
        let mut proposal = args
            .proposal
            .as_deref()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let context = args.context.as_deref().unwrap_or_default().trim();
        if !context.is_empty() {
            proposal.push_str("\n\n");
            proposal.push_str(context);
        }
        Ok(Checkpoint {
            kind,
            title: title.to_owned(),
            proposal,
        })
    }
}

pub struct RequestApproval;

#[async_trait]
impl Tool for RequestApproval {
    fn name(&self) -> &'static str {
        CHECKPOINT_TOOL
    }

    fn class(&self) -> ToolClass {
        ToolClass::Decision
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            CHECKPOINT_TOOL,
            "Ask the person to approve a consequential decision before going on; returns their answer.",
            ToolClass::Decision,
        )
    }

    fn offered_in(&self, mode: Mode) -> bool {
        mode != Mode::Yolo
    }

    fn prompt(&self) -> &'static str {
        PROMPT
    }

    fn check(&self, value: &Value, _env: &CheckEnv<'_>) -> Result<(), Refusal> {
        Checkpoint::parse(value)?;
        Ok(())
    }

    fn gate(&self) -> GateStyle {
        GateStyle::Checkpoint
    }

    fn card(&self, value: &Value, _env: &super::CardEnv<'_>) -> CardText {
        let title = value.get("title").and_then(Value::as_str).unwrap_or("");
        CardText {
            title: title.to_owned(),
            summary: title.to_owned(),
            diff: None,
            bound: None,
        }
    }

    async fn run(&self, _value: &Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::error("request_approval is a question for the person; it is not run")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checkpoints_are_validated() {
        let c = Checkpoint::parse(
            &json!({"kind": "prep_plan", "title": "Drop nulls", "proposal": "**x**"}),
        )
        .unwrap();
        assert_eq!(c.kind, DecisionKind::PrepPlan);
        let c = Checkpoint::parse(&json!({"kind": "weird", "title": "T", "proposal": ""})).unwrap();
        assert_eq!(c.kind, DecisionKind::Other);
        let c = Checkpoint::parse(&json!({"kind": "plan", "title": "T", "proposal": ""})).unwrap();
        assert_eq!(
            c.kind,
            DecisionKind::Other,
            "only exit_plan makes a plan card"
        );
        assert!(Checkpoint::parse(&json!({"kind": "plan", "title": " ", "proposal": ""})).is_err());
        assert!(Checkpoint::parse(&json!({"title": "T", "bogus": 1})).is_err());
    }
}
