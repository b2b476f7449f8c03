//! An agent's interactive terminal, driven with tmux (some paths exist only there: Esc in the
//! middle of a call). Each [`Tui`] runs on a tmux server of its own, killed when dropped.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{SOON, poll_until};

pub struct Tui {
    socket: String,
    /// The program's process group (tmux starts each pane in a session of its own).
    pane_pid: Option<i32>,
}

impl Tui {
    /// Starts `program args…` in a 200×50 terminal in `dir` with exactly `env`; `None` (and a
    /// note) where tmux is missing and the run does not require it.
    pub fn start(
        program: &Path,
        args: &[&str],
        dir: &Path,
        env: &[(String, OsString)],
    ) -> Option<Tui> {
        if Command::new("tmux").arg("-V").output().is_err() {
            if std::env::var("COUNTERSIGN_REAL_AGENTS").as_deref() == Ok("required") {
                panic!("tmux is not installed (scripts/test installs it)");
            }
            eprintln!("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("countersign-test-{}-{}", std::process::id(), rand_suffix());
        let mut cmd = Command::new("tmux");
        cmd.args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "50",
        ])
        .arg("-c")
        .arg(dir)
        .arg("--")
        .arg("env")
        .arg("-i");
        for (key, value) in env {
            let mut pair = OsString::from(key);
            pair.push("=");
            pair.push(value);
            cmd.arg(pair);
        }
        cmd.arg(program).args(args);
        let status = cmd.status().expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        let pane_pid = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "display-message",
                "-p",
                "-t",
                "0",
                "#{pane_pid}",
            ])
            .output()
            .ok()
            .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok());
        Some(Tui { socket, pane_pid })
    }

    /// What the terminal shows now.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text`.
    pub async fn shows(&self, text: &str) {
        let text = text.to_owned();
        poll_until(&format!("the terminal to show {text:?}"), SOON, || async {
            let screen = self.screen();
            if screen.contains(&text) {
                Ok(())
            } else {
                Err(screen)
            }
        })
        .await;
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.send(&["-l", text]);
    }

    /// Presses keys by tmux name (`Enter`, `Escape`).
    pub fn press(&self, key: &str) {
        self.send(&[key]);
    }

    fn send(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0"])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(status.success(), "tmux send-keys {keys:?}");
    }

    /// Once the terminal shows `ready`, types `prompt` and sends it.
    pub async fn ask(&self, ready: &str, prompt: &str) {
        self.shows(ready).await;
        self.type_text(prompt);
        Tui::settle().await;
        self.press("Enter");
    }

    /// Gives a terminal program a moment between keys (TUIs read input in frames).
    pub async fn settle() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // Some agents outlive the terminal's hang-up (Gemini relaunches itself as a child):
        // the pane's whole process group goes first.
        if let Some(pid) = self.pane_pid.filter(|pid| *pid > 1) {
            // SAFETY: plain syscall; a negative pid names the pane's process group.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_007)
}
