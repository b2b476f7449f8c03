//! `exit_plan {plan}`: in plan mode, the agent proposes its plan; approving the card leaves
//! plan mode and the turn carries the plan out.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CardText, CheckEnv, GateStyle, Refusal, Tool, ToolContext, ToolError, ToolOutput, parse,
    spec::spec_for,
};
use crate::protocol::{Mode, ToolClass};
use crate::server::conversation::ToolSpec;

pub const EXIT_PLAN_TOOL: &str = "exit_plan";

/// Added to the system prompt in plan mode: how to leave it.
const PROMPT: &str = "\n\nYou are in plan mode: you may read, but nothing that changes files or runs commands will run. \
Investigate, then propose your plan with exit_plan (the plan in markdown). If the person approves it, the session leaves \
plan mode and you carry the plan out in the same turn; if they deny it, revise the plan using their reason.";

/// Missing reads as empty, so the model hears "`plan` must be a non-empty string" either way.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// the plan, in markdown
    #[schemars(with = "String")]
    plan: Option<String>,
}

/// The plan a call proposes, checked (non-empty, trimmed).
pub fn plan_of(value: &Value) -> Result<String, ToolError> {
    let args: Args = parse(value)?;
    let plan = args.plan.as_deref().unwrap_or_default().trim();
    if plan.is_empty() {
        return Err(ToolError::InvalidArgs(
            "`plan` must be a non-empty string".into(),
        ));
    }
    Ok(plan.to_owned())
}

pub struct ExitPlan;

#[async_trait]
impl Tool for ExitPlan {
    fn name(&self) -> &'static str {
        EXIT_PLAN_TOOL
    }

    fn class(&self) -> ToolClass {
        ToolClass::Decision
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            EXIT_PLAN_TOOL,
            "Propose your plan; if the person approves, plan mode ends and you carry it out.",
            ToolClass::Decision,
        )
    }

    fn offered_in(&self, mode: Mode) -> bool {
        mode == Mode::Plan
    }

    fn prompt(&self) -> &'static str {
        PROMPT
    }

    fn refused_in(&self, mode: Mode) -> Option<String> {
        // Read by the agent and shown in the call's row: a plain sentence either can act on.
        (mode != Mode::Plan).then(|| {
            format!(
                "A plan is proposed only in Plan mode, and this session is in {} mode: go ahead without one, or ask the person to switch to Plan first.",
                mode.label()
            )
        })
    }

    fn check(&self, value: &Value, _env: &CheckEnv<'_>) -> Result<(), Refusal> {
        plan_of(value)?;
        Ok(())
    }

    fn gate(&self) -> GateStyle {
        GateStyle::Plan
    }

    fn card(&self, _value: &Value, _env: &super::CardEnv<'_>) -> CardText {
        CardText {
            title: "Plan".into(),
            summary: "Leave plan mode and carry out this plan".into(),
            diff: None,
            bound: None,
        }
    }

    async fn run(&self, _value: &Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::error("exit_plan is a question for the person; it is not run")
    }
}
