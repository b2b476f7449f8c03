//! `countersign hook codex`: Codex's `PermissionRequest` hook. Codex parses the answer with
//! `deny_unknown_fields` and rejects edited input or permission updates, so the output has
//! exactly `hookEventName` and `decision {behavior, message?}` — or, when there is no decision,
//! at most a `systemMessage` (Codex shows it as `↳ Hook · …` and asks in its own prompt).
//!
//! Codex's terminal does not run hooks itself: its app-server daemon does, started by the first
//! Codex of a `HOME` and outliving it, with the environment of the Codex that started it. A
//! Codex started later with `COUNTERSIGN_TOKEN` beside a daemon started without it asks
//! Countersign nothing, so the hook says so when it finds that daemon among its parents
//! ([`daemon_ancestor`]), and `hook install codex` looks at a running daemon's environment
//! ([`daemon_warning`]).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::external::gates_client::OpenGate;
use crate::external::hook::{
    AgentAsk, Asked, GateHookArgs, GateKey, HookContext, HookOutcome, decide, fallback, hook_gate,
    parse_input,
};
use crate::external::key::idempotency_key;
use crate::external::remote::DEFAULT_URL;
use crate::external::transcript;
use crate::external::verdict::Verdict;
use crate::protocol::canonical_json;

pub const SOURCE: &str = "codex";
const EVENT: &str = "PermissionRequest";

/// The fields of Codex's hook input this hook reads, as its published schema
/// (`permission-request.command.input`) allows them: `transcript_path` may be `null` (a session
/// with no transcript on disk), and whatever the schema adds is ignored.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct CodexHookInput {
    pub session_id: String,
    #[serde(default)]
    pub turn_id: Option<String>,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// The conversation so far, as JSON lines; its last assistant words head the card. Empty
    /// when Codex sent `null`.
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub transcript_path: String,
    /// `default`, or `bypassPermissions` under an approval policy that asks nobody (see
    /// [`agent_ask`]).
    #[serde(default)]
    pub permission_mode: Option<String>,
}

/// Runs the hook: parse, open a gate, wait, answer.
pub async fn answer(flags: &GateHookArgs, stdin: &[u8], ctx: &HookContext) -> HookOutcome {
    let input: CodexHookInput = match parse_input(stdin, "Codex", ctx) {
        Ok(input) => input,
        Err(outcome) => return outcome,
    };
    let mut out = HookOutcome::new(ctx);
    if input.hook_event_name != EVENT {
        out.say(format!(
            "`{}` is not Codex's PermissionRequest hook; no decision",
            input.hook_event_name
        ));
        return out;
    }
    let mut gate = open_gate(&input, ctx, flags.timeout);
    if !flags.no_transcript {
        gate.agent_says = transcript::last_words(&input.transcript_path).await;
    }
    let daemon = daemon_ancestor();
    let has_token = flags
        .remote
        .token
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    match decide(flags, &gate, &key(&input), ctx, &mut out, None).await {
        Asked::Answered(verdict) => out.stdout = render(&verdict).to_string(),
        Asked::Gone => {}
        Asked::Unreachable(why) => {
            let note = no_decision_note(has_token, daemon, &why);
            // Without a token, the note says why (the daemon's environment, most often).
            let why = if has_token { why } else { note.clone() };
            out.stdout = match fallback(flags, &why, &agent_ask(&input)) {
                Some(verdict) => render(&verdict).to_string(),
                // Codex asks in its own prompt; it is told why when the cause may be its
                // daemon's environment.
                None if !has_token => system_message(&format!("{note} Codex asks here meanwhile.")),
                None if daemon.is_some() => system_message(&note),
                None => String::new(),
            };
        }
    }
    out
}

/// What Codex does with no decision from its `PermissionRequest` hook: its own approval step,
/// which asks the person (or the reviewer they set up in Codex) — except under an approval
/// policy that asks nobody, which Codex reports as `bypassPermissions` (or `dontAsk`).
fn agent_ask(input: &CodexHookInput) -> AgentAsk {
    match input.permission_mode.as_deref() {
        Some(mode @ ("bypassPermissions" | "dontAsk")) => {
            AgentAsk::MayRun(format!("Codex's permission mode `{mode}` asks nobody"))
        }
        _ => AgentAsk::Prompts,
    }
}

/// Codex's output that makes no decision and shows `text` to the person.
fn system_message(text: &str) -> String {
    json!({ "systemMessage": text }).to_string()
}

