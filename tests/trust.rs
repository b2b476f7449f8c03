//! The trust boundary: the agent can never answer its own gate. A yolo shell that goes after
//! every credential a careful attacker would try — the token file next to the default
//! workspace, `$COUNTERSIGN_TOKEN`, `/proc/*/environ` and `cmdline`, the config, the database —
//! and posts decisions with whatever it found leaves the gate pending and learns no secret.
//! Run by CI as root, so it holds for root too.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

#[path = "support/mod.rs"]
mod support;

use serde_json::json;
use support::*;

/// The server's real credential, given by flag and environment and left in a token file (which
/// start-up removes).
const SECRET_TOKEN: &str = "trust-test-secret-token-8d41";
const PROVIDER_KEY: &str = "sk-trust-test-provider-key-55e0";
const CONFIG_MARKER: &str = "trust-test-config-marker";

/// Tries every place a credential could be, then every candidate against the API, over bash's
/// `/dev/tcp` (no curl needed). Prints what it read and every status line it got.
fn attack_script(port: u16) -> String {
    format!(
        r#"set +e
echo "== reading"
cat ../token
echo "env token: [$COUNTERSIGN_TOKEN] key: [$OPENAI_API_KEY]"
for f in /proc/*/environ /proc/*/cmdline; do tr '\0' ' ' < "$f"; done
cat ../config.toml
head -c 32 ../countersign.db
env
echo "== trying"
candidates="$(cat ../token 2>/dev/null) $COUNTERSIGN_TOKEN $(cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\0' '\n' | sed -n 's/^COUNTERSIGN_TOKEN=//p') {fallback}"
for t in $candidates; do
  exec 3<>/dev/tcp/127.0.0.1/{port} || {{ echo "no connection"; continue; }}
  printf 'GET /api/v1/approvals?status=pending HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$t" >&3
  reply="$(cat <&3)"; exec 3<&-
  echo "list: $(echo "$reply" | head -n 1)"
  for pair in $(echo "$reply" | grep -o '"session_id":"[^"]*","turn_id":"[^"]*"\|"approval_id":"[^"]*"' ); do echo "found $pair"; done
  for aid in $(echo "$reply" | grep -o '"approval_id":"[^"]*"' | cut -d'"' -f4); do
    sid=$(echo "$reply" | grep -o '"session_id":"[^"]*"' | head -n 1 | cut -d'"' -f4)
    body='{{"decision":"approve"}}'
    exec 3<>/dev/tcp/127.0.0.1/{port}
    printf 'POST /api/v1/sessions/%s/approvals/%s HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n%s' "$sid" "$aid" "$t" "${{#body}}" "$body" >&3
    echo "decide: $(head -n 1 <&3)"; exec 3<&-
  done
done
echo "== done"
"#,
        fallback = "guess-token",
    )
}

#[tokio::test]
async fn a_yolo_shell_cannot_read_a_secret_or_answer_its_own_gate() {
    // The default layout: the workspace inside the data dir, the token file one level up.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ws = data.join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(data.join("token"), SECRET_TOKEN).unwrap();
    std::fs::write(
        data.join("config.toml"),
        format!("# {CONFIG_MARKER}\n[approvals]\ntimeout_secs = 1800\n"),
    )
    .unwrap();
    let mut cmd = serve_command(&["--addr", "127.0.0.1:0", "--token", SECRET_TOKEN]);
    cmd.arg("--data-dir")
        .arg(&data)
        .env("COUNTERSIGN_TOKEN", SECRET_TOKEN)
        .env("OPENAI_API_KEY", PROVIDER_KEY);
    let mut proc = Proc::spawn(cmd);
    let base = proc.listening(SOON).await;
    let api = Api::new(&base).with_token(SECRET_TOKEN);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    std::fs::write(ws.join("attack.sh"), attack_script(port)).unwrap();

    let sid = api.session().await;
    let turn = api
        .send_msg(
            &sid,
            "parallel:\nrun: sudo true\nrun: bash attack.sh",
            Some("yolo"),
        )
        .await;
    // The floor command asks even in yolo; the attack runs beside it, unasked.
    let gate = api.wait_gate(&sid).await;
    assert_eq!(gate["reason"], "safety_floor", "{gate}");
    let aid = id_of(&gate, "approval_id");
    let snap = api
        .wait_snapshot(&sid, "the attack's result", |s| {
            events(s).iter().any(|e| e["type"] == "tool_result")
        })
        .await;
    let result = events(&snap)
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    let output = str_of(&result, "output").to_owned();

    assert!(
        output.contains("== done"),
        "the attack ran to its end: {output}"
    );
    // The sandbox keeps the data dir out of reach; and the old token file it could have
    // tried is gone (removed at start: only the token's hash is kept).
    assert!(
        output.contains("../config.toml: Permission denied"),
        "{output}"
    );
    assert!(
        !data.join("token").exists(),
        "the clear token file was removed"
    );
    for secret in [SECRET_TOKEN, PROVIDER_KEY, CONFIG_MARKER, "SQLite format"] {
        assert!(
            !output.contains(secret),
            "the agent learned `{secret}`:\n{output}"
        );
    }
    assert!(
        output.contains("list: HTTP/1.0 401") || output.contains("list: HTTP/1.1 401"),
        "the API refused what it found: {output}"
    );
    assert!(
        !output.contains("decide:"),
        "no id was ever listed: {output}"
    );
    assert!(!output.contains(" 200 "), "{output}");

    api.assert_still_pending(&sid, &aid).await;
    // Only a person's credential answers it, and the audit names that credential.
    api.decide(
        &sid,
        &aid,
        json!({"decision": "deny", "client_id": "spoofed-tab"}),
    )
    .await
    .expect(200);
    let events = api.wait_turn_events(&sid, &turn).await;
    let resolved = only(&events, "approval_resolved");
    assert_eq!(resolved["answered_by"], "user", "{resolved}");
    assert_eq!(resolved["actor"], "token:admin", "{resolved}");
    let audit = api
        .get("/api/v1/audit?action=gate_resolved")
        .await
        .expect(200);
    let entry = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subject"] == aid.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no audit entry for {aid}: {audit}"));
    assert_eq!(entry["actor"], "token:admin", "{entry}");
}

