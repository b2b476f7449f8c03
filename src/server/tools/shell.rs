//! `shell`: runs `bash -c` in the workspace, inside the sandbox (a PID namespace of its own),
//! with a time limit, cancel, and capped output.
//!
//! The whole group is killed when the call ends (timeout, cancel, or the shell exiting), so
//! nothing the command started — background jobs, grandchildren — outlives the call.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::output::cap_bytes;
use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolError, ToolOutput, non_empty,
    parse, spec::spec_for,
};
use crate::protocol::{ToolClass, ToolStatus};
use crate::server::conversation::ToolSpec;

pub struct Shell;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The shell command line.
    command: String,
}

fn command_of(value: &Value) -> Result<String, ToolError> {
    let args: Args = parse(value)?;
    non_empty("command", args.command.trim())?;
    Ok(args.command)
}

#[async_trait]
impl Tool for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn class(&self) -> ToolClass {
        ToolClass::Exec
    }

    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Run a command with `bash -c` in the workspace and return its output and exit code.",
            self.class(),
        )
    }

    fn check(&self, value: &Value, _env: &CheckEnv<'_>) -> Result<(), Refusal> {
        command_of(value)?;
        Ok(())
    }

    fn subject_kind(&self) -> Option<super::SubjectKind> {
        Some(super::SubjectKind::Command)
    }

    fn subject(&self, value: &Value) -> Option<Subject> {
        value
            .get("command")?
            .as_str()
            .map(|c| Subject::Command(c.to_owned()))
    }

    fn card(&self, value: &Value, env: &super::CardEnv<'_>) -> CardText {
        let command = value.get("command").and_then(Value::as_str).unwrap_or("");
        CardText {
            title: "Shell".into(),
            summary: format!("shell: {command}"),
            diff: None,
            bound: self.binds(value, env),
        }
    }

    /// What the command would reach on disk: its globs' matches and the files under a folder
    /// a recursive reader reads (the floor checks them).
    fn hidden(&self, value: &Value, workspace: &std::path::Path) -> Vec<super::Hidden> {
        match value.get("command").and_then(Value::as_str) {
            Some(command) => super::shell_disk::reached(command, workspace),
            None => Vec::new(),
        }
    }

    /// The folder the command runs in (the workspace), with the command in the arguments.
    fn binds(&self, _value: &Value, env: &super::CardEnv<'_>) -> Option<String> {
        Some(format!("cwd:{}", env.workspace.display()))
    }

    async fn run(&self, value: &Value, ctx: &ToolContext) -> ToolOutput {
        match command_of(value) {
            Ok(command) => run(&command, ctx).await,
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// How long to wait for output still in flight once the group is dead. Only a process that
/// left the group (`setsid`) and kept the pipe open can make this wait run out.
const GRACE: Duration = Duration::from_secs(2);

enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

/// The shell commands run in: bash, whose syntax the safety floor reads (tree-sitter's bash
/// grammar). `sh` is often dash, which reads `$'…'`, `((…))` or `{a,b}` differently: a
/// command the floor read one way would run another.
fn bash() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
    })
}

async fn run(command: &str, ctx: &ToolContext) -> ToolOutput {
    let mut child = match spawn(command, ctx) {
        Ok(child) => child,
        Err(refused) => return refused,
    };
    // Declared after `child` so it drops first: if this future is dropped midway, the group
    // dies while the shell is still unreaped and its pid can't have been reused.
    let mut group = GroupKiller::new(child.id());
    let capture = Arc::new(Mutex::new(Capture::new(ctx.output_limit)));
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(out, Arc::clone(&capture))));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, Arc::clone(&capture))));
    }
    let ending = end_of(&mut child, &mut group, ctx).await;
    let drained = tokio::time::timeout(GRACE, async {
        for reader in &mut readers {
            let _ = reader.await;
        }
    })
    .await;
    if drained.is_err() {
        readers.iter().for_each(JoinHandle::abort);
    }
    let text = lock(&capture).render();
    output_of(ending, text, ctx)
}

/// The shell, started in the workspace with the minimal environment, confined — or the
/// refusal to run it unconfined or without bash.
fn spawn(command: &str, ctx: &ToolContext) -> Result<tokio::process::Child, ToolOutput> {
    let Some(bash) = bash() else {
        return Err(ToolOutput {
            status: ToolStatus::Refused,
            output: "commands run in bash, whose syntax the safety floor reads, and bash is not \
                     installed here; install it to let the agent run commands"
                .into(),
        });
    };
    let mut shell = Command::new(bash);
    shell
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Err(why) = ctx.sandbox.apply(&mut shell) {
        return Err(ToolOutput {
            status: ToolStatus::Refused,
            output: why,
        });
    }
    shell
        .spawn()
        .map_err(|e| ToolOutput::error(ToolError::Spawn(e).to_string()))
}

