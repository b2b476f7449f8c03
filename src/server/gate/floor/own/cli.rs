//! Commands that change Countersign's own state from the agent's shell: the `countersign` CLI
//! (it reads the token from the data dir and acts as the person: `approvals approve`,
//! `config set`, `passkey reset`, `token create`, a second `serve` on the same data), and,
//! when the store is PostgreSQL, its clients.
//!
//! Only the CLI's read-only commands stay off the floor, and only in a form that cannot be
//! read as anything else; every other spelling asks (when in doubt, the floor).

use super::super::super::shell_syntax::Word;
use super::super::pattern::{program_name, same_program};

/// The CLI's commands that change nothing: `(command, subcommand)`.
const READ_ONLY: [(&str, &str); 9] = [
    ("approvals", "list"),
    ("rules", "list"),
    ("audit", "export"),
    ("audit", "verify"),
    ("token", "list"),
    ("tokens", "list"),
    ("config", "path"),
    ("config", "get"),
    ("config", "show"),
];

/// PostgreSQL's clients and tools.
const POSTGRES_CLIENTS: [&str; 17] = [
    "psql",
    "pgcli",
    "pg_dump",
    "pg_dumpall",
    "pg_restore",
    "pg_basebackup",
    "pg_receivewal",
    "pg_recvlogical",
    "pg_amcheck",
    "pg_ctl",
    "createdb",
    "dropdb",
    "createuser",
    "dropuser",
    "vacuumdb",
    "reindexdb",
    "clusterdb",
];

/// Why the command `words` (program first) changes Countersign's own state; `None` when it
/// cannot. `postgres`: the store is a PostgreSQL database.
pub fn command_hit(words: &[Word], postgres: bool) -> Option<String> {
    let program = words.first()?;
    let lower = program.text.to_lowercase();
    let name = program_name(&lower);
    let name = name.strip_suffix(".exe").unwrap_or(name);
    if same_program("countersign", name) {
        return countersign_hit(&words[1..]);
    }
    (postgres && POSTGRES_CLIENTS.iter().any(|c| same_program(c, name))).then(|| {
        format!(
            "runs `{name}`, a PostgreSQL client, and Countersign's own database is on PostgreSQL (built in)"
        )
    })
}

/// Why a `countersign` command line (its arguments) may change state.
fn countersign_hit(args: &[Word]) -> Option<String> {
    if args.iter().any(|a| a.dynamic) {
        return Some(
            "runs `countersign` with arguments only known when it runs, which could change Countersign's own state (built in)"
                .into(),
        );
    }
    let operands: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .filter(|a| !a.starts_with('-'))
        .collect();
    let flags: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .filter(|a| a.starts_with('-'))
        .collect();
    let only_help = |flags: &[&str]| {
        !flags.is_empty()
            && flags
                .iter()
                .all(|f| matches!(*f, "--help" | "-h" | "--version" | "-V"))
    };
    let read_only = match operands.as_slice() {
        [] => only_help(&flags),
        ["help", ..] => true,
        [command, sub, ..] => READ_ONLY.contains(&(*command, *sub)),
        [_] => only_help(&flags),
    };
    (!read_only).then(|| {
        // The command as far as it names one: its leading words before any option.
        let shown = args
            .iter()
            .map(|a| a.text.as_str())
            .take_while(|a| !a.starts_with('-'))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let shown = if shown.is_empty() {
            "countersign".to_owned()
        } else {
            format!("countersign {shown}")
        };
        format!(
            "runs `{shown}`, which can change Countersign's own state or act as the person (built in)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn the_cli_asks_unless_it_only_reads() {
        for line in [
            "countersign config set approvals.require_passkey off",
            "countersign passkey reset",
            "countersign token create laptop --scope admin",
            "countersign tokens revoke x",
            "countersign approvals approve 0123",
            "countersign approvals allow-always 0123",
            "countersign rules revoke r1",
            "countersign hook install claude-code",
            "countersign serve --data-dir /tmp/x",
            "countersign",
            "countersign --token abcdefgh",
            "countersign service install",
            "countersign login",
            "/usr/local/bin/countersign config set x y",
            "./target/debug/COUNTERSIGN passkey reset",
            "countersign.exe config set x y",
        ] {
            assert!(command_hit(&words(line), false).is_some(), "{line}");
        }
        for line in [
            "countersign approvals list",
            "countersign approvals list --json",
            "countersign config get approvals.default_mode",
            "countersign config show",
            "countersign audit verify",
            "countersign --help",
            "countersign help config",
            "countersign-helper run",
            "echo countersign config set",
        ] {
            assert_eq!(command_hit(&words(line), false), None, "{line}");
        }
    }

    #[test]
    fn postgres_clients_ask_only_when_the_store_is_postgres() {
        for line in [
            "psql -c 'delete from passkeys'",
            "pg_dump cs",
            "/usr/bin/psql16",
        ] {
            assert!(command_hit(&words(line), true).is_some(), "{line}");
            assert_eq!(command_hit(&words(line), false), None, "{line}");
        }
    }
}
