//! Every tool, in the order the model is told about them. Adding a tool is one file and one
//! line here.

use super::Tool;

static TOOLS: [&dyn Tool; 9] = [
    &super::read_file::ReadFile,
    &super::list_files::ListFiles,
    &super::search::Search,
    &super::write_file::WriteFile,
    &super::edit_file::EditFile,
    &super::shell::Shell,
    &super::config_set::ConfigSet,
    &super::request_approval::RequestApproval,
    &super::exit_plan::ExitPlan,
];

/// Every tool.
pub fn all() -> &'static [&'static dyn Tool] {
    &TOOLS
}

/// The tool the agent names, if there is one.
pub fn get(name: &str) -> Option<&'static dyn Tool> {
    TOOLS.iter().copied().find(|t| t.name() == name)
}

/// Every tool's name.
pub fn names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name()).collect()
}
