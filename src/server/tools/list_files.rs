//! `list_files {path?}`: one workspace folder, not recursive, directories ending in `/`.

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

pub struct ListFiles;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    #[schemars(with = "String", description = files::DIR_DOC)]
    path: Option<String>,
}

fn path(value: &Value) -> Result<String, super::ToolError> {
    let args: Args = parse(value)?;
    let path = args.path.unwrap_or_else(|| ".".into());
    non_empty("path", &path)?;
    Ok(path)
}

#[async_trait]
impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "list_files"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Read
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "List one workspace directory (not recursive), one entry per line, directories ending in `/`.",
            self.class(),
        )
    }

    fn check(&self, value: &Value, env: &CheckEnv<'_>) -> Result<(), Refusal> {
        confine::resolve(env.workspace, &path(value)?)?;
        Ok(())
    }

    fn subject_kind(&self) -> Option<super::SubjectKind> {
        Some(super::SubjectKind::Path)
    }

    fn subject(&self, value: &Value) -> Option<Subject> {
        files::path_subject(value, true)
    }

    fn card(&self, value: &Value, env: &super::CardEnv<'_>) -> CardText {
        files::reading_card(self.name(), value, env, true)
    }

    /// Where its path really leads, so an approved floor card reads the file it named.
    fn binds(&self, value: &Value, env: &super::CardEnv<'_>) -> Option<String> {
        Some(files::real_path_binding(value, env.workspace, true))
    }

    fn hidden(&self, value: &Value, workspace: &Path) -> Vec<super::Hidden> {
        files::hidden_of(value, workspace, true)
    }

    async fn run(&self, value: &Value, ctx: &ToolContext) -> ToolOutput {
        let list = async { files::list_files(ctx, &path(value)?).await };
        ToolOutput::from_result(list.await)
    }
}