/// What the person is told when Countersign gave no decision: `token` whether the hook had
/// one, `daemon` the app-server daemon running the hook, `why` what went wrong. Without a
/// token, always; with one, only under the daemon (whose environment may be older than the
/// person's shell).
pub fn no_decision_note(token: bool, daemon: Option<u32>, why: &str) -> String {
    let restart = "run `codex app-server daemon restart` in a shell where COUNTERSIGN_URL and \
                   COUNTERSIGN_TOKEN are exported (or start Codex with --no-daemon)";
    match (token, daemon) {
        (false, Some(pid)) => format!(
            "Countersign was not asked: Codex runs this hook in its background server \
             (app-server daemon, pid {pid}), which was started without COUNTERSIGN_TOKEN and \
             keeps the environment of the Codex that started it; {restart}."
        ),
        (false, None) => "Countersign was not asked: COUNTERSIGN_TOKEN (a `gates` token) is \
                          not set in the environment Codex runs hooks with."
            .to_owned(),
        (true, daemon) => {
            let why = if why.is_empty() { "no answer" } else { why };
            let mut note = format!("Countersign gave no decision ({why}); Codex asks here.");
            if let Some(pid) = daemon {
                note.push_str(&format!(
                    " Codex runs this hook in its background server (app-server daemon, pid \
                     {pid}) with the COUNTERSIGN_URL and COUNTERSIGN_TOKEN it was started \
                     with: if they changed since, {restart}."
                ));
            }
            note
        }
    }
}

/// The pid of Codex's app-server daemon when it is among this process's nearest ancestors
/// (Codex may start the hook through a shell); `None` elsewhere, and where `/proc` is not.
pub fn daemon_ancestor() -> Option<u32> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..3 {
        if is_codex_daemon(pid) {
            return Some(pid);
        }
        pid = parent_of(pid)?;
    }
    None
}

/// Whether `pid` is Codex's app-server daemon (`codex app-server … --managed-daemon`).
pub fn is_codex_daemon(pid: u32) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
    let program = args
        .first()
        .map(|a| String::from_utf8_lossy(a).into_owned());
    program.is_some_and(|p| {
        Path::new(&p)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("codex"))
    }) && args.contains(&b"app-server".as_slice())
        && args.contains(&b"--managed-daemon".as_slice())
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The environment a process runs with (readable for the same user's processes).
fn environ(pid: u32) -> Option<HashMap<String, String>> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter_map(|pair| {
                let pair = String::from_utf8_lossy(pair);
                let (k, v) = pair.split_once('=')?;
                Some((k.to_owned(), v.to_owned()))
            })
            .collect(),
    )
}

/// For `hook install codex`: a warning when Codex's app-server daemon of this `HOME` is running
/// with a Countersign environment other than this shell's (`url`, `token`: its
/// `COUNTERSIGN_URL` and `COUNTERSIGN_TOKEN`), since the hook will run in the daemon. `None`
/// when no daemon runs, or its environment cannot be read.
pub fn daemon_warning(home: &Path, url: Option<&str>, token: Option<&str>) -> Option<String> {
    let recorded =
        std::fs::read_to_string(home.join(".codex/app-server-daemon/daemon.pid")).ok()?;
    let pid = serde_json::from_str::<Value>(&recorded).ok()?["pid"].as_u64()?;
    let pid = u32::try_from(pid).ok()?;
    if !is_codex_daemon(pid) {
        return None;
    }
    let env = environ(pid)?;
    daemon_env_warning(
        pid,
        (
            env.get("COUNTERSIGN_URL").map(String::as_str),
            env.get("COUNTERSIGN_TOKEN").map(String::as_str),
        ),
        (url, token),
    )
}

