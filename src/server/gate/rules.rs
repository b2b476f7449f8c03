//! Standing rules (from Allow always): which calls a rule covers, and the default pattern a
//! card offers. File tools match a path glob; `shell` matches a command exactly, or by prefix
//! when the pattern ends in `*` (`echo *` covers every `echo …`).

use globset::Glob;
use serde_json::Value;

use super::shell_syntax;
use crate::protocol::{Rule, RuleScope};
use crate::server::store::{Store, StoreError};
use crate::server::tools::{self, Subject, SubjectKind};

/// Whether a prefix rule may cover `rest` after the prefix: the whole command must read as
/// one plain simple command (no list, pipe, substitution or redirect), so `echo *` never lets
/// `echo ok; rm -rf x` through.
fn one_plain_command(command: &str) -> bool {
    match shell_syntax::read(command) {
        Ok(script) => {
            script.redirect_targets.is_empty()
                && script.commands.len() == 1
                && script.commands.iter().all(|c| !c.stdin_fed)
        }
        Err(_) => false,
    }
}

/// A standing rule in force that covers this call in this session, if any.
pub async fn matching(
    store: &dyn Store,
    session_id: &str,
    tool: &str,
    args: &Value,
) -> Result<Option<Rule>, StoreError> {
    let subject = tools::get(tool).and_then(|t| t.subject(args));
    matching_subject(store, session_id, tool, subject.as_ref()).await
}

/// A standing rule in force that covers a call on `subject` in this session, if any (outside
/// agents' calls, whose subjects `tools::outside` reads).
pub async fn matching_subject(
    store: &dyn Store,
    session_id: &str,
    tool: &str,
    subject: Option<&Subject>,
) -> Result<Option<Rule>, StoreError> {
    let Some(subject) = subject else {
        return Ok(None);
    };
    let rules = store.list_rules().await?;
    Ok(rules.into_iter().find(|rule| {
        let in_scope = match rule.scope {
            RuleScope::Workspace => true,
            RuleScope::Session => rule.session_id.as_deref() == Some(session_id),
        };
        in_scope && rule.tool == tool && covers_subject(rule, subject)
    }))
}

/// Whether `rule` covers this call.
pub fn covers(rule: &Rule, tool: &str, args: &Value) -> bool {
    rule.tool == tool
        && tools::get(tool)
            .and_then(|t| t.subject(args))
            .is_some_and(|subject| covers_subject(rule, &subject))
}

/// Whether `rule`'s pattern covers `subject`.
fn covers_subject(rule: &Rule, subject: &Subject) -> bool {
    match subject {
        Subject::Command(command) => {
            let command = command.trim();
            match rule.pattern.strip_suffix('*') {
                Some(prefix) => {
                    command.starts_with(prefix)
                        && !prefix.trim().is_empty()
                        && one_plain_command(command)
                }
                None => command == rule.pattern.trim(),
            }
        }
        Subject::Path(path) => Glob::new(&rule.pattern)
            .map(|g| g.compile_matcher().is_match(path.trim_start_matches("./")))
            .unwrap_or(false),
    }
}

/// The pattern Allow always proposes for a subject: the exact path, or the command's first
/// word and `*`.
pub fn default_pattern_of(subject: &Subject) -> Option<String> {
    match subject {
        Subject::Command(command) => {
            let first = command.split_whitespace().next()?;
            Some(format!("{first} *"))
        }
        Subject::Path(path) => Some(path.clone()),
    }
}

/// The pattern Allow always proposes: the exact path, or the command's first word and `*`.
pub fn default_pattern(tool: &str, args: &Value) -> Option<String> {
    default_pattern_of(&tools::get(tool)?.subject(args)?)
}

/// Checks a pattern a person typed for a rule.
pub fn validate_pattern(tool: &str, pattern: &str) -> Result<(), String> {
    let trimmed = pattern.trim();
    if trimmed.is_empty() || trimmed == "*" || trimmed == "**" {
        return Err("the rule pattern must not be empty or match everything".into());
    }
    let kind = match tools::get(tool) {
        Some(builtin) => builtin.subject_kind(),
        None => Some(tools::outside::subject_kind(tool)),
    };
    if kind == Some(SubjectKind::Command) {
        return Ok(());
    }
    Glob::new(trimmed)
        .map(|_| ())
        .map_err(|e| format!("the rule pattern `{trimmed}` is not a valid glob: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RuleScope;
    use serde_json::json;

    fn rule(tool: &str, pattern: &str) -> Rule {
        Rule {
            id: "r".into(),
            tool: tool.into(),
            pattern: pattern.into(),
            scope: RuleScope::Session,
            session_id: None,
            created_at: crate::protocol::Timestamp::default(),
            created_by_approval: None,
            uses: 0,
            last_used_at: None,
            expires_at: None,
        }
    }

    #[test]
    fn command_rules_match_exactly_or_by_prefix() {
        let echo = rule("shell", "echo *");
        assert!(covers(&echo, "shell", &json!({"command": "echo hi"})));
        assert!(!covers(&echo, "shell", &json!({"command": "rm x"})));
        for chained in [
            "echo ok; touch x",
            "echo a && rm b",
            "echo $(rm x)",
            "echo `id`",
            "echo a | sh",
            "echo a > f",
            "echo a\nrm b",
        ] {
            assert!(
                !covers(&echo, "shell", &json!({"command": chained})),
                "{chained}"
            );
        }
        assert!(!covers(&echo, "write_file", &json!({"path": "echo"})));
        let exact = rule("shell", "ls -la");
        assert!(covers(&exact, "shell", &json!({"command": "ls -la"})));
        assert!(!covers(&exact, "shell", &json!({"command": "ls -la /"})));
    }

    #[test]
    fn path_rules_are_globs_over_normalized_paths() {
        let docs = rule("write_file", "docs/*.md");
        assert!(covers(
            &docs,
            "write_file",
            &json!({"path": "docs/a.md", "content": ""})
        ));
        assert!(covers(
            &docs,
            "write_file",
            &json!({"path": "./docs/x/../b.md", "content": ""})
        ));
        assert!(!covers(
            &docs,
            "write_file",
            &json!({"path": "src/a.md", "content": ""})
        ));
        assert!(!covers(
            &docs,
            "edit_file",
            &json!({"path": "docs/a.md", "old": "a", "new": "b"})
        ));
    }

    #[test]
    fn defaults_and_validation() {
        assert_eq!(
            default_pattern("shell", &json!({"command": "echo hi there"})).unwrap(),
            "echo *"
        );
        assert_eq!(
            default_pattern("write_file", &json!({"path": "notes.md"})).unwrap(),
            "notes.md"
        );
        assert!(validate_pattern("write_file", "a[").is_err());
        assert!(validate_pattern("shell", "  ").is_err());
        assert!(validate_pattern("write_file", "**").is_err());
        assert!(validate_pattern("write_file", "docs/**").is_ok());
    }
}
