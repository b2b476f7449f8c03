//! `read_file {path}`: a text file in the workspace, cut at the output limit.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolOutput, confine, files, non_empty,
    parse, spec::spec_for,
};
use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

pub struct ReadFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(description = files::PATH_DOC)]
    path: String,
}

fn args(value: &Value) -> Result<Args, super::ToolError> {
    let args: Args = parse(value)?;
    non_empty("path", &args.path)?;
    Ok(args)
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Read
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Read a text file in the workspace; long files are truncated.",
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
        files::reading_card(self.name(), value, env, false)
    }

    /// Where its path really leads, so an approved floor card reads the file it named.
    fn binds(&self, value: &Value, env: &super::CardEnv<'_>) -> Option<String> {
        Some(files::real_path_binding(value, env.workspace, false))
    }

    fn hidden(&self, value: &Value, workspace: &Path) -> Vec<super::Hidden> {
        files::hidden_of(value, workspace, false)
    }

    async fn run(&self, value: &Value, ctx: &ToolContext) -> ToolOutput {
        let read = async { files::read_file(ctx, &args(value)?.path).await };
        ToolOutput::from_result(read.await)
    }
}
