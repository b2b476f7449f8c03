//! What each outside agent's tools are and what each field of their input is to the agent
//! that runs them, from the agents' own published schemas (Claude Code's `sdk-tools.d.ts`,
//! Codex's tools, Gemini CLI's and Qwen Code's declarations, Copilot CLI's, opencode's
//! permission requests).
//!
//! A tool is known by its name (any case), its fields by their exact names. One name may serve
//! several agents with different fields (`edit` is Copilot's `path`, Qwen's `file_path`,
//! opencode's `filepath`): its spec lists every agent's, so a call that carries two of them
//! names two paths, and that is seen (`fields.rs`). A tool not listed here, or a string in a
//! field not listed for its tool, is something the catalog cannot read: it asks on the floor.

use crate::protocol::ToolClass;
use Role::*;

/// What one field is to the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The file (or folder) the tool reads or writes: one.
    Path,
    /// The folder a listing or a glob starts in: one.
    Root,
    /// The folder a search reads everything beneath: one (absent, the agent's folder).
    Tree,
    /// The folder that holds the `Path` (opencode's `parentDir`).
    Container,
    /// Files, folders or globs the tool reads: a list, or one.
    Paths,
    /// A glob the tool expands under its root.
    Glob,
    /// Shell code, or an argv.
    Command,
    /// More commands (opencode's `patterns` for `bash`).
    Commands,
    /// The folder a command runs in.
    RunIn,
    /// The program a command runs with (Codex's `shell`).
    Program,
    /// Text typed into a running shell or terminal.
    ShellInput,
    /// A Codex patch.
    Patch,
    /// What a network tool reaches: a URL or a query.
    Target,
    /// Words put to the person, read by the floor for the commands and paths they name.
    Prose,
    /// Paths anywhere inside (Gemini's `additional_permissions`): what the sandbox is asked
    /// to open up for the command.
    NestedPaths,
    /// Asks to run the command outside the agent's sandbox, or with it widened (Claude
    /// Code's `dangerouslyDisableSandbox`, Codex's `sandbox_permissions`,
    /// `with_escalated_permissions`, `requestSandboxBypass`).
    SandboxEscape,
    /// Nothing the agent opens or runs: content, old and new text, a description, a number.
    Text,
}

/// Fields, by name.
pub type Group = &'static [(&'static str, Role)];

/// One tool, as the catalog reads it.
#[derive(Debug)]
pub struct Spec {
    /// Its names, lowercased.
    pub names: &'static [&'static str],
    pub class: ToolClass,
    pub fields: &'static [Group],
    /// Why its calls cannot be read at all, when they cannot (PowerShell): it always asks.
    pub unread: Option<&'static str>,
}

impl Spec {
    /// What the field `name` is, if this tool has it.
    pub fn role(&self, name: &str) -> Option<Role> {
        self.fields
            .iter()
            .flat_map(|group| group.iter())
            .find(|(field, _)| *field == name)
            .map(|(_, role)| *role)
    }

    /// Whether the tool has a field of this role.
    pub fn has(&self, role: Role) -> bool {
        self.fields
            .iter()
            .flat_map(|group| group.iter())
            .any(|(_, r)| *r == role)
    }
}

/// The spec of the tool named `tool` (any case), if the catalog has it.
pub fn spec(tool: &str) -> Option<&'static Spec> {
    let name = tool.to_ascii_lowercase();
    SPECS
        .iter()
        .find(|spec| spec.names.contains(&name.as_str()))
}

/// How a tool the catalog does not know is read for its card (its `command`, its folder),
/// while it always asks.
pub const UNKNOWN: Spec = Spec {
    names: &[],
    class: ToolClass::Exec,
    fields: &[SHELL],
    unread: None,
};

const FILE: Group = &[
    ("file_path", Path),
    ("filePath", Path),
    ("filepath", Path),
    ("path", Path),
    ("absolute_path", Path),
    ("notebook_path", Path),
];

const FILE_TEXT: Group = &[
    ("old_string", Text),
    ("new_string", Text),
    ("oldString", Text),
    ("newString", Text),
    ("old_str", Text),
    ("new_str", Text),
    ("replace_all", Text),
    ("replaceAll", Text),
    ("instruction", Text),
    ("allow_multiple", Text),
    ("expected_replacements", Text),
    ("content", Text),
    ("file_text", Text),
    ("edits", Text),
    ("new_source", Text),
    ("cell_id", Text),
    ("cell_type", Text),
    ("edit_mode", Text),
    ("insert_line", Text),
    ("record_as_artifact", Text),
    ("diff", Text),
    // Gemini CLI and Qwen Code, after the person changed the proposal in their editor.
    ("ai_proposed_content", Text),
    ("modified_by_user", Text),
];