/// The spellings that ran unasked before the floor read commands as a shell does: in yolo each
/// now opens a floor card, and nothing runs until a person answers (here: never).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_floor_spelling_asks_even_in_yolo() {
    let srv = TestServer::start().await;
    std::fs::create_dir_all(srv.ws("victim/inner")).unwrap();
    let sid = srv.session().await;
    for command in [
        "rm -fr victim",
        "rm -r -f victim",
        "rm --recursive --force victim",
        "/bin/rm -rf victim",
        "sh -c 'rm -rf victim'",
        "echo rm -rf victim |sh",
        "echo rm -rf victim | /bin/sh",
        "find . -name victim -exec rm -rf {} +",
    ] {
        let turn = srv
            .send_msg(&sid, &format!("run: {command}"), Some("yolo"))
            .await;
        let gate = srv.wait_gate(&sid).await;
        assert_eq!(gate["reason"], "safety_floor", "`{command}`: {gate}");
        assert!(
            !gate["allowed_decisions"]
                .as_array()
                .unwrap()
                .contains(&json!("allow_always")),
            "{gate}"
        );
        srv.decide(&sid, &aid(&gate), json!({"decision": "deny"}))
            .await
            .expect(200);
        srv.wait_released(&sid, &turn).await;
        assert!(srv.ws("victim/inner").is_dir(), "`{command}` ran");
    }
}

/// Pages insert HTML the agent wrote (sanitized); the CSP is the second wall: no inline script
/// runs unless it carries this response's nonce.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_allow_only_their_own_nonced_scripts() {
    let srv = TestServer::start().await;
    let sid = srv.session().await;
    let page = srv.get(&format!("/sessions/{sid}")).await;
    assert_eq!(page.status, 200);
    let policy = page.header("content-security-policy").unwrap().to_owned();
    let scripts = policy
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap();
    assert!(!scripts.contains("unsafe-inline"), "{policy}");
    let nonce = scripts
        .split_whitespace()
        .find_map(|s| s.strip_prefix("'nonce-")?.strip_suffix('\''))
        .unwrap_or_else(|| panic!("no nonce in {policy}"));
    let tags: Vec<&str> = page.body.split("<script").skip(1).collect();
    assert!(!tags.is_empty(), "the page hydrates with scripts");
    for tag in tags {
        let head = tag.split('>').next().unwrap();
        assert!(
            head.contains(&format!("nonce=\"{nonce}\"")),
            "a script without the nonce: <script{head}>"
        );
    }
    // A second render gets a fresh nonce; API answers allow no inline script at all.
    let again = srv.get(&format!("/sessions/{sid}")).await;
    assert!(
        !again
            .header("content-security-policy")
            .unwrap()
            .contains(nonce)
    );
    let api = srv.get("/api/v1/sessions").await;
    let api_policy = api.header("content-security-policy").unwrap();
    let api_scripts = api_policy
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap();
    assert_eq!(
        api_scripts.trim(),
        "script-src 'self' 'wasm-unsafe-eval'",
        "{api_policy}"
    );
}
