//! `countersign audit …`: export the hash-chained audit log (paging until empty) and ask the
//! server to verify the chain.

use serde_json::Value;

use super::AuditCommand;
use super::client::{CliError, Client, typed};
use super::table::{self, Table, clean, clean_within};
use crate::protocol::{AuditEntry, AuditVerdict};
use crate::text::short_id;

pub async fn run(client: &Client, json: bool, command: AuditCommand) -> Result<(), CliError> {
    match command {
        AuditCommand::Export { jsonl } => export(client, json, jsonl).await,
        AuditCommand::Verify => verify(client, json).await,
    }
}

async fn export(client: &Client, json: bool, jsonl: bool) -> Result<(), CliError> {
    if json && jsonl {
        return Err(CliError::Usage(
            "choose one of --json (an array) and --jsonl (one entry per line)".into(),
        ));
    }
    let entries = fetch_all(client).await?;
    if json {
        println!("{}", table::pretty(&Value::Array(entries.raw)));
    } else if jsonl {
        for entry in &entries.raw {
            println!("{entry}");
        }
    } else if entries.typed.is_empty() {
        println!("the audit log is empty");
    } else {
        println!("{}", audit_table(&entries.typed).render());
    }
    Ok(())
}

/// The whole log: the server's JSON (for `--json`/`--jsonl`) and the same entries typed.
struct Entries {
    raw: Vec<Value>,
    typed: Vec<AuditEntry>,
}

/// `GET /api/v1/audit?after=<n>` until a page comes back empty.
async fn fetch_all(client: &Client) -> Result<Entries, CliError> {
    let mut all = Entries {
        raw: Vec::new(),
        typed: Vec::new(),
    };
    let mut after = 0u64;
    loop {
        let after_text = after.to_string();
        let page = client.get(&["audit"], &[("after", &after_text)]).await?;
        let raw: Vec<Value> = typed(page.clone(), "an audit page")?;
        let entries: Vec<AuditEntry> = typed(page, "an audit page")?;
        let Some(last) = entries.last().map(|e| e.n) else {
            return Ok(all);
        };
        if last <= after {
            return Err(CliError::Protocol {
                status: 200,
                detail: format!("the audit page after entry {after} did not move forward"),
            });
        }
        after = last;
        all.raw.extend(raw);
        all.typed.extend(entries);
    }
}

fn audit_table(entries: &[AuditEntry]) -> Table {
    let mut table = Table::new(&["N", "AT (UTC)", "ACTOR", "ACTION", "SUBJECT", "DETAIL"]);
    for entry in entries {
        table.row(vec![
            entry.n.to_string(),
            table::utc(&entry.at),
            clean_within(&entry.actor, 24),
            clean(&entry.action),
            subject_label(&entry.subject),
            clean_within(&detail_text(&entry.detail), 80),
        ]);
    }
    table
}

/// A UUID subject shortened like every other id the CLI shows; anything else kept readable.
fn subject_label(subject: &str) -> String {
    let is_uuid = subject.len() == 36 && subject.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if is_uuid {
        short_id(subject)
    } else {
        clean_within(subject, 24)
    }
}

/// `key=value …` with nulls left out and long values cut (digests, ids), else compact JSON.
fn detail_text(detail: &Value) -> String {
    match detail {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}={}", clean_within(&value_text(v), 20)))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn verify(client: &Client, json: bool) -> Result<(), CliError> {
    let raw = client.get(&["audit", "verify"], &[]).await?;
    let verdict: AuditVerdict = typed(raw.clone(), "the audit verdict")?;
    if json {
        println!("{}", table::pretty(&raw));
    }
    if !verdict.ok {
        return Err(CliError::AuditBroken(broken_message(&verdict)));
    }
    if !json {
        println!(
            "audit log intact: {} entries, hash chain verified",
            verdict.entries
        );
    }
    Ok(())
}

fn broken_message(verdict: &AuditVerdict) -> String {
    match verdict.first_bad {
        Some(n) => format!(
            "the audit log's hash chain is broken: entry {n} is the first bad one (of {} entries)",
            verdict.entries
        ),
        None => format!(
            "the audit log did not verify ({} entries; the server named no bad entry)",
            verdict.entries
        ),
    }
}
