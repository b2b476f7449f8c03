//! Who a presented credential is (every door asks here: the middleware, the feed's recheck),
//! and logging a browser in with a login link or a token.

use super::{Core, Error};
use crate::server::logins::{self, BrowserLogin, LoginCodeGrant, Presented};
use crate::server::principal::{CLI_TOKEN_NAME, Principal, STARTUP_TOKEN_NAME, Scope};
use crate::server::store::secrets::{SecretKind, hash_secret};

/// What a browser logs in with.
pub enum LoginWith<'a> {
    /// A login link's single-use code.
    Code(&'a str),
    /// The admin token, or a named `admin` or `approve` token.
    Token(&'a str),
}

/// A browser logged in: its cookie's value, and the page it lands on.
pub struct LoggedIn {
    pub cookie: String,
    pub landing: &'static str,
}

impl Core {
    /// Who `presented` is, now (`logins::who`); a named token's use is recorded.
    pub async fn who_presented(&self, presented: &Presented) -> Result<Option<Principal>, Error> {
        let who = logins::who(
            self.repos.secrets.as_ref(),
            self.repos.tokens.as_ref(),
            presented,
        )
        .await?;
        if let Some(Principal::Token { name, .. }) = &who
            && name != STARTUP_TOKEN_NAME
            && name != CLI_TOKEN_NAME
        {
            self.note_token_use(name);
        }
        Ok(who)
    }

    /// Logs a browser in: a login link's code (once), the admin token, or a named token that
    /// may answer cards (which it then logs in as). A `gates` token cannot log in.
    pub async fn log_in(&self, with: LoginWith<'_>, device: &str) -> Result<LoggedIn, Error> {
        let kept = self.repos.secrets.as_ref();
        let (token_hash, admin_hash, landing) = match with {
            LoginWith::Code(code) => match logins::spend_login_code(kept, code).await? {
                None => {
                    return Err(Error::Unauthorized(
                        "this login link is not valid: it was used already, has expired (after 15 minutes) or was mistyped; run `countersign login` on the server's machine for a fresh one".into(),
                    ));
                }
                Some(LoginCodeGrant { token_hash: None }) => (None, None, "/"),
                Some(LoginCodeGrant {
                    token_hash: Some(hash),
                }) => (Some(self.token_that_decides(hash).await?), None, "/inbox"),
            },
            LoginWith::Token(secret) => {
                let hash = hash_secret(secret.trim());
                match self.who_presented(&Presented::Bearer(hash.clone())).await? {
                    Some(p) if p == Principal::startup_token() => (None, Some(hash), "/"),
                    Some(Principal::Token { name, scope, .. })
                        if scope.decides() && name != CLI_TOKEN_NAME =>
                    {
                        (Some(hash), None, "/inbox")
                    }
                    Some(Principal::Token { name, .. }) if name == CLI_TOKEN_NAME => {
                        return Err(Error::Forbidden(
                            "the local CLI's credential is for one command and cannot log in"
                                .into(),
                        ));
                    }
                    Some(_) => {
                        return Err(Error::Forbidden(
                            "that token has the gates scope: it is for an agent's hook and cannot log in; use an approve or admin token".into(),
                        ));
                    }
                    None => {
                        return Err(Error::Unauthorized(
                            "that token is not valid; use a login link (`countersign login`) or a named token".into(),
                        ));
                    }
                }
            }
        };
        let login = BrowserLogin {
            token_hash,
            admin_hash,
            device: device.to_owned(),
        };
        let cookie = logins::mint_browser_login(kept, &login).await?;
        Ok(LoggedIn { cookie, landing })
    }

    /// A fresh single-use login link's code (the one `serve` prints at start).
    pub async fn mint_login_code(&self) -> Result<String, Error> {
        Ok(
            logins::mint_login_code(self.repos.secrets.as_ref(), &LoginCodeGrant::default())
                .await?,
        )
    }

    /// A fresh single-use login link's code for a phone, logging in as the `approve` token
    /// whose secret is `secret` (the Tokens page asks right after making it, while the secret
    /// is on screen): the link carries a code good once for 15 minutes, never the secret.
    pub async fn mint_phone_login_code(&self, secret: &str) -> Result<String, Error> {
        let hash = hash_secret(secret.trim());
        match self.who_presented(&Presented::Bearer(hash.clone())).await? {
            Some(Principal::Token {
                name,
                scope: Scope::Approve,
                ..
            }) if name != CLI_TOKEN_NAME => {}
            _ => {
                return Err(Error::Forbidden(
                    "a phone's login link is made only for a named token with the approve scope"
                        .into(),
                ));
            }
        }
        let grant = LoginCodeGrant {
            token_hash: Some(hash),
        };
        Ok(logins::mint_login_code(self.repos.secrets.as_ref(), &grant).await?)
    }

    /// The hash of a login link's named token, if that token may still log in (not revoked,
    /// and a scope that answers cards).
    async fn token_that_decides(&self, hash: String) -> Result<String, Error> {
        match self.who_presented(&Presented::Bearer(hash.clone())).await? {
            Some(Principal::Token { name, scope, .. })
                if scope.decides() && name != CLI_TOKEN_NAME =>
            {
                Ok(hash)
            }
            _ => Err(Error::Unauthorized(
                "this login link's token was revoked: make a new token on the Tokens page".into(),
            )),
        }
    }

    /// Signs every browser out (their cookies stop working at once); how many.
    pub async fn end_browser_logins(&self) -> Result<u64, Error> {
        Ok(self
            .repos
            .secrets
            .forget_secrets(SecretKind::BrowserLogin, None)
            .await?)
    }
}
