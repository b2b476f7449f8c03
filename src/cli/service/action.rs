//! One change `service install` or `uninstall` makes: said as the command that would make it
//! (what `--dry-run` prints) and made.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::beneath;
use super::error::ServiceError;
use crate::server::os_user::account::{self, Account};
use crate::server::os_user::files::octal;

/// Who a written file or a made folder belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The service's account (made by an earlier step, found by name when the step runs).
    Service,
    Root,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    CreateAccount {
        name: String,
        home: PathBuf,
        shell: PathBuf,
    },
    /// A folder (and any missing parents, root's), owned by the service.
    MakeDir {
        path: PathBuf,
        mode: u32,
    },
    /// Give a path in `root` (never what a link there points to) to the service's account.
    Own {
        root: PathBuf,
        path: PathBuf,
        was: u32,
    },
    /// Take group and other bits away from a path in `root` (and give the owner what it needs).
    Restrict {
        root: PathBuf,
        path: PathBuf,
        was: u32,
        to: u32,
    },
    WriteFile {
        path: PathBuf,
        text: String,
        mode: u32,
        owner: Owner,
    },
    /// Copy a file, root's, replacing the old one whole (a running binary included).
    CopyFile {
        from: PathBuf,
        to: PathBuf,
        mode: u32,
    },
    /// Copy a folder's files, root's, readable by all (the web UI).
    CopyTree {
        from: PathBuf,
        to: PathBuf,
    },
    RemoveFile {
        path: PathBuf,
    },
    RemoveTree {
        path: PathBuf,
    },
    DeleteAccount {
        name: String,
    },
    /// `systemctl …`, only where systemd runs; a failure is reported, not fatal.
    Systemctl {
        args: Vec<String>,
    },
}

impl Action {
    /// The step as a command line.
    pub fn describe(&self, user: &str) -> String {
        let owner = |o: &Owner| match o {
            Owner::Service => user.to_owned(),
            Owner::Root => "root".to_owned(),
        };
        match self {
            Action::CreateAccount { name, home, shell } => format!(
                "useradd --system --user-group --home-dir {} --no-create-home --shell {} {name}",
                home.display(),
                shell.display()
            ),
            Action::MakeDir { path, mode } => format!(
                "install -d -m {} -o {user} -g {user} {}",
                octal(*mode),
                path.display()
            ),
            Action::Own { path, was, .. } => {
                format!(
                    "chown -h {user}:{user} {}   # was uid {was}",
                    path.display()
                )
            }
            Action::Restrict { path, was, to, .. } => format!(
                "chmod {} {}   # was {}",
                octal(*to),
                path.display(),
                octal(*was)
            ),
            Action::WriteFile {
                path,
                mode,
                owner: o,
                ..
            } => format!(
                "write {} (mode {}, owner {})",
                path.display(),
                octal(*mode),
                owner(o)
            ),
            Action::CopyFile { from, to, mode } => {
                format!(
                    "install -m {} {} {}",
                    octal(*mode),
                    from.display(),
                    to.display()
                )
            }
            Action::CopyTree { from, to } => {
                format!("cp -r {}/. {}", from.display(), to.display())
            }
            Action::RemoveFile { path } => format!("rm {}", path.display()),
            Action::RemoveTree { path } => format!("rm -r {}", path.display()),
            Action::DeleteAccount { name } => format!("userdel {name}"),
            Action::Systemctl { args } => format!("systemctl {}", args.join(" ")),
        }
    }

    /// Makes the change. `user` is the service account's name.
    pub fn apply(&self, user: &str) -> Result<(), ServiceError> {
        match self {
            Action::CreateAccount { name, home, shell } => run(Command::new("useradd").args([
                "--system".as_ref(),
                "--user-group".as_ref(),
                "--home-dir".as_ref(),
                home.as_os_str(),
                "--no-create-home".as_ref(),
                "--shell".as_ref(),
                shell.as_os_str(),
                name.as_ref(),
            ])),
            Action::MakeDir { path, mode } => make_dir(path, *mode, &service(user)?),
            Action::Own { root, path, .. } => {
                let a = service(user)?;
                beneath::give(root, path, a.uid, a.gid).map_err(ServiceError::io("give", path))
            }
            Action::Restrict { root, path, to, .. } => {
                beneath::restrict(root, path, *to).map_err(ServiceError::io("restrict", path))
            }
            Action::WriteFile {
                path,
                text,
                mode,
                owner,
            } => write_file(path, text.as_bytes(), *mode, *owner, user),
            Action::CopyFile { from, to, mode } => copy_file(from, to, *mode),
            Action::CopyTree { from, to } => copy_tree(from, to),
            Action::RemoveFile { path } => {
                std::fs::remove_file(path).map_err(ServiceError::io("remove", path))
            }
            Action::RemoveTree { path } => {
                std::fs::remove_dir_all(path).map_err(ServiceError::io("remove", path))
            }
            Action::DeleteAccount { name } => run(Command::new("userdel").arg(name)),
            Action::Systemctl { args } => {
                if let Err(e) = run(Command::new("systemctl").args(args)) {
                    eprintln!("countersign: {e} (going on)");
                }
                Ok(())
            }
        }
    }
}