const READ_RANGE: Group = &[
    ("offset", Text),
    ("limit", Text),
    ("pages", Text),
    ("allow_large", Text),
    ("start_line", Text),
    ("end_line", Text),
    ("view_range", Text),
    ("view_range[0]", Text),
    ("view_range[1]", Text),
];

/// opencode's permission request: what it asks for, and an MCP resource's server and uri.
const OPENCODE_FILE: Group = &[
    ("patterns", Paths),
    ("parentDir", Container),
    ("server", Text),
    ("uri", Text),
];

const LISTING: Group = &[
    ("path", Root),
    ("dir_path", Root),
    ("directory", Root),
    ("ignore", Text),
    ("file_filtering_options", Text),
    ("depth", Text),
    ("offset", Text),
    ("limit", Text),
    ("patterns", Paths),
];

const SEARCH: Group = &[
    ("pattern", Text),
    ("query", Text),
    ("path", Tree),
    ("dir_path", Tree),
    ("paths", Paths),
    ("glob", Glob),
    ("include", Glob),
    ("include_pattern", Glob),
    ("exclude", Text),
    ("exclude_pattern", Text),
    ("ignore", Text),
    ("type", Text),
    ("output_mode", Text),
    ("-i", Text),
    ("-n", Text),
    ("-o", Text),
    ("-A", Text),
    ("-B", Text),
    ("-C", Text),
    ("context", Text),
    ("after", Text),
    ("before", Text),
    ("head_limit", Text),
    ("offset", Text),
    ("limit", Text),
    ("multiline", Text),
    ("case_sensitive", Text),
    ("fixed_strings", Text),
    ("names_only", Text),
    ("max_matches_per_file", Text),
    ("total_max_matches", Text),
    ("no_ignore", Text),
    ("respect_git_ignore", Text),
    ("respect_gemini_ignore", Text),
    ("tokensNum", Text),
];

const GLOB: Group = &[
    ("pattern", Glob),
    ("path", Root),
    ("dir_path", Root),
    ("case_sensitive", Text),
    ("respect_git_ignore", Text),
    ("respect_gemini_ignore", Text),
];

const MANY_FILES: Group = &[
    ("include", Paths),
    ("paths", Paths),
    ("exclude", Text),
    ("recursive", Text),
    ("useDefaultExcludes", Text),
    ("file_filtering_options", Text),
];

const SHELL: Group = &[
    ("command", Command),
    ("cmd", Command),
    ("patterns", Commands),
    ("workdir", RunIn),
    ("dir_path", RunIn),
    ("directory", RunIn),
    ("cwd", RunIn),
    ("shell", Program),
    ("additional_permissions", NestedPaths),
    ("description", Text),
    ("justification", Text),
    ("timeout", Text),
    ("timeout_ms", Text),
    ("run_in_background", Text),
    ("is_background", Text),
    ("delay_ms", Text),
    ("yield_time_ms", Text),
    ("max_output_tokens", Text),
    ("tty", Text),
    ("login", Text),
    ("async", Text),
    ("initial_wait", Text),
    ("mode", Text),
    ("detach", Text),
    ("shellId", Text),
    ("shell_id", Text),
    ("dangerouslyDisableSandbox", SandboxEscape),
    ("requestSandboxBypass", SandboxEscape),
    ("requestSandboxPermissive", SandboxEscape),
    ("sandbox_permissions", SandboxEscape),
    ("with_escalated_permissions", SandboxEscape),
    ("prefix_rule", Text),
    ("idle_timeout_ms", Text),
    ("max_events", Text),
];

const SHELL_INPUT: Group = &[
    ("input", ShellInput),
    ("chars", ShellInput),
    ("shellId", Text),
    ("shell_id", Text),
    ("session_id", Text),
    ("sessionId", Text),
    ("delay", Text),
    ("yield_time_ms", Text),
    ("max_output_tokens", Text),
];

const SHELL_SESSION: Group = &[
    ("shellId", Text),
    ("shell_id", Text),
    ("bash_id", Text),
    ("task_id", Text),
    ("session_id", Text),
    ("delay", Text),
    ("filter", Text),
];

const PATCH: Group = &[
    ("command", Patch),
    ("patch", Patch),
    ("patchText", Patch),
    ("input", Patch),
];

