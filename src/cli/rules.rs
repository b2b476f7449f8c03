//! `countersign rules …`: list the grants Allow always created (those in force, and those
//! lately used up or expired, saying so), and revoke one.

use serde_json::{Value, json};

use super::client::{CliError, Client, typed};
use super::table::{self, Table, clean, clean_within};
use super::{IdMatch, RulesCommand, match_id};
use crate::protocol::{Rule, RuleScope, SessionId};
use crate::text::short_id;

pub async fn run(client: &Client, json: bool, command: RulesCommand) -> Result<(), CliError> {
    match command {
        RulesCommand::List => list(client, json).await,
        RulesCommand::Revoke { rule_id } => revoke(client, json, &rule_id).await,
    }
}

async fn fetch(client: &Client) -> Result<(Value, Vec<Rule>), CliError> {
    let raw = client.get(&["rules"], &[]).await?;
    let rules = typed(raw.clone(), "the rule list")?;
    Ok((raw, rules))
}

async fn list(client: &Client, json: bool) -> Result<(), CliError> {
    let (raw, rules) = fetch(client).await?;
    if json {
        println!("{}", table::pretty(&raw));
    } else if rules.is_empty() {
        println!("no standing rules");
    } else {
        println!(
            "{}",
            rules_table(&rules, crate::protocol::Timestamp::now_ms()).render()
        );
    }
    Ok(())
}

fn rules_table(rules: &[Rule], now: i64) -> Table {
    let mut table = Table::new(&[
        "ID",
        "TOOL",
        "PATTERN",
        "SCOPE",
        "SOURCE",
        "USES",
        "CREATED",
        "LAST USED",
        "EXPIRES",
        "STATUS",
    ]);
    for rule in rules {
        table.row(vec![
            short_id(rule.id.as_str()),
            clean(&rule.tool),
            clean_within(&rule.pattern, 48),
            scope_label(rule),
            clean(rule.source.as_deref().unwrap_or("built-in")),
            uses_label(rule),
            table::relative(&rule.created_at, now),
            when_or_never(rule.last_used_at.as_ref(), now),
            when_or_never(rule.expires_at.as_ref(), now),
            rule.lapsed
                .map_or("in force", <&'static str>::from)
                .replace('_', " "),
        ]);
    }
    table
}

/// Uses so far; with a limit, of how many (`3/10`).
fn uses_label(rule: &Rule) -> String {
    match rule.max_uses {
        Some(max) => format!("{}/{max}", rule.uses),
        None => rule.uses.to_string(),
    }
}

fn when_or_never(at: Option<&crate::protocol::Timestamp>, now: i64) -> String {
    at.map_or_else(|| "never".to_owned(), |t| table::relative(t, now))
}

fn scope_label(rule: &Rule) -> String {
    match (rule.scope, rule.session_id.as_ref().map(SessionId::as_str)) {
        (RuleScope::Workspace, _) => RuleScope::Workspace.as_str().to_owned(),
        (RuleScope::Session, Some(sid)) => format!("session {}", short_id(sid)),
        (RuleScope::Session, None) => "session".to_owned(),
    }
}

async fn revoke(client: &Client, json: bool, wanted: &str) -> Result<(), CliError> {
    let (_, rules) = fetch(client).await?;
    let rule = match match_id(&rules, |r| r.id.as_str(), wanted)? {
        IdMatch::One(rule) => rule,
        IdMatch::None => {
            return Err(CliError::NoMatch(format!(
                "no standing rule matches `{}` (`countersign rules list` shows them)",
                clean(wanted)
            )));
        }
        IdMatch::Many(found) => {
            return Err(CliError::NoMatch(format!(
                "`{}` matches {} rules; give more of the id",
                clean(wanted),
                found.len()
            )));
        }
    };
    client.delete(&["rules", rule.id.as_str()]).await?;
    if json {
        println!(
            "{}",
            table::pretty(&json!({"id": rule.id, "revoked": true}))
        );
    } else {
        println!(
            "revoked rule {}: {} {} ({})",
            short_id(rule.id.as_str()),
            clean(&rule.tool),
            clean_within(&rule.pattern, 48),
            scope_label(rule)
        );
    }
    Ok(())
}
