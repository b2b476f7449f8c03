//! A real OpenID Connect provider for the integration tests (issue 41): the npm
//! `oidc-provider` (`end2end/oidc/provider.mjs`, installed by `ensure_oidc_provider` in
//! scripts/lib.sh) on loopback, and each sign-in walked through the real authorization code
//! flow over HTTP: the server's redirect, the provider's login form posted, its redirect back
//! with the code, the callback. Skipped, loudly, when node or the provider is missing, unless
//! the run requires it (`CI=true`, or `COUNTERSIGN_OIDC_PROVIDER=required`): then it fails.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::{TestServer, client, os_users};

pub const CLIENT_ID: &str = "countersign-test";
pub const CLIENT_SECRET: &str = "a-client-secret-for-the-tests-only";
pub const SECRET_ENV: &str = "COUNTERSIGN_TEST_OIDC_SECRET";
/// The server's public URL as the provider knows it: the test carries the provider's
/// redirect to the real (ephemeral) address itself.
pub const PUBLIC_URL: &str = "http://127.0.0.1:9";

/// The provider, killed when dropped.
pub struct Idp {
    child: Child,
    pub issuer: String,
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("COUNTERSIGN_OIDC_PROVIDER").as_deref() == Ok("required")
}

pub fn provider_dir() -> PathBuf {
    std::env::var_os("COUNTERSIGN_OIDC_PROVIDER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oidc-provider"))
}

/// The provider on a free loopback port; `None` (said loudly) when it cannot run here and
/// the run does not require it.
pub fn start_idp() -> Option<Idp> {
    let installed = provider_dir().join("node_modules/oidc-provider/package.json");
    let node = os_users::which("node");
    if node.is_none() || !installed.is_file() {
        let why = format!(
            "node or oidc-provider is missing ({} not found); `source scripts/lib.sh; ensure_oidc_provider` installs it",
            installed.display()
        );
        assert!(!required(), "{why}");
        eprintln!("\n\n*** SKIPPED tests/oidc.rs: {why} ***\n\n");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("end2end/oidc/provider.mjs");
    let mut child = Command::new(node.unwrap())
        .arg(script)
        .args(["--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET])
        .args([
            "--redirect-uri",
            &format!("{PUBLIC_URL}/auth/oidc/callback"),
        ])
        .env("COUNTERSIGN_OIDC_PROVIDER_DIR", provider_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let said: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line:?}"));
    let issuer = said["issuer"].as_str().unwrap().to_owned();
    Some(Idp { child, issuer })
}

/// The client secret's variable, set once for every test of this binary, each of which calls
/// this first (before it starts a provider or a server, which read the environment).
pub fn set_secret() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: `Once` runs it a single time, and every test waits here before any of its own
    // threads reads the environment.
    ONCE.call_once(|| unsafe { std::env::set_var(SECRET_ENV, CLIENT_SECRET) });
}

/// A server signing in with `idp`, letting in `allowed_domains`.
pub async fn server_for(idp: &Idp, allowed_domains: &str) -> TestServer {
    TestServer::configured(&format!(
        "[server]\npublic_url = \"{PUBLIC_URL}\"\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\nallowed_domains = [{allowed_domains}]\n",
        idp.issuer
    ))
    .await
}

/// What a sign-in came to: the callback's status and page, and the session cookie it set.
pub struct SignIn {
    pub status: StatusCode,
    pub page: String,
    pub session: Option<String>,
}

/// The `name=value` pairs a response sets.
pub fn set_cookies(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

pub fn cookie_header(jar: &HashMap<String, String>) -> String {
    jar.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The provider's login form: its action and the prompt it asks.
pub fn form_of(page: &str) -> (String, String) {
    let after = |key: &str| {
        let start = page.find(key).unwrap_or_else(|| panic!("{key} in {page}")) + key.len();
        page[start..].split('"').next().unwrap().to_owned()
    };
    (after("action=\""), after("name=\"prompt\" value=\""))
}

/// Walks the provider from its authorization URL to the redirect back; the callback's query.
pub async fn at_provider(start: &str, account: &str) -> String {
    let client = client();
    let mut jar = HashMap::new();
    let mut url = Url::parse(start).unwrap();
    for _ in 0..12 {
        let resp = client
            .get(url.clone())
            .header("cookie", cookie_header(&jar))
            .send()
            .await
            .unwrap();
        jar.extend(set_cookies(resp.headers()));
        let next = if resp.status().is_redirection() {
            resp.headers()["location"].to_str().unwrap().to_owned()
        } else {
            let page = resp.text().await.unwrap();
            let (action, prompt) = form_of(&page);
            let posted = client
                .post(url.join(&action).unwrap())
                .header("cookie", cookie_header(&jar))
                .form(&[
                    ("prompt", prompt.as_str()),
                    ("login", account),
                    ("password", "x"),
                ])
                .send()
                .await
                .unwrap();
            jar.extend(set_cookies(posted.headers()));
            assert!(posted.status().is_redirection(), "{}", posted.status());
            posted.headers()["location"].to_str().unwrap().to_owned()
        };
        let next = url.join(&next).unwrap();
        if next
            .as_str()
            .starts_with(&format!("{PUBLIC_URL}/auth/oidc/callback"))
        {
            return next.query().unwrap_or_default().to_owned();
        }
        url = next;
    }
    panic!("the provider never sent the browser back");
}

/// Signs `account` in through the whole flow; `tamper` changes the callback's query first.
pub async fn sign_in_with(srv: &TestServer, account: &str, tamper: fn(String) -> String) -> SignIn {
    let start = srv
        .anon(Method::GET, "/auth/oidc/start")
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let flow = set_cookies(start.headers())
        .into_iter()
        .find(|(k, _)| k == "countersign_oidc")
        .expect("a flow cookie");
    let to = start.headers()["location"].to_str().unwrap().to_owned();
    for part in [
        "code_challenge_method=S256",
        "nonce=",
        "state=",
        "scope=openid",
    ] {
        assert!(to.contains(part), "{part} in {to}");
    }
    let query = tamper(at_provider(&to, account).await);
    let back = srv
        .anon(Method::GET, &format!("/auth/oidc/callback?{query}"))
        .header("cookie", format!("{}={}", flow.0, flow.1))
        .send()
        .await
        .unwrap();
    let status = back.status();
    let session = set_cookies(back.headers())
        .into_iter()
        .find(|(k, v)| k == "countersign_session" && !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"));
    SignIn {
        status,
        page: back.text().await.unwrap(),
        session,
    }
}

pub async fn sign_in(srv: &TestServer, account: &str) -> SignIn {
    sign_in_with(srv, account, |q| q).await
}
