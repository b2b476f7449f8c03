//! Real OS users for the tests of the OS boundary: made with `useradd`, removed (with their
//! group) when dropped, also when the test panics. Only root can do this; [`missing`] says
//! why a machine cannot.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs the tests need.
const TOOLS: [&str; 4] = ["useradd", "userdel", "runuser", "setpriv"];

/// Why the OS-user tests cannot run here (not root, a program missing), or `None`. Under
/// `COUNTERSIGN_OS_USERS=required` (what `scripts/test` sets as root, so CI runs them) a reason
/// is a failure, not a skip.
pub fn missing() -> Option<String> {
    let why = why_missing()?;
    if std::env::var("COUNTERSIGN_OS_USERS").as_deref() == Ok("required") {
        panic!("the two-user tests are required here, but {why}");
    }
    Some(why)
}

fn why_missing() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root (useradd and runuser need it)".into());
    }
    TOOLS
        .iter()
        .find(|tool| which(tool).is_none())
        .map(|tool| format!("`{tool}` is not installed"))
}

/// The program's path on `PATH` (or the sbin folders, which a non-login PATH may lack).
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| candidate.is_file())
}

/// A name no other run uses (user names are at most 32 characters).
pub fn unique_name(role: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "cs{role}{}x{}",
        std::process::id() % 100_000,
        nanos % 100_000
    )
}

/// Users this test made or had made; each is removed when this drops.
#[derive(Default)]
pub struct TestUsers {
    names: Vec<String>,
}

impl TestUsers {
    /// Makes a person-like user (a login shell) with this home, owned by it.
    pub fn person(&mut self, name: &str, home: &Path) {
        self.adopt(name);
        let out = Command::new(which("useradd").expect("useradd"))
            .args(["--user-group", "--shell", "/bin/sh", "--home-dir"])
            .arg(home)
            .arg("--create-home")
            .arg(name)
            .output()
            .expect("run useradd");
        assert!(out.status.success(), "useradd {name}: {out:?}");
    }

    /// Removes `name` at the end (a user something else makes).
    pub fn adopt(&mut self, name: &str) {
        self.names.push(name.to_owned());
    }
}

impl Drop for TestUsers {
    fn drop(&mut self) {
        for name in self.names.drain(..).rev() {
            if let Some(userdel) = which("userdel") {
                // `-f`: even if a process of it outlived the test. The home is a temp dir's.
                let _ = Command::new(userdel).args(["-f", &name]).output();
            }
            if let Some(groupdel) = which("groupdel") {
                let _ = Command::new(groupdel).arg(&name).output();
            }
        }
    }
}

/// `runuser -u <user> -- <program> <args…>`, with none of the caller's `COUNTERSIGN_*`
/// settings and `RUST_LOG=warn`, from the folder `cwd` (which the user must be able to enter).
pub fn as_user(user: &str, cwd: &Path, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(which("runuser").expect("runuser"));
    cmd.args(["-u", user, "--", program]).args(args);
    tidy(&mut cmd, cwd);
    cmd
}

/// `setpriv --reuid --regid --init-groups -- …`: like [`as_user`], but the program replaces
/// setpriv, so killing the child kills the program itself (a server).
pub fn exec_as_user(user: &str, cwd: &Path, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(which("setpriv").expect("setpriv"));
    cmd.args([
        format!("--reuid={user}"),
        format!("--regid={user}"),
        "--init-groups".into(),
        "--".into(),
        program.into(),
    ])
    .args(args);
    tidy(&mut cmd, cwd);
    cmd
}

fn tidy(cmd: &mut Command, cwd: &Path) {
    cmd.current_dir(cwd).env("RUST_LOG", "warn");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("COUNTERSIGN_") || key == "XDG_DATA_HOME" {
            cmd.env_remove(key);
        }
    }
}
