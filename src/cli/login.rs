//! `countersign login`: a fresh single-use login link, made on the server's machine.
//!
//! No token file is read or written: the link's code is random and only its hash goes into
//! the database, so whoever can open the database (the server's OS user) can log a browser in,
//! and nothing on disk can be replayed. `--sign-out-everywhere` ends every browser login.

use std::process::ExitCode;

use clap::Args;

use super::local::LocalStore;
use crate::server::logins;

#[derive(Args, Debug)]
pub struct LoginArgs {
    #[command(flatten)]
    pub store: LocalStore,
    /// The server's base URL the link starts with (default: `server.public_url`, else where
    /// the server last said it listens).
    #[arg(long, env = "COUNTERSIGN_URL")]
    pub url: Option<String>,
    /// End every browser login instead (their cookies stop working at once).
    #[arg(long)]
    pub sign_out_everywhere: bool,
}

/// The base the link starts with.
fn base_url(args: &LoginArgs) -> String {
    if let Some(url) = args.url.as_deref().filter(|u| !u.trim().is_empty()) {
        return url.trim().trim_end_matches('/').to_owned();
    }
    args.store
        .server_urls()
        .into_iter()
        .next()
        .unwrap_or_else(|| super::DEFAULT_URL.to_owned())
}

pub async fn run(args: LoginArgs) -> ExitCode {
    let repos = match args.store.open("cli-login").await {
        Ok(repos) => repos,
        Err(why) => {
            eprintln!("error: {why}");
            return why.exit_code();
        }
    };
    let kept = repos.secrets.as_ref();
    if args.sign_out_everywhere {
        return match kept
            .forget_secrets(
                crate::server::store::secrets::SecretKind::BrowserLogin,
                None,
            )
            .await
        {
            Ok(ended) => {
                println!("signed out {ended} browser login(s)");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
    match logins::mint_login_code(kept, &logins::LoginCodeGrant::default()).await {
        Ok(code) => {
            println!("{}/login?code={code}", base_url(&args));
            eprintln!("(works once, within 15 minutes)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