/// The service's account, which an earlier step made.
fn service(user: &str) -> Result<Account, ServiceError> {
    account::by_name(user)
        .ok_or_else(|| ServiceError::Account(format!("the account `{user}` is not in /etc/passwd")))
}

fn run(command: &mut Command) -> Result<(), ServiceError> {
    let line = format!("{command:?}");
    let out = command.output().map_err(|e| ServiceError::Command {
        line: line.clone(),
        detail: e.to_string(),
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(ServiceError::Command {
        line,
        detail: format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

fn chmod(path: &Path, mode: u32) -> Result<(), ServiceError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(ServiceError::io("restrict", path))
}

fn make_dir(path: &Path, mode: u32, owner: &Account) -> Result<(), ServiceError> {
    let parent = path
        .parent()
        .ok_or_else(|| ServiceError::Invalid(format!("{} has no parent", path.display())))?;
    std::fs::create_dir_all(parent).map_err(ServiceError::io("make", parent))?;
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(ServiceError::io("make", path)(e)),
    }
    // Through handles: the parent may be the service's own data dir.
    beneath::give(parent, path, owner.uid, owner.gid).map_err(ServiceError::io("give", path))?;
    beneath::restrict(parent, path, mode).map_err(ServiceError::io("restrict", path))
}

/// Writes `bytes` to `path` with its mode and owner ([`place`]).
fn write_file(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Owner,
    user: &str,
) -> Result<(), ServiceError> {
    use std::io::Write;
    place(path, mode, owner, user, |file| {
        file.write_all(bytes)?;
        file.sync_all()
    })
}

/// Makes a new file beside `path` (`fill` writes it), gives it its owner and mode through its
/// handle (the folder may be the service's, which could swap the name meanwhile), then renames
/// it over `path`: nobody ever sees a half-written file or one with looser bits, and a running
/// binary is replaced, not written into.
fn place(
    path: &Path,
    mode: u32,
    owner: Owner,
    user: &str,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), ServiceError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(ServiceError::io("make", parent))?;
    }
    let fresh = path.with_extension("countersign-new");
    let _ = std::fs::remove_file(&fresh);
    // Closed to everyone but root while it is filled; never through a link planted there.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&fresh)
        .map_err(ServiceError::io("write", &fresh))?;
    fill(&mut file).map_err(ServiceError::io("write", &fresh))?;
    let (uid, gid) = match owner {
        Owner::Service => {
            let a = service(user)?;
            (a.uid, a.gid)
        }
        Owner::Root => (0, 0),
    };
    std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
        .map_err(ServiceError::io("give", &fresh))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(ServiceError::io("restrict", &fresh))?;
    drop(file);
    std::fs::rename(&fresh, path).map_err(ServiceError::io("write", path))
}

fn copy_file(from: &Path, to: &Path, mode: u32) -> Result<(), ServiceError> {
    let mut source = std::fs::File::open(from).map_err(ServiceError::io("read", from))?;
    place(to, mode, Owner::Root, "root", |file| {
        std::io::copy(&mut source, file)?;
        file.sync_all()
    })
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), ServiceError> {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry
            .map_err(|e| ServiceError::Invalid(format!("cannot read {}: {e}", from.display())))?;
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).map_err(ServiceError::io("make", &target))?;
            chmod(&target, 0o755)?;
        } else if entry.file_type().is_file() {
            copy_file(entry.path(), &target, 0o644)?;
        }
    }
    Ok(())
}

/// Whether the file at `to` differs from the one at `from` (or is missing), read in chunks.
pub fn file_differs(from: &Path, to: &Path) -> bool {
    let same_size = match (std::fs::metadata(from), std::fs::metadata(to)) {
        (Ok(a), Ok(b)) => a.len() == b.len(),
        _ => false,
    };
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(from), std::fs::File::open(to)) else {
        return true;
    };
    if !same_size {
        return true;
    }
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let (Ok(n), Ok(m)) = (read_full(&mut a, &mut x), read_full(&mut b, &mut y)) else {
            return true;
        };
        if n != m || x[..n] != y[..m] {
            return true;
        }
        if n == 0 {
            return false;
        }
    }
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Whether any file of the tree at `from` is missing or different under `to`.
pub fn tree_differs(from: &Path, to: &Path) -> bool {
    walkdir::WalkDir::new(from)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .any(|e| match e.path().strip_prefix(from) {
            Ok(rel) => file_differs(e.path(), &to.join(rel)),
            Err(_) => true,
        })
}

/// Prints the steps (a dry run) or makes them, each said as it is made.
pub fn carry_out(actions: &[Action], user: &str, dry_run: bool) -> Result<(), ServiceError> {
    if actions.is_empty() {
        println!("nothing to change");
        return Ok(());
    }
    if dry_run {
        println!("dry run: would do");
    }
    for action in actions {
        println!("  {}", action.describe(user));
        if !dry_run {
            action.apply(user)?;
        }
    }
    Ok(())
}