const NETWORK: Group = &[
    ("url", Target),
    ("uri", Target),
    ("query", Target),
    ("prompt", Text),
    ("format", Text),
    ("timeout", Text),
    ("offset", Text),
    ("allowed_domains", Text),
    ("blocked_domains", Text),
    ("numResults", Text),
    ("livecrawl", Text),
    ("type", Text),
    ("contextMaxCharacters", Text),
    ("provider", Text),
    ("max_length", Text),
    ("start_index", Text),
    ("raw", Text),
    ("method", Text),
    ("headers", Text),
    ("body", Text),
];

const DECISION: Group = &[
    ("title", Prose),
    ("details_markdown", Prose),
    ("kind", Prose),
    ("command", Command),
    ("cmd", Command),
];

const SUBAGENT: Group = &[
    ("description", Text),
    ("prompt", Text),
    ("subagent_type", Text),
    ("agent_type", Text),
    ("model", Text),
    ("effort", Text),
    ("run_in_background", Text),
    ("name", Text),
    ("team_name", Text),
    ("mode", Text),
    ("isolation", Text),
    ("patterns", Text),
];

const WORK: Group = &[
    ("todos", Text),
    ("merge", Text),
    ("plan", Text),
    ("explanation", Text),
    ("allowedPrompts", Text),
    ("reason", Text),
    ("plan_filename", Path),
    ("questions", Text),
    ("question", Text),
    ("choices", Text),
    ("allow_freeform", Text),
    ("fact", Text),
    ("scope", Text),
    ("subject", Text),
    ("citations", Text),
    ("category", Text),
    ("skill", Text),
    ("name", Text),
    ("args", Text),
    ("title", Text),
    ("summary", Text),
    ("strategic_intent", Text),
    ("intent", Text),
    ("patterns", Text),
];

const TASKS: Group = &[
    ("subject", Text),
    ("description", Text),
    ("activeForm", Text),
    ("metadata", Text),
    ("taskId", Text),
    ("status", Text),
    ("addBlocks", Text),
    ("addBlockedBy", Text),
    ("owner", Text),
    ("blockedBy", Text),
];

const MCP_RESOURCES: Group = &[
    ("server", Text),
    ("server_name", Text),
    ("serverName", Text),
    ("uri", Text),
];

const POWERSHELL: &str =
    "is a PowerShell (or cmd) command, which the safety floor does not read, so it always asks";

