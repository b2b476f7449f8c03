//! `write_file {path, content}`: create or overwrite a workspace file (folders created).
//! Its card shows the diff against what the file holds now.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::files::{FileNow, file_now, line_count, plural, size_words, unified_diff};
use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolOutput, confine, files, non_empty,
    parse, spec::spec_for,
};
use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(description = files::PATH_DOC)]
    path: String,
    /// The file's complete new content.
    content: String,
}

fn args(value: &Value) -> Result<Args, super::ToolError> {
    let args: Args = parse(value)?;
    non_empty("path", &args.path)?;
    Ok(args)
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Edit
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Create or overwrite a file in the workspace, creating parent directories as needed.",
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
        let content = value.get("content").and_then(Value::as_str).unwrap_or("");
        let lines = plural(line_count(content), "line");
        let now = file_now(value, env);
        let bound = Some(files::change_binding(value, env, &now));
        let (summary, diff) = match now {
            FileNow::Text(old) => (
                format!(
                    "write_file {shown} ({lines}, replaces {})",
                    plural(line_count(&old), "line")
                ),
                Some(unified_diff(&shown, &old, content)),
            ),
            FileNow::TooLarge(bytes) => (
                format!(
                    "write_file {shown} ({lines}, replaces a {} file too large to diff)",
                    size_words(bytes)
                ),
                None,
            ),
            FileNow::Missing => (
                format!("write_file {shown} ({lines}, new file)"),
                Some(unified_diff(&shown, "", content)),
            ),
            FileNow::Withheld(why) => (
                format!("write_file {shown} ({lines}; what it holds now is not shown: {why})"),
                None,
            ),
        };
        CardText {
            title: "Write file".into(),
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
        let write = async {
            let args = args(value)?;
            files::write_file(ctx, &args.path, &args.content).await
        };
        ToolOutput::from_result(write.await)
    }
}
