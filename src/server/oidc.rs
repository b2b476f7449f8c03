//! Sign-in with an OpenID Connect provider (issue 41), over the `openidconnect` crate:
//! discovery from the issuer, the authorization URL (code flow, PKCE S256, a fresh state and
//! nonce, scopes `openid email profile`), and the code's exchange with every check on the ID
//! token (signature against the provider's keys, issuer, audience, nonce, expiry). It knows
//! nothing of people: core decides who a verified identity may be.

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};

use crate::server::config::OidcConfig;
use crate::server::secret::Secret;

/// How long a provider may take to answer one request (discovery, keys, the token).
const PROVIDER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The most one answer of the provider may hold (discovery, keys and a token are a few KiB).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Why a sign-in could not go on: said to the person in a sentence, the cause logged.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("the client secret's variable {0} is not set")]
    NoSecret(String),
    #[error("the sign-in provider could not be reached or read: {0}")]
    Provider(String),
    #[error("the provider's answer did not check out: {0}")]
    Refused(String),
}

/// The provider and this server as its client: the configuration, the secret from its
/// variable, and where the provider sends the person back.
pub struct Provider {
    config: OidcConfig,
    secret: Secret,
    redirect_uri: String,
}

/// What a sign-in in progress keeps, server-side, until its callback: each value once.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The `state` the provider must hand back (CSRF).
    pub state: String,
    /// The `nonce` the ID token must carry (replay).
    pub nonce: String,
    /// The PKCE verifier whose challenge went with the request.
    pub verifier: String,
}

/// Who the provider says signed in, after every check on the ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// Lowercased in ASCII only (`people::email_key`); `None` when the token carries none.
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
}

impl Provider {
    /// The provider of `config`, its secret read from `client_secret_env` now.
    pub fn new(config: &OidcConfig, redirect_uri: String) -> Result<Provider, OidcError> {
        let secret = std::env::var(&config.client_secret_env)
            .ok()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| OidcError::NoSecret(config.client_secret_env.clone()))?;
        Ok(Provider {
            config: config.clone(),
            secret: Secret::new(secret),
            redirect_uri,
        })
    }

    /// The provider's name on `/login`.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Where to send the browser to sign in, and what its callback must meet.
    pub async fn start(&self) -> Result<(String, Pending), OidcError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        let pending = Pending {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
        };
        Ok((url.to_string(), pending))
    }

    /// Exchanges the callback's `code` (with the PKCE verifier) and checks the ID token:
    /// its signature, issuer, audience, expiry and nonce.
    pub async fn finish(&self, code: &str, pending: &Pending) -> Result<Identity, OidcError> {
        let client = self.client().await?;
        let http = http_client()?;
        let http = |request| capped(http.clone(), request);
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
            .request_async(&http)
            .await
            .map_err(|e| OidcError::Refused(crate::text::error_chain(&e)))?;
        let token = response
            .id_token()
            .ok_or_else(|| OidcError::Refused("no ID token in the answer".into()))?;
        let nonce = Nonce::new(pending.nonce.clone());
        let claims = token
            .claims(&client.id_token_verifier(), &nonce)
            .map_err(|e| OidcError::Refused(e.to_string()))?;
        Ok(Identity {
            issuer: claims.issuer().as_str().to_owned(),
            subject: claims.subject().as_str().to_owned(),
            email: claims
                .email()
                .map(|e| crate::protocol::email_key(e.as_str())),
            email_verified: claims.email_verified().unwrap_or(false),
            name: claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned()),
        })
    }

    /// The client, from the provider's discovery document (and its keys) read now: a sign-in
    /// is rare, and a key the provider rotated is picked up at the next one.
    async fn client(
        &self,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let issuer = IssuerUrl::new(self.config.issuer.clone())
            .map_err(|e| OidcError::Provider(e.to_string()))?;
        let http = http_client()?;
        let http = |request| capped(http.clone(), request);
        let metadata = CoreProviderMetadata::discover_async(issuer, &http)
            .await
            .map_err(|e| OidcError::Provider(crate::text::error_chain(&e)))?;
        let redirect = RedirectUrl::new(self.redirect_uri.clone())
            .map_err(|e| OidcError::Provider(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(self.secret.reveal().to_owned())),
        )
        .set_redirect_uri(redirect))
    }
}

/// The HTTP client for the provider: no redirects followed (the crate's advice against
/// request forgery), bounded in time.
fn http_client() -> Result<reqwest::Client, OidcError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROVIDER_TIMEOUT)
        .build()
        .map_err(|e| OidcError::Provider(e.to_string()))
}

/// One request to the provider, its answer read up to `MAX_ANSWER_BYTES` and refused past
/// that as it arrives: any visitor's sign-in makes the server ask the provider, which must not
/// be able to fill the server's memory with one answer.
async fn capped(
    http: reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, openidconnect::HttpClientError<reqwest::Error>> {
    use openidconnect::HttpClientError;
    let too_long =
        || HttpClientError::Other(format!("the answer is over {MAX_ANSWER_BYTES} bytes"));
    let request = reqwest::Request::try_from(request).map_err(Box::new)?;
    let mut response = http.execute(request).await.map_err(Box::new)?;
    if response
        .content_length()
        .is_some_and(|len| len > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_long());
    }
    let mut builder = http::Response::builder()
        .status(response.status())
        .version(response.version());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Box::new)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_long());
        }
        body.extend_from_slice(&chunk);
    }
    builder.body(body).map_err(HttpClientError::Http)
}
