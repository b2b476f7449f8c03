//! `edit_file {path, old, new}`: replace the one occurrence of `old` in a workspace file.
//! Its card shows the diff of that replacement.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::files::{FileNow, file_now, line_count, plural, unified_diff};
use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolOutput, confine, files, non_empty,
    parse, spec::spec_for,
};
use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

pub struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(description = files::PATH_DOC)]
    path: String,
    /// Exact text to replace; must occur exactly once in the file.
    old: String,
    /// Replacement text.
    new: String,
}

fn args(value: &Value) -> Result<Args, super::ToolError> {
    let args: Args = parse(value)?;
    non_empty("old", &args.old)?;
    non_empty("path", &args.path)?;
    Ok(args)
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Edit
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Replace the one occurrence of the exact text `old` with `new` in a workspace file.",
            self.class(),
        )
    }

    fn check(&self, value: &Value, env: &CheckEnv<'_>) -> Result<(), Refusal> {
        confine::resolve(env.workspace, &args(value)?.path)?;
        Ok(())
    }

    fn subject_kind(&self) -> Option<super::SubjectKind> {
        Some(super::SubjectKind::Path)
    }

    fn subject(&self, value: &Value) -> Option<Subject> {
        files::path_subject(value, false)
    }

    fn card(&self, value: &Value, env: &super::CardEnv<'_>) -> CardText {
        let shown = super::subject(self.name(), value).unwrap_or_default();
        let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("");
        let (old, new) = (text("old"), text("new"));
        let now = file_now(value, env);
        let bound = Some(files::change_binding(value, env, &now));
        let mut summary = format!(
            "edit_file {shown} (replace {} with {})",
            plural(line_count(old), "line"),
            plural(line_count(new), "line")
        );
        let diff = match now {
            FileNow::Text(before) if !old.is_empty() && before.contains(old) => {
                Some(unified_diff(&shown, &before, &before.replacen(old, new, 1)))
            }
            FileNow::Withheld(why) => {
                summary.push_str(&format!("; what it holds now is not shown: {why}"));
                None
            }
            _ => None,
        };
        CardText {
            title: "Edit file".into(),
            summary,
            diff,
            bound,
        }
    }

    fn hidden(&self, value: &Value, workspace: &Path) -> Vec<super::Hidden> {
        files::hidden_of(value, workspace, false)
    }

    fn binds(&self, value: &Value, env: &super::CardEnv<'_>) -> Option<String> {
        Some(files::change_binding(value, env, &file_now(value, env)))
    }

    async fn run(&self, value: &Value, ctx: &ToolContext) -> ToolOutput {
        let edit = async {
            let args = args(value)?;
            files::edit_file(ctx, &args.path, &args.old, &args.new).await
        };
        ToolOutput::from_result(edit.await)
    }
}
