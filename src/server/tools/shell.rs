//! `shell`: runs `sh -c` in the workspace in its own process group, inside the sandbox, with a
//! time limit, cancel, and capped output.
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
use serde::Deserialize;
use serde_json::Value;

use super::output::cap_bytes;
use super::{
    CardText, CheckEnv, Refusal, Subject, Tool, ToolContext, ToolError, ToolOutput, non_empty,
    parse, string_spec,
};
use crate::protocol::{ToolClass, ToolStatus};
use crate::server::conversation::ToolSpec;

pub struct Shell;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
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
        string_spec(
            self.name(),
            "Run a command with `sh -c` in the workspace and return its output and exit code.",
            self.class(),
            &[("command", "The shell command line.")],
            &["command"],
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

    fn card(&self, value: &Value, _workspace: &std::path::Path) -> CardText {
        let command = value.get("command").and_then(Value::as_str).unwrap_or("");
        CardText {
            title: "Shell".into(),
            summary: format!("shell: {command}"),
            diff: None,
        }
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

async fn run(command: &str, ctx: &ToolContext) -> ToolOutput {
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // In the workspace, with the minimal environment, confined — or not at all.
    if let Err(why) = ctx.sandbox.apply(&mut shell) {
        return ToolOutput {
            status: ToolStatus::Refused,
            output: why,
        };
    }
    let spawned = shell.spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return ToolOutput::error(ToolError::Spawn(e).to_string()),
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
    use std::path::Path;
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

    async fn read_pid(file: &Path) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(file)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "the command never wrote its pid");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn assert_dies(pid: i32) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid) {
            assert!(Instant::now() < deadline, "process {pid} is still alive");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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
    async fn timeout_kills_the_command_and_its_children() {
        let ws = tempfile::tempdir().unwrap();
        let mut c = ctx(ws.path(), 10_000);
        c.shell_timeout = Duration::from_secs(1);
        let started = Instant::now();
        let out = run(
            &c,
            "shell",
            json!({"command": "echo started; sh -c 'echo $$ > pid; sleep 30'"}),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(out.status, ToolStatus::Timeout);
        assert_eq!(out.output, "started\ntimed out after 1 s");
        assert_dies(read_pid(&ws.path().join("pid")).await).await;
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_process_group() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);
        let task = {
            let c = c.clone();
            tokio::spawn(async move {
                run(
                    &c,
                    "shell",
                    json!({"command": "sleep 30 & echo $! > pid; wait"}),
                )
                .await
            })
        };
        let pid = read_pid(&ws.path().join("pid")).await;
        assert!(alive(pid), "the background sleep should be running");
        c.cancel.cancel();
        let out = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("cancel should end the call promptly")
            .unwrap();
        assert_eq!(
            (out.status, out.output.as_str()),
            (ToolStatus::Cancelled, "cancelled")
        );
        assert_dies(pid).await;
    }

    #[tokio::test]
    async fn background_jobs_die_when_the_shell_exits() {
        let ws = tempfile::tempdir().unwrap();
        let c = ctx(ws.path(), 10_000);
        let started = Instant::now();
        let out = run(&c, "shell", json!({"command": "sleep 30 & echo $! > pid"})).await;
        assert_eq!(out.status, ToolStatus::Ok);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_dies(read_pid(&ws.path().join("pid")).await).await;
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
