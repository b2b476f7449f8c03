//! Every process a command starts ends with the call: the command runs as the first process
//! of a PID namespace of its own, so when it exits — or is killed on Stop or the shell
//! timeout — the kernel kills everything else in that namespace, whether it left the process
//! group (`setsid`), was double-forked, `nohup`ed or daemonized.
//!
//! How: in the spawned child (before the sandbox's own `pre_exec`), `unshare(CLONE_NEWPID)`
//! and fork. The forked child is the namespace's first process; it arms `PR_SET_PDEATHSIG`
//! and goes on to be confined and exec the command. The parent stays outside, waits for it and
//! exits with its status, so the server's `Child` (and the process group it kills) is that
//! parent: killing it kills the namespace's first process, which takes the namespace down.
//!
//! Without `CAP_SYS_ADMIN` (the server not run as root) a user namespace is made with it, the
//! user mapped to itself. Where neither is allowed, commands still run in a process group of
//! their own, killed as a whole; the startup log says so, and what that does not cover.

use std::ffi::CString;
use std::io;

/// How commands are kept from outliving their call, as probed at startup.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// A PID namespace per call (the server may create them).
    PidNamespace,
    /// A user and PID namespace per call (unprivileged), with these maps written.
    UserNamespace(Box<UserMaps>),
    /// A process group per call only; why namespaces are unavailable.
    GroupOnly(String),
}

/// The uid and gid maps of an unprivileged call's user namespace: the server's own ids, mapped
/// to themselves. Prepared before the fork, so the child only writes bytes.
#[derive(Debug, Clone)]
pub struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    setgroups: CString,
    uid_path: CString,
    gid_path: CString,
}

impl UserMaps {
    fn new() -> UserMaps {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        UserMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            setgroups: c"/proc/self/setgroups".to_owned(),
            uid_path: c"/proc/self/uid_map".to_owned(),
            gid_path: c"/proc/self/gid_map".to_owned(),
        }
    }
}

impl Isolation {
    /// Finds what this machine allows, by spawning `true` each way.
    pub fn probe() -> Isolation {
        let first = match try_spawn(&Isolation::PidNamespace) {
            Ok(()) => return Isolation::PidNamespace,
            Err(e) => e,
        };
        let user = Isolation::UserNamespace(Box::new(UserMaps::new()));
        match try_spawn(&user) {
            Ok(()) => user,
            Err(second) => Isolation::GroupOnly(format!(
                "PID namespaces are not available here ({first}; unprivileged: {second})"
            )),
        }
    }

    /// One line for the startup log.
    pub fn describe(&self) -> String {
        match self {
            Isolation::PidNamespace => "each command runs in a PID namespace of its own: everything it starts ends with it (on exit, Stop or the shell timeout)".into(),
            Isolation::UserNamespace(_) => "each command runs in a user and PID namespace of its own: everything it starts ends with it (on exit, Stop or the shell timeout)".into(),
            Isolation::GroupOnly(why) => format!(
                "{why}: each command runs in a process group of its own, killed as a whole; a process that leaves the group (setsid, a daemon) can outlive the call"
            ),
        }
    }

    /// Registers the namespace step on `command`; it must run before any step that drops
    /// capabilities (`unshare` needs them). Does nothing for `GroupOnly`.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        let flags = match self {
            Isolation::PidNamespace => libc::CLONE_NEWPID,
            Isolation::UserNamespace(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWPID,
            Isolation::GroupOnly(_) => return,
        };
        let maps = match self {
            Isolation::UserNamespace(maps) => Some(maps.as_ref().clone()),
            _ => None,
        };
        // SAFETY: the hook runs in the forked child before exec and only makes raw system
        // calls on values prepared here (no allocation, no locks).
        unsafe {
            command.pre_exec(move || enter(flags, maps.as_ref()));
        }
    }
}

/// Spawns `true` under `isolation` and waits for it: `Ok` when it ran and exited 0.
fn try_spawn(isolation: &Isolation) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let flags = match isolation {
        Isolation::PidNamespace => libc::CLONE_NEWPID,
        Isolation::UserNamespace(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWPID,
        Isolation::GroupOnly(_) => return Ok(()),
    };
    let maps = match isolation {
        Isolation::UserNamespace(maps) => Some(maps.as_ref().clone()),
        _ => None,
    };
    let mut command = std::process::Command::new("true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: as in `apply`.
    unsafe {
        command.pre_exec(move || enter(flags, maps.as_ref()));
    }
    let status = command.spawn()?.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("the probe exited with {status}")))
    }
}

/// Writes `bytes` to the file at `path` (an id map). Allocation-free.
unsafe fn write_file(path: &CString, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In the spawned child: a new PID namespace and its first process (which returns, to be
/// confined and exec the command); this process waits for it outside and exits as it did.
fn enter(flags: libc::c_int, maps: Option<&UserMaps>) -> io::Result<()> {
    // SAFETY: plain system calls on values prepared before the fork; this process is the
    // single-threaded child `Command` forked.
    unsafe {
        if libc::unshare(flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(maps) = maps {
            write_file(&maps.setgroups, b"deny")?;
            write_file(&maps.uid_path, &maps.uid_map)?;
            write_file(&maps.gid_path, &maps.gid_map)?;
        }
        // Only the waiting parent keeps the write end: the first process sees it closed (the
        // parent is gone) if the parent died before the death signal was armed.
        let mut alive = [0 as libc::c_int; 2];
        if libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read_end, write_end] = alive;
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // The namespace's first process: dies with the parent that waits for it.
            libc::close(write_end);
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                libc::_exit(127);
            }
            let mut gone = libc::pollfd {
                fd: read_end,
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut gone, 1, 0) != 0 {
                libc::_exit(127);
            }
            libc::close(read_end);
            return Ok(());
        }
        // The waiting parent: keep only stdio and the pipe's write end, so the spawner's
        // exec-status pipe closes and `spawn` returns (the exec it waits for is the first
        // process's), then mirror the command's end.
        libc::close(read_end);
        close_all_but(write_end);
        exit_as(pid)
    }
}

/// Waits for the namespace's first process and ends this one as it ended: the same exit
/// code, or the same signal. Only system calls: it runs in a forked child.
unsafe fn exit_as(pid: libc::pid_t) -> ! {
    // SAFETY: waitpid, signal, kill and _exit on this process and its own child.
    unsafe {
        let mut status: libc::c_int = 0;
        loop {
            if libc::waitpid(pid, &mut status, 0) >= 0 {
                break;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(127)
    }
}

/// Closes every descriptor from 3 up, except `keep`.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = libc::c_uint::try_from(keep).unwrap_or(0);
    // SAFETY: close_range only closes descriptors.
    unsafe {
        if keep > 3 {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                keep - 1,
                0 as libc::c_uint,
            );
        }
        libc::syscall(
            libc::SYS_close_range,
            keep + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
    }
}