/// How the shell ended: exited, timed out or cancelled; whatever it left running in its
/// group is killed, and the shell itself reaped.
async fn end_of(
    child: &mut tokio::process::Child,
    group: &mut GroupKiller,
    ctx: &ToolContext,
) -> Ending {
    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status),
        () = tokio::time::sleep(ctx.shell_timeout) => Ending::TimedOut,
        () = ctx.cancel.cancelled() => Ending::Cancelled,
    };
    group.kill();
    if !matches!(ending, Ending::Exited(_)) {
        // Belt and braces should the group signal have failed; then reap the shell.
        let _ = child.start_kill();
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
    }
    ending
}

/// What the agent is told: the output, with a footer saying how it ended when not well.
fn output_of(ending: Ending, text: String, ctx: &ToolContext) -> ToolOutput {
    match ending {
        Ending::Exited(Ok(status)) if status.success() => {
            let text = if text.is_empty() {
                "(no output)".into()
            } else {
                text
            };
            ToolOutput::ok(text)
        }
        Ending::Exited(Ok(status)) => ToolOutput::error(with_footer(text, &describe(status))),
        Ending::Exited(Err(e)) => ToolOutput::error(with_footer(
            text,
            &format!("could not wait for the shell: {e}"),
        )),
        Ending::TimedOut => ToolOutput {
            status: ToolStatus::Timeout,
            output: with_footer(
                text,
                &format!("timed out after {} s", seconds(ctx.shell_timeout)),
            ),
        },
        Ending::Cancelled => ToolOutput {
            status: ToolStatus::Cancelled,
            output: with_footer(text, "cancelled"),
        },
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "exited abnormally".into(),
    }
}

