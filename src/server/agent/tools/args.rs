//! The tools' argument shapes: the JSON schemas the model is shown and the parser that enforces them.
//!
//! Parsing *is* the schema check (serde with `deny_unknown_fields`), so `validate` and `execute`
//! can't disagree about what a call means.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ToolError;
use crate::protocol::ToolClass;
use crate::server::agent::provider::ToolSpec;

/// One tool call with its arguments parsed and checked (paths are not yet confined).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    ReadFile {
        path: String,
    },
    ListFiles {
        path: String,
    },
    Search {
        pattern: String,
        path: String,
    },
    WriteFile {
        path: String,
        content: String,
    },
    EditFile {
        path: String,
        old: String,
        new: String,
    },
    Shell {
        command: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old: String,
    new: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellArgs {
    command: String,
}

impl Call {
    pub(crate) fn parse(tool: &str, args: &Value) -> Result<Call, ToolError> {
        if super::class_of(tool).is_none() {
            return Err(ToolError::UnknownTool(tool.to_owned()));
        }
        if !args.is_object() {
            return Err(ToolError::InvalidArgs(
                "the arguments must be a JSON object".into(),
            ));
        }
        let call = match tool {
            "read_file" => {
                let a: PathArgs = de(args)?;
                Call::ReadFile { path: a.path }
            }
            "list_files" => {
                let a: ListArgs = de(args)?;
                Call::ListFiles {
                    path: a.path.unwrap_or_else(|| ".".into()),
                }
            }
            "search" => {
                let a: SearchArgs = de(args)?;
                non_empty("pattern", &a.pattern)?;
                Call::Search {
                    pattern: a.pattern,
                    path: a.path.unwrap_or_else(|| ".".into()),
                }
            }
            "write_file" => {
                let a: WriteArgs = de(args)?;
                Call::WriteFile {
                    path: a.path,
                    content: a.content,
                }
            }
            "edit_file" => {
                let a: EditArgs = de(args)?;
                non_empty("old", &a.old)?;
                Call::EditFile {
                    path: a.path,
                    old: a.old,
                    new: a.new,
                }
            }
            _ => {
                let a: ShellArgs = de(args)?;
                non_empty("command", a.command.trim())?;
                Call::Shell { command: a.command }
            }
        };
        if let Some(path) = call.path() {
            non_empty("path", path)?;
        }
        Ok(call)
    }

    /// The workspace path a file tool works on; `None` for `shell`.
    pub(crate) fn path(&self) -> Option<&str> {
        match self {
            Call::ReadFile { path }
            | Call::ListFiles { path }
            | Call::Search { path, .. }
            | Call::WriteFile { path, .. }
            | Call::EditFile { path, .. } => Some(path),
            Call::Shell { .. } => None,
        }
    }
}

fn de<'a, T: Deserialize<'a>>(args: &'a Value) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))
}

fn non_empty(field: &str, value: &str) -> Result<(), ToolError> {
    if value.is_empty() {
        return Err(ToolError::InvalidArgs(format!("`{field}` is empty")));
    }
    Ok(())
}

/// What the model is told about each tool; every argument is a string.
pub(crate) fn specs() -> Vec<ToolSpec> {
    const PATH: &str = "Path relative to the workspace.";
    const DIR: &str = "Directory relative to the workspace; defaults to `.`.";
    vec![
        spec(
            "read_file",
            "Read a text file in the workspace; long files are truncated.",
            ToolClass::Read,
            &[("path", PATH)],
            &["path"],
        ),
        spec(
            "list_files",
            "List one workspace directory (not recursive), one entry per line, directories ending in `/`.",
            ToolClass::Read,
            &[("path", DIR)],
            &[],
        ),
        spec(
            "search",
            "Find lines containing a plain-text pattern (not a regex) in the workspace's text files, shown as `file:line: text`.",
            ToolClass::Read,
            &[
                ("pattern", "Exact text to look for."),
                (
                    "path",
                    "File or directory to search, relative to the workspace; defaults to `.`.",
                ),
            ],
            &["pattern"],
        ),
        spec(
            "write_file",
            "Create or overwrite a file in the workspace, creating parent directories as needed.",
            ToolClass::Edit,
            &[
                ("path", PATH),
                ("content", "The file's complete new content."),
            ],
            &["path", "content"],
        ),
        spec(
            "edit_file",
            "Replace the one occurrence of the exact text `old` with `new` in a workspace file.",
            ToolClass::Edit,
            &[
                ("path", PATH),
                (
                    "old",
                    "Exact text to replace; must occur exactly once in the file.",
                ),
                ("new", "Replacement text."),
            ],
            &["path", "old", "new"],
        ),
        spec(
            "shell",
            "Run a command with `sh -c` in the workspace and return its output and exit code.",
            ToolClass::Exec,
            &[("command", "The shell command line.")],
            &["command"],
        ),
    ]
}

fn spec(
    name: &'static str,
    description: &'static str,
    class: ToolClass,
    props: &[(&str, &str)],
    required: &[&str],
) -> ToolSpec {
    let properties: Map<String, Value> = props
        .iter()
        .map(|(key, doc)| {
            (
                (*key).to_owned(),
                json!({"type": "string", "description": doc}),
            )
        })
        .collect();
    ToolSpec {
        name,
        description,
        class,
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}