/// Every tool the catalog reads.
const SPECS: &[Spec] = &[
    // Reads.
    Spec {
        names: &["read", "read_file", "view", "notebookread", "view_image"],
        class: ToolClass::Read,
        fields: &[FILE, READ_RANGE, OPENCODE_FILE],
        unread: None,
    },
    Spec {
        names: &["read_many_files"],
        class: ToolClass::Read,
        fields: &[MANY_FILES],
        unread: None,
    },
    Spec {
        names: &["list_directory", "ls", "list", "list_dir", "list_files"],
        class: ToolClass::Read,
        fields: &[LISTING],
        unread: None,
    },
    Spec {
        names: &["glob"],
        class: ToolClass::Read,
        fields: &[GLOB],
        unread: None,
    },
    Spec {
        names: &[
            "grep",
            "grep_search",
            "rg",
            "search",
            "grep_files",
            "codesearch",
        ],
        class: ToolClass::Read,
        fields: &[SEARCH],
        unread: None,
    },
    Spec {
        names: &["todowrite", "todoread", "list_bash"],
        class: ToolClass::Read,
        fields: &[WORK],
        unread: None,
    },
    // A language server's answer about one file (Claude Code's `LSP`, opencode's and Copilot
    // CLI's `lsp`): it reads the file.
    Spec {
        names: &["lsp"],
        class: ToolClass::Read,
        fields: &[&[
            ("operation", Text),
            ("filePath", Path),
            ("line", Text),
            ("character", Text),
            ("query", Text),
        ]],
        unread: None,
    },
    // Claude Code's search of its own deferred tools, and Copilot CLI's note to itself.
    Spec {
        names: &["toolsearch"],
        class: ToolClass::Read,
        fields: &[&[("query", Text), ("max_results", Text)]],
        unread: None,
    },
    Spec {
        names: &["think"],
        class: ToolClass::Read,
        fields: &[&[("thought", Text)]],
        unread: None,
    },
    // File changes.
    Spec {
        names: &[
            "edit",
            "replace",
            "create",
            "multiedit",
            "write",
            "notebookedit",
            "notebook_edit",
            "write_file",
            "edit_file",
        ],
        class: ToolClass::Edit,
        fields: &[FILE, FILE_TEXT, OPENCODE_FILE],
        unread: None,
    },
    Spec {
        names: &["str_replace_editor", "str_replace_based_edit_tool"],
        class: ToolClass::Edit,
        fields: &[FILE, FILE_TEXT, READ_RANGE, &[("command", Text)]],
        unread: None,
    },
    Spec {
        names: &["apply_patch", "patch"],
        class: ToolClass::Edit,
        fields: &[PATCH],
        unread: None,
    },
    // The network.
    Spec {
        names: &[
            "webfetch",
            "websearch",
            "web_fetch",
            "web_search",
            "google_web_search",
            "fetch",
            "http_request",
        ],
        class: ToolClass::Network,
        fields: &[NETWORK],
        unread: None,
    },
    // A question to the person (from Countersign's own MCP server).
    Spec {
        names: &["request_approval"],
        class: ToolClass::Decision,
        fields: &[DECISION],
        unread: None,
    },
    // Commands.
    Spec {
        names: &[
            "bash",
            "shell",
            "shell_command",
            "run_shell_command",
            "exec_command",
            "local_shell",
            "monitor",
        ],
        class: ToolClass::Exec,
        fields: &[SHELL],
        unread: None,
    },
    Spec {
        names: &["powershell", "pwsh", "cmd"],
        class: ToolClass::Exec,
        fields: &[SHELL],
        unread: Some(POWERSHELL),
    },
    Spec {
        names: &["write_bash", "write_stdin", "write_shell"],
        class: ToolClass::Exec,
        fields: &[SHELL_INPUT],
        unread: None,
    },
    Spec {
        names: &["write_powershell"],
        class: ToolClass::Exec,
        fields: &[SHELL_INPUT],
        unread: Some(POWERSHELL),
    },
    Spec {
        names: &[
            "read_bash",
            "stop_bash",
            "read_powershell",
            "stop_powershell",
            "list_powershell",
            "bashoutput",
            "killshell",
            "killbash",
            "taskstop",
            "task_stop",
        ],
        class: ToolClass::Exec,
        fields: &[SHELL_SESSION],
        unread: None,
    },
    // The agents' own bookkeeping: subagents, plans, todos, questions, memory, skills.
    Spec {
        names: &["agent", "task", "invoke_agent"],
        class: ToolClass::Exec,
        fields: &[SUBAGENT],
        unread: None,
    },
    Spec {
        names: &[
            "write_todos",
            "todo_write",
            "update_todo",
            "update_plan",
            "exitplanmode",
            "exit_plan_mode",
            "enterplanmode",
            "enter_plan_mode",
            "askuserquestion",
            "ask_user",
            "question",
            "ask_user_question",
            "save_memory",
            "store_memory",
            "skill",
            "activate_skill",
            "report_intent",
            "update_topic",
        ],
        class: ToolClass::Exec,
        fields: &[WORK],
        unread: None,
    },
    Spec {
        names: &[
            "taskcreate",
            "taskget",
            "taskupdate",
            "tasklist",
            "task_create",
            "task_update",
            "task_list",
        ],
        class: ToolClass::Exec,
        fields: &[TASKS],
        unread: None,
    },
    // opencode's question before it reads, writes or runs outside its project.
    Spec {
        names: &["external_directory"],
        class: ToolClass::Exec,
        fields: &[&[
            ("filepath", Path),
            ("parentDir", Container),
            ("command", Command),
            ("directories", Paths),
            ("patterns", Paths),
        ]],
        unread: None,
    },
    Spec {
        names: &["get_internal_docs"],
        class: ToolClass::Exec,
        fields: &[&[("path", Path)]],
        unread: None,
    },
    Spec {
        names: &["fetch_copilot_cli_documentation"],
        class: ToolClass::Exec,
        fields: &[],
        unread: None,
    },
    Spec {
        names: &[
            "listmcpresourcestool",
            "readmcpresourcetool",
            "list_mcp_resources",
            "read_mcp_resource",
        ],
        class: ToolClass::Exec,
        fields: &[MCP_RESOURCES],
        unread: None,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_listed_once_in_lower_case() {
        let mut seen: Vec<&str> = Vec::new();
        for spec in SPECS {
            for name in spec.names {
                assert_eq!(*name, name.to_ascii_lowercase(), "{name}");
                assert!(!seen.contains(name), "{name} is listed twice");
                seen.push(name);
            }
        }
    }

    #[test]
    fn a_spec_names_each_field_once() {
        for spec in SPECS {
            let mut fields: Vec<&str> = Vec::new();
            for (name, _) in spec.fields.iter().flat_map(|g| g.iter()) {
                assert!(
                    !fields.contains(name),
                    "{:?} lists `{name}` twice",
                    spec.names
                );
                fields.push(name);
            }
        }
    }
}