/// The warning for a daemon whose `(url, token)` differ from the shell's; a token is never
/// shown, only whether it differs.
pub fn daemon_env_warning(
    pid: u32,
    daemon: (Option<&str>, Option<&str>),
    shell: (Option<&str>, Option<&str>),
) -> Option<String> {
    fn set(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    let (daemon_url, daemon_token) = (set(daemon.0), set(daemon.1));
    let (shell_url, shell_token) = (set(shell.0), set(shell.1));
    let mut wrong = Vec::new();
    match (daemon_token, shell_token) {
        (None, _) => wrong.push("without COUNTERSIGN_TOKEN".to_owned()),
        (Some(d), Some(s)) if d != s => {
            wrong.push("with another COUNTERSIGN_TOKEN than this shell's".to_owned());
        }
        _ => {}
    }
    let effective = |v: Option<&str>| v.unwrap_or(DEFAULT_URL).trim_end_matches('/').to_owned();
    if effective(daemon_url) != effective(shell_url) {
        wrong.push(match daemon_url {
            Some(d) => format!("with COUNTERSIGN_URL={d}"),
            None => format!("without COUNTERSIGN_URL (so {DEFAULT_URL})"),
        });
    }
    if wrong.is_empty() {
        return None;
    }
    Some(format!(
        "warning: Codex's background server (app-server daemon, pid {pid}) is running {}. Codex \
         runs hooks there, with the environment of the Codex that started it, so its calls \
         would not reach this Countersign: restart it from this shell with `codex app-server \
         daemon restart` (it takes the environment of the shell that runs it)",
        wrong.join(" and ")
    ))
}

/// The gate for this request: no edit, since Codex cannot take edited input.
pub fn open_gate(input: &CodexHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
    let tool = (input.tool_name.as_str(), &input.tool_input);
    hook_gate(
        SOURCE,
        &input.session_id,
        &input.cwd,
        tool,
        false,
        ctx,
        timeout_secs,
    )
}

/// Codex gives no tool-use id, so (as for Claude Code's PermissionRequest) the key is a hash
/// of the request: it finds the same gate while it is pending (see [`decide`]).
pub fn key(input: &CodexHookInput) -> GateKey {
    GateKey {
        key: idempotency_key(&[
            SOURCE,
            &input.session_id,
            input.turn_id.as_deref().unwrap_or(""),
            &input.tool_name,
            &canonical_json(&input.tool_input),
        ]),
        names_one_call: false,
    }
}

/// Codex's `PermissionRequestCommandOutputWire`, and nothing more.
#[derive(Serialize)]
struct Output {
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: SpecificOutput,
}

#[derive(Serialize)]
struct SpecificOutput {
    #[serde(rename = "hookEventName")]
    hook_event_name: &'static str,
    decision: Decision,
}

#[derive(Serialize)]
struct Decision {
    behavior: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// The answer for a verdict. "Always" becomes a plain allow (Countersign's own rule remembers);
/// an edit cannot be applied by Codex, so it becomes a deny that says so.
pub fn render(verdict: &Verdict) -> Value {
    let decision = match verdict {
        Verdict::Allow {
            updated_input: None,
            ..
        } => Decision {
            behavior: "allow",
            message: None,
        },
        Verdict::Allow {
            updated_input: Some(_),
            ..
        } => Decision {
            behavior: "deny",
            message: Some(
                "Denied: Countersign answered with edited input, which Codex cannot apply; \
                 propose the edited call again."
                    .into(),
            ),
        },
        Verdict::Deny { message } => Decision {
            behavior: "deny",
            message: Some(message.clone()),
        },
    };
    let output = Output {
        hook_specific_output: SpecificOutput {
            hook_event_name: EVENT,
            decision,
        },
    };
    serde_json::to_value(output).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::hook::{GateHookArgs, Unreachable};

    /// Codex's `PermissionRequest` for a Bash call, and a hook whose Countersign is a closed
    /// loopback port (no token, asks when unreachable).
    fn unreachable_countersign() -> (&'static [u8], HookContext, GateHookArgs) {
        use crate::external::remote::CountersignRemote;
        let stdin = include_bytes!(
            "../../../tests/fixtures/external/codex/permissionrequest-bash.stdin.json"
        );
        let ctx = HookContext {
            home: None,
            cwd: "/tmp".into(),
            open_budget: std::time::Duration::from_millis(200),
            live_stderr: false,
            agent_attended: false,
        };
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let flags = GateHookArgs {
            remote: CountersignRemote { url, token: None },
            timeout: 60,
            no_transcript: true,
            if_unreachable: Unreachable::Ask,
        };
        (stdin, ctx, flags)
    }

    #[test]
    fn without_a_token_the_note_says_what_to_restart() {
        let note = no_decision_note(false, Some(4242), "");
        assert!(note.contains("pid 4242"), "{note}");
        assert!(note.contains("codex app-server daemon restart"), "{note}");
        assert!(note.contains("without COUNTERSIGN_TOKEN"), "{note}");
        let note = no_decision_note(false, None, "");
        assert!(note.contains("COUNTERSIGN_TOKEN"), "{note}");
        assert!(!note.contains("daemon"), "{note}");
        let note = no_decision_note(true, Some(7), "cannot reach Countersign at http://x");
        assert!(
            note.contains("cannot reach Countersign at http://x"),
            "{note}"
        );
        assert!(note.contains("codex app-server daemon restart"), "{note}");
    }

    #[test]
    fn a_daemon_environment_other_than_the_shells_is_named_never_its_token() {
        let url = Some("http://127.0.0.1:9000");
        let same = daemon_env_warning(1, (url, Some("cst_a")), (url, Some("cst_a")));
        assert_eq!(same, None);
        let missing = daemon_env_warning(1, (None, None), (url, Some("cst_a"))).unwrap();
        assert!(missing.contains("without COUNTERSIGN_TOKEN"), "{missing}");
        assert!(missing.contains("without COUNTERSIGN_URL"), "{missing}");
        assert!(
            missing.contains("codex app-server daemon restart"),
            "{missing}"
        );
        let other = daemon_env_warning(1, (url, Some("cst_old")), (url, Some("cst_new"))).unwrap();
        assert!(other.contains("another COUNTERSIGN_TOKEN"), "{other}");
        assert!(!other.contains("cst_"), "a token is never shown: {other}");
        // Unset is the default URL, on either side.
        let default = Some(DEFAULT_URL);
        assert_eq!(
            daemon_env_warning(1, (None, Some("t")), (default, Some("t"))),
            None
        );
        // A shell without a token cannot be compared, but a daemon without one is still wrong.
        assert_eq!(daemon_env_warning(1, (url, Some("t")), (url, None)), None);
    }

    #[tokio::test]
    async fn without_an_answer_codex_is_told_why_or_the_call_is_denied_as_asked() {
        let (stdin, ctx, mut flags) = unreachable_countersign();
        let read = |out: &HookOutcome| -> Value { serde_json::from_str(&out.stdout).unwrap() };
        // No token: Countersign is not asked; Codex shows why and asks in its own prompt.
        let said = read(&answer(&flags, stdin, &ctx).await);
        assert!(said["hookSpecificOutput"].is_null(), "{said}");
        let note = said["systemMessage"].as_str().unwrap();
        assert!(note.contains("COUNTERSIGN_TOKEN") && note.contains("Codex asks here"));
        flags.if_unreachable = Unreachable::Deny;
        let said = read(&answer(&flags, stdin, &ctx).await);
        assert_eq!(said["hookSpecificOutput"]["decision"]["behavior"], "deny");
        // A token, nobody answering: a deny when told to, else no decision (and, outside
        // Codex's daemon, nothing printed).
        flags.remote.token = Some("cst_test".into());
        let said = read(&answer(&flags, stdin, &ctx).await);
        let decision = &said["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "deny");
        assert!(
            decision["message"]
                .as_str()
                .unwrap()
                .contains("cannot reach Countersign"),
            "{said}"
        );
        flags.if_unreachable = Unreachable::Ask;
        assert_eq!(answer(&flags, stdin, &ctx).await.stdout, "");
    }

    /// Under an approval policy that asks nobody (`bypassPermissions`), Codex's own approval
    /// step is no person: an unreachable Countersign is a deny, with or without a token.
    #[tokio::test]
    async fn where_codex_asks_nobody_an_unreachable_countersign_is_a_deny() {
        let (stdin, ctx, mut flags) = unreachable_countersign();
        let mut bypass: Value = serde_json::from_slice(stdin).unwrap();
        bypass["permission_mode"] = json!("bypassPermissions");
        let bypass = bypass.to_string();
        for token in [Some("cst_test"), None] {
            flags.remote.token = token.map(str::to_owned);
            let out = answer(&flags, bypass.as_bytes(), &ctx).await;
            let said: Value = serde_json::from_str(&out.stdout).unwrap();
            let decision = &said["hookSpecificOutput"]["decision"];
            assert_eq!(decision["behavior"], "deny", "{token:?}: {said}");
            let message = decision["message"].as_str().unwrap();
            assert!(message.contains("bypassPermissions"), "{said}");
        }
    }

    #[tokio::test]
    async fn a_running_daemon_is_found_by_its_pid_file_and_read_from_proc() {
        if !Path::new("/proc/self/cmdline").exists() {
            return;
        }
        // A process that looks like Codex's daemon (`codex app-server … --managed-daemon`)
        // and has no COUNTERSIGN_TOKEN.
        let mut daemon = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(
                "exec -a /opt/codex/bin/codex bash -c 'sleep 30; true' app-server --managed-daemon",
            )
            .env_remove("COUNTERSIGN_TOKEN")
            .env("COUNTERSIGN_URL", "http://127.0.0.1:9000")
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = daemon.id().unwrap();
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".codex/app-server-daemon");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("daemon.pid"), format!(r#"{{"pid":{pid}}}"#)).unwrap();
        let mut found = None;
        for _ in 0..100 {
            // `exec -a` takes a moment to replace the first bash.
            if is_codex_daemon(pid) {
                found = daemon_warning(
                    home.path(),
                    Some("http://127.0.0.1:9000"),
                    Some("cst_shell"),
                );
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let warning = found.expect("the daemon is recognised");
        assert!(warning.contains(&format!("pid {pid}")), "{warning}");
        assert!(warning.contains("without COUNTERSIGN_TOKEN"), "{warning}");
        assert!(!warning.contains("COUNTERSIGN_URL="), "same URL: {warning}");
        assert!(!is_codex_daemon(std::process::id()));
        daemon.kill().await.unwrap();
        assert_eq!(daemon_warning(home.path(), None, None), None, "not running");
    }
}