fn with_footer(text: String, footer: &str) -> String {
    if text.is_empty() {
        footer.to_owned()
    } else if text.ends_with('\n') {
        format!("{text}{footer}")
    } else {
        format!("{text}\n{footer}")
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// Sends SIGKILL to the shell's process group, at most once.
struct GroupKiller(Option<libc::pid_t>);

impl GroupKiller {
    fn new(pid: Option<u32>) -> Self {
        // Never 0 or negative: killpg(0) would hit our own group.
        GroupKiller(
            pid.and_then(|p| libc::pid_t::try_from(p).ok())
                .filter(|p| *p > 0),
        )
    }

    /// After the shell exits normally it has been reaped, but its group id stays reserved while
    /// any member lives, so the signal can only reach the command's own leftovers.
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg only sends a signal; `pgid` is positive and names the group that
            // `process_group(0)` created for our child.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// stdout and stderr in arrival order, keeping `limit` bytes and counting the rest.
struct Capture {
    kept: Vec<u8>,
    total: usize,
    limit: usize,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Capture {
            kept: Vec::new(),
            total: 0,
            limit,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.limit.saturating_sub(self.kept.len());
        self.kept
            .extend_from_slice(chunk.get(..room).unwrap_or(chunk));
        self.total += chunk.len();
    }

    fn render(&self) -> String {
        cap_bytes(&self.kept, self.total, self.limit)
    }
}

fn lock(capture: &Mutex<Capture>) -> MutexGuard<'_, Capture> {
    // A panic elsewhere can't leave a byte buffer inconsistent; keep using it.
    capture.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads a pipe to its end, so the command never blocks on a full pipe; bytes past the cap are
/// counted and dropped.
async fn pump<R: AsyncRead + Unpin>(mut pipe: R, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&capture).push(buf.get(..n).unwrap_or(&buf)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ctx, run};
    use crate::protocol::ToolStatus;
    use serde_json::json;
    use std::time::{Duration, Instant};

    /// Alive means running or sleeping; a zombie is dead (its parent may simply not reap).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|s| s.trim().chars().next());
                !matches!(state, Some('Z' | 'X') | None)
            }
            Err(_) => false,
        }
    }

    /// The live processes whose environment holds `CS_MARK=<mark>` (a command runs in a PID
    /// namespace of its own, so the pids it sees are not the host's: tests find it by mark).
    fn marked(mark: &str) -> Vec<i32> {
        let wanted = format!("CS_MARK={mark}");
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
            })
            .filter(|pid| alive(*pid))
            .collect()
    }

    /// A mark no other test's processes carry.
    fn fresh_mark() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// Waits until `n` processes carry the mark.
    async fn wait_marked(mark: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while marked(mark).len() < n {
            assert!(
                Instant::now() < deadline,
                "{n} marked processes never ran (found {:?})",
                marked(mark)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn assert_all_die(mark: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !marked(mark).is_empty() {
            assert!(Instant::now() < deadline, "still alive: {:?}", marked(mark));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Ways a command's processes try to outlive it: a new session, a double fork, nohup, a
    /// daemon that closes its output, a reparented background job.
    fn escapes(mark: &str) -> Vec<String> {
        let sleeper = format!("env CS_MARK={mark} sleep 300");
        vec![
            format!("setsid {sleeper} >/dev/null 2>&1 &"),
            format!("( ( {sleeper} >/dev/null 2>&1 & ) & )"),
            format!("nohup {sleeper} >/dev/null 2>&1 &"),
            format!("setsid sh -c '{sleeper} </dev/null >/dev/null 2>&1 &' &"),
            format!("sh -c 'trap \"\" HUP TERM; exec {sleeper}' >/dev/null 2>&1 &"),
        ]
    }

    #[tokio::test]
    async fn returns_output_of_a_successful_command() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("here.txt"), "").unwrap();
        let c = ctx(ws.path(), 10_000);
        let out = run(
            &c,
            "shell",
            json!({"command": "echo hi; ls; echo oops >&2"}),
        )
        .await;
        assert_eq!(out.status, ToolStatus::Ok);
        assert!(out.output.contains("hi\n"), "{}", out.output);
        assert!(
            out.output.contains("here.txt"),
            "runs in the workspace: {}",
            out.output
        );
        assert!(
            out.output.contains("oops"),
            "captures stderr: {}",
            out.output
        );

        let out = run(&c, "shell", json!({"command": "true"})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "(no output)")
        );
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_with_the_code() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);
        let out = run(&c, "shell", json!({"command": "echo failing; exit 3"})).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Error, "failing\nexit code 3")
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_command_and_everything_it_started() {
        let ws = tempfile::tempdir().unwrap();
        let mut c = ctx(ws.path(), 10_000);
        c.shell_timeout = Duration::from_secs(2);
        let mark = fresh_mark();
        let escapes = escapes(&mark);
        let command = format!(
            "echo started\n{}\nexec env CS_MARK={mark} sleep 30",
            escapes.join("\n")
        );
        let started = Instant::now();
        let out = run(&c, "shell", json!({ "command": command })).await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(out.status, ToolStatus::Timeout);
        assert_eq!(out.output, "started\ntimed out after 2 s");
        assert_all_die(&mark).await;
    }

    #[tokio::test]
    async fn cancel_kills_everything_the_command_started() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);
        let mark = fresh_mark();
        let escapes = escapes(&mark);
        let n = escapes.len() + 1;
        let task = {
            let c = c.clone();
            let command = format!("{}\nenv CS_MARK={mark} sleep 30 & wait", escapes.join("\n"));
            tokio::spawn(async move { run(&c, "shell", json!({ "command": command })).await })
        };
        wait_marked(&mark, n).await;
        c.cancel.cancel();
        let out = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("cancel should end the call promptly")
            .unwrap();
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Cancelled, "cancelled")
        );
        assert_all_die(&mark).await;
    }

    #[tokio::test]
    async fn nothing_outlives_a_command_that_exits() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);
        let mark = fresh_mark();
        let escapes = escapes(&mark);
        let started = Instant::now();
        let command = format!("{}\nsleep 0.5; echo done", escapes.join("\n"));
        let out = run(&c, "shell", json!({ "command": command })).await;
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Ok, "done\n"),
            "{out:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_all_die(&mark).await;
    }

    /// The probe found PID namespaces on this machine (CI runs as root), so the escapes above
    /// were really tried against them, not only against the process group.
    #[test]
    fn commands_run_in_a_pid_namespace_here() {
        let isolation = super::super::sandbox::isolation();
        assert!(
            !matches!(isolation, super::super::sandbox::Isolation::GroupOnly(_)),
            "{}",
            isolation.describe()
        );
    }

    #[tokio::test]
    async fn huge_output_is_drained_and_capped() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 1000);
        let out = run(
            &c,
            "shell",
            json!({"command": "yes | head -c 10000000; echo done >&2"}),
        )
        .await;
        assert_eq!(out.status, ToolStatus::Ok);
        assert!(out.output.len() < 1100, "{} bytes", out.output.len());
        assert!(
            out.output.ends_with("…[truncated, 10000005 bytes total]"),
            "{}",
            out.output
                .get(out.output.len().saturating_sub(80)..)
                .unwrap_or_default()
        );
    }
}
