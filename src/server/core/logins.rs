//! Who a presented credential is (every door asks here: the middleware, the feed's recheck),
//! and logging a browser in with a login link or a token.

use serde_json::json;

use super::{Core, Error};
use crate::protocol::Actor;
use crate::server::audit::AuditDraft;
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

/// The audit action of a browser logging in (subject: the login's id, which grants nothing).
pub const BROWSER_LOGGED_IN: &str = "browser_logged_in";

/// The audit action of a phone's login link being made (subject: the token it logs in as).
pub const PHONE_LINK_MADE: &str = "phone_link_made";

/// What a browser logged in with, as its audit entry says it.
#[derive(Clone, Copy)]
enum LoggedInWith {
    LoginLink,
    PhoneLink,
    Token,
}

impl LoggedInWith {
    fn as_str(self) -> &'static str {
        match self {
            LoggedInWith::LoginLink => "login_link",
            LoggedInWith::PhoneLink => "phone_link",
            LoggedInWith::Token => "token",
        }
    }
}

/// Whose login a browser holds once logged in: the admin's (`browser`), or a named token's.
struct LoginAs {
    token_hash: Option<String>,
    admin_hash: Option<String>,
    landing: &'static str,
    /// The actor the audit names: `browser`, or `token:<name>`.
    actor: String,
    with: LoggedInWith,
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
            self.repos.people.as_ref(),
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
    /// may answer cards (which it then logs in as). A `gates` token cannot log in. Every login
    /// is audited (`browser_logged_in`: who, with what, on which device; never a secret).
    pub async fn log_in(&self, with: LoginWith<'_>, device: &str) -> Result<LoggedIn, Error> {
        let kept = self.repos.secrets.as_ref();
        let login_as = match with {
            LoginWith::Code(code) => self.login_as_code(code).await?,
            LoginWith::Token(secret) => self.login_as_token(secret).await?,
        };
        let login = BrowserLogin {
            token_hash: login_as.token_hash,
            admin_hash: login_as.admin_hash,
            person_id: None,
            device: device.to_owned(),
        };
        let cookie = logins::mint_browser_login(kept, &login).await?;
        let draft = AuditDraft {
            actor: login_as.actor,
            action: BROWSER_LOGGED_IN,
            subject: logins::login_id(&hash_secret(&cookie)),
            detail: json!({ "with": login_as.with.as_str(), "device": device }),
        };
        self.repos.audit.append_audit(vec![draft]).await?;
        Ok(LoggedIn {
            cookie,
            landing: login_as.landing,
        })
    }

    /// Whose login a login link's code gives (spending it): the admin's, or a phone's token's.
    async fn login_as_code(&self, code: &str) -> Result<LoginAs, Error> {
        let kept = self.repos.secrets.as_ref();
        match logins::spend_login_code(kept, code).await? {
            None => Err(Error::Unauthorized(
                "this login link is not valid: it was used already, has expired (after 15 minutes) or was mistyped; run `countersign login` on the server's machine for a fresh one".into(),
            )),
            Some(LoginCodeGrant { token_hash: None }) => Ok(LoginAs {
                token_hash: None,
                admin_hash: None,
                landing: "/",
                actor: Actor::Browser.to_string(),
                with: LoggedInWith::LoginLink,
            }),
            Some(LoginCodeGrant {
                token_hash: Some(hash),
            }) => {
                let token = self.token_that_decides(&hash).await?;
                Ok(LoginAs {
                    token_hash: Some(hash),
                    admin_hash: None,
                    landing: "/inbox",
                    actor: token.actor(),
                    with: LoggedInWith::PhoneLink,
                })
            }
        }
    }

    /// Whose login a token gives: the admin token's is the admin's; a named token that may
    /// answer cards logs in as itself; any other is refused with why.
    async fn login_as_token(&self, secret: &str) -> Result<LoginAs, Error> {
        let hash = hash_secret(secret.trim());
        match self.who_presented(&Presented::Bearer(hash.clone())).await? {
            Some(p) if p == Principal::startup_token() => Ok(LoginAs {
                token_hash: None,
                admin_hash: Some(hash),
                landing: "/",
                actor: Actor::Browser.to_string(),
                with: LoggedInWith::Token,
            }),
            Some(token @ Principal::Token { .. })
                if token.scope().reads() && !is_cli(&token) =>
            {
                Ok(LoginAs {
                    token_hash: Some(hash),
                    admin_hash: None,
                    landing: "/inbox",
                    actor: token.actor(),
                    with: LoggedInWith::Token,
                })
            }
            Some(Principal::Token { name, .. }) if name == CLI_TOKEN_NAME => Err(Error::Forbidden(
                "the local CLI's credential is for one command and cannot log in".into(),
            )),
            Some(_) => Err(Error::Forbidden(
                "that token has the gates scope: it is for an agent's hook and cannot log in; use a view, approve or admin token".into(),
            )),
            None => Err(Error::Unauthorized(
                "that token is not valid; use a login link (`countersign login`) or a named token".into(),
            )),
        }
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
    /// Made by `who`, and audited (`phone_link_made`, subject the token's name).
    pub async fn mint_phone_login_code(
        &self,
        who: &Principal,
        secret: &str,
    ) -> Result<String, Error> {
        let hash = hash_secret(secret.trim());
        let name = match self.who_presented(&Presented::Bearer(hash.clone())).await? {
            Some(Principal::Token {
                name,
                scope: Scope::Approve,
                ..
            }) if name != CLI_TOKEN_NAME => name,
            _ => {
                return Err(Error::Forbidden(
                    "a phone's login link is made only for a named token with the approve scope"
                        .into(),
                ));
            }
        };
        let grant = LoginCodeGrant {
            token_hash: Some(hash),
        };
        let code = logins::mint_login_code(self.repos.secrets.as_ref(), &grant).await?;
        let draft = AuditDraft {
            actor: who.actor(),
            action: PHONE_LINK_MADE,
            subject: name,
            detail: json!({ "good_for_secs": 15 * 60 }),
        };
        self.repos.audit.append_audit(vec![draft]).await?;
        Ok(code)
    }

    /// The name of a login link's named token, if that token may still log in (not revoked,
    /// and a scope that answers cards).
    async fn token_that_decides(&self, hash: &str) -> Result<Principal, Error> {
        match self
            .who_presented(&Presented::Bearer(hash.to_owned()))
            .await?
        {
            Some(token @ Principal::Token { .. }) if token.scope().decides() && !is_cli(&token) => {
                Ok(token)
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

/// Whether `who` is the local CLI's one-command credential (which never logs a browser in).
fn is_cli(who: &Principal) -> bool {
    matches!(who, Principal::Token { name, .. } if name == CLI_TOKEN_NAME)
}
