//! `countersign passkey reset`: removes every registered passkey, on the server's own machine.
//!
//! Not an API call on purpose: a passkey guards answers against a stolen token, so no token
//! can remove them; whoever can open the database (the data dir, or the database URL with its
//! password) can. The reset is audited (`passkeys_reset`, actor `cli`).

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::local::LocalStore;

#[derive(Args, Debug)]
pub struct PasskeyArgs {
    #[command(flatten)]
    pub store: LocalStore,
    #[command(subcommand)]
    pub command: PasskeyCommand,
}

#[derive(Subcommand, Debug)]
pub enum PasskeyCommand {
    /// Remove every registered passkey (when all are lost). Stop the server's use of them
    /// immediately: an answer that needs one is then refused until one is registered again.
    Reset,
}

pub async fn run(args: PasskeyArgs) -> ExitCode {
    let repos = match args.store.open("cli-passkey-reset").await {
        Ok(repos) => repos,
        Err(why) => {
            eprintln!("error: {why}");
            return why.exit_code();
        }
    };
    match args.command {
        PasskeyCommand::Reset => match repos.passkeys.reset_passkeys("cli").await {
            Ok(removed) => {
                println!("removed {removed} passkey(s); register a new one on the Security page");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        },
    }
}
