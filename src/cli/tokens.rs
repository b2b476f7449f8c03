//! `countersign token …`: create a named token (its secret printed once), list them, revoke one.

use serde_json::{Value, json};

use super::TokenCommand;
use super::client::{CliError, Client, typed};
use super::table::{self, Table, clean};
use crate::protocol::{CreatedToken, Timestamp, TokenInfo};

pub async fn run(client: &Client, json: bool, command: TokenCommand) -> Result<(), CliError> {
    match command {
        TokenCommand::Create { name, scope } => create(client, json, &name, &scope).await,
        TokenCommand::List => list(client, json).await,
        TokenCommand::Revoke { name } => revoke(client, json, &name).await,
    }
}

async fn create(client: &Client, json: bool, name: &str, scope: &str) -> Result<(), CliError> {
    let raw = client
        .post(&["tokens"], &json!({"name": name, "scope": scope}))
        .await?;
    let created: CreatedToken = typed(raw.clone(), "the new token")?;
    if json {
        println!("{}", table::pretty(&raw));
    } else {
        // The secret alone on stdout, so `$(countersign token create …)` captures it; the
        // words around it go to stderr.
        eprintln!(
            "created token `{}` (scope {}); its secret is shown this once:",
            clean(&created.name),
            created.scope.as_str()
        );
        println!("{}", created.token);
        if let Some(warning) = &created.os_user_warning {
            eprintln!("{}", clean(warning));
        }
    }
    Ok(())
}

async fn list(client: &Client, json: bool) -> Result<(), CliError> {
    let raw: Value = client.get(&["tokens"], &[]).await?;
    let tokens: Vec<TokenInfo> = typed(raw.clone(), "the token list")?;
    if json {
        println!("{}", table::pretty(&raw));
    } else if tokens.is_empty() {
        println!("no named tokens (the startup token is always `admin`)");
    } else {
        println!("{}", tokens_table(&tokens, Timestamp::now_ms()).render());
    }
    Ok(())
}

fn tokens_table(tokens: &[TokenInfo], now: i64) -> Table {
    let mut table = Table::new(&["NAME", "SCOPE", "OWNER", "CREATED", "LAST USED"]);
    for token in tokens {
        table.row(vec![
            clean(&token.name),
            clean(token.scope.as_str()),
            clean(&token.owner),
            table::relative(&token.created_at, now),
            token
                .last_used_at
                .as_ref()
                .map_or_else(|| "never".to_owned(), |t| table::relative(t, now)),
        ]);
    }
    table
}

async fn revoke(client: &Client, json: bool, name: &str) -> Result<(), CliError> {
    client.delete(&["tokens", name]).await?;
    if json {
        println!("{}", table::pretty(&json!({"name": name, "revoked": true})));
    } else {
        println!("revoked token `{}`; it no longer works", clean(name));
    }
    Ok(())
}
