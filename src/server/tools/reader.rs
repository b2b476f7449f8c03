//! The one way the server opens workspace files: the file tools, `search` and the card's diff
//! all open through [`open`], so what holds here holds for every one of them.
//!
//! - **Regular files only.** The open never waits (`O_NONBLOCK`: a FIFO with no writer opens
//!   at once, one with no reader refuses), then `fstat` decides: a FIFO, socket or device is a
//!   tool error, never a wait. (Listings open directories, and only directories.)
//! - **The safety floor on the real path.** The path checked is the one the file really is at
//!   (after every symlink), and a file with other hard links counts as a floor file: it may be
//!   `.git/config` or `.env` under another name. Unless a person approved this very call on a
//!   floor card ([`Guard::Cleared`]), a floor file is refused here, whatever the mode said.
//! - **Never on the async workers, never unbounded.** Every caller runs it through
//!   [`blocking`], which gives the work to the blocking pool and stops waiting after a time
//!   limit or on cancel: a slow mount delays one call, never a card, Stop or shutdown.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ToolError;
use super::beneath::{self, Access};
use super::confine::{self, Resolved};

/// How long a file operation may take before the call gives up on it (the thread it ran on
/// may stay blocked in the kernel; nothing waits for it any more).
pub const FS_LIMIT: Duration = Duration::from_secs(20);

/// The safety floor's path rules, as the reader consults them. A trait because the floor
/// (`gate::floor`) is built on the tools; `SafetyFloor` implements it.
pub trait FloorPaths: Send + Sync {
    /// Why the workspace path `path` (relative, normalized) is on the floor — itself, or as a
    /// folder something on the floor lies in — in words; `None` when it is not.
    fn path_hit(&self, path: &str) -> Option<String>;
}

/// Whether floor files may be opened by this call.
#[derive(Clone)]
pub enum Guard {
    /// They are refused (and a search skips them).
    Floor(Arc<dyn FloorPaths>),
    /// A person approved this call on a safety-floor card: it may open what the card showed.
    Cleared,
}

/// Why a file is on the floor though its spelling is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden {
    /// The path is a symlink (or goes through one) to this workspace path.
    LeadsTo(String),
    /// The file has other hard links.
    OtherLinks(u64),
    /// A glob of a command expands to this workspace path.
    Expands { glob: String, path: String },
    /// A command reads every file under `folder` on its own (`grep -r`, `find`, `tar c`),
    /// these among them.
    Reaches { folder: String, files: Vec<String> },
}

impl Hidden {
    /// Why this counts as a floor hit, in words; `None` when it does not.
    pub fn floor_hit(&self, floor: &dyn FloorPaths) -> Option<String> {
        match self {
            Hidden::LeadsTo(real) => floor
                .path_hit(real)
                .map(|why| format!("leads to {real}, so it {why}")),
            Hidden::OtherLinks(n) => Some(format!(
                "is a file with {n} names (hard links), so it may be a safety-floor file under another name"
            )),
            Hidden::Expands { glob, path } => floor
                .path_hit(path)
                .map(|why| format!("names `{glob}`, which expands to {path}: it {why}")),
            Hidden::Reaches { folder, files } => files.iter().find_map(|file| {
                floor.path_hit(file).map(|why| {
                    format!("reads every file under {folder} on its own, {file} among them ({why})")
                })
            }),
        }
    }
}

/// What the path `raw` is on disk beyond its spelling, for the floor. Blocking. A path that
/// does not resolve (yet) has nothing hidden: the call itself will say what is wrong.
pub fn hidden(workspace: &Path, raw: &str) -> Vec<Hidden> {
    let Ok(target) = confine::resolve(workspace, raw) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let real = relative(&target);
    if real != confine::display_form(raw) {
        found.push(Hidden::LeadsTo(real));
    }
    // The canonical path has no symlink left, so lstat sees the file itself.
    if let Ok(meta) = std::fs::symlink_metadata(&target.abs)
        && meta.is_file()
        && meta.nlink() > 1
    {
        found.push(Hidden::OtherLinks(meta.nlink()));
    }
    found
}

/// The workspace-relative form of where a resolved path really is (`.` for the workspace).
fn relative(target: &Resolved) -> String {
    match target.abs.strip_prefix(&target.root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => target.shown.clone(),
    }
}

/// What a file is, when it is not one the tools open.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// Opens the resolved path beneath the workspace: a regular file (`Read`, `Write`) or a
/// directory (`ReadDir`), under the floor guard. Blocking.
pub(crate) fn open(target: &Resolved, access: Access, guard: &Guard) -> Result<File, ToolError> {
    let shown = target.shown.as_str();
    let action = match access {
        Access::Read => "read",
        Access::ReadDir => "list",
        Access::Write => "write",
    };
    if let Guard::Floor(floor) = guard
        && let Some(why) = floor.path_hit(&relative(target))
    {
        return Err(ToolError::OnFloor {
            path: shown.to_owned(),
            why,
        });
    }
    let file = match beneath::open(target, access) {
        Ok(file) => file,
        // A FIFO with no reader (opened to write) or a socket.
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(ToolError::NotRegular {
                path: shown.to_owned(),
                kind: "a FIFO or socket",
            });
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) && matches!(access, Access::ReadDir) => {
            return Err(ToolError::NotADirectory(shown.to_owned()));
        }
        Err(e) => return Err(ToolError::io(action, shown, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| ToolError::io(action, shown, e))?;
    match access {
        Access::ReadDir => {}
        Access::Read | Access::Write if meta.is_dir() => {
            return Err(ToolError::IsADirectory(shown.to_owned()));
        }
        Access::Read | Access::Write if !meta.is_file() => {
            return Err(ToolError::NotRegular {
                path: shown.to_owned(),
                kind: kind_of(&meta),
            });
        }
        Access::Read | Access::Write => {
            if meta.nlink() > 1
                && let Guard::Floor(floor) = guard
                && let Some(why) = Hidden::OtherLinks(meta.nlink()).floor_hit(floor.as_ref())
            {
                return Err(ToolError::OnFloor {
                    path: shown.to_owned(),
                    why,
                });
            }
        }
    }
    Ok(file)
}

/// What [`read_floor_file_for_person`] found at a floor card's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonRead {
    /// No file there yet: the write makes a new one.
    Absent,
    Text(String),
    /// Larger than the person's view shows (its size in bytes); not read.
    TooLarge(u64),
}

/// Opens a floor file for the person at the admin console, who asked to see what a floor
/// card's write would change in it — the one opener of a floor file besides a call a person
/// approved (invariant 40). It may, because the content goes only to that person's page,
/// masked (`shown::secrets`) on the server: never to the agent, a tool, the event log, the
/// audit or the server's log. Everything else holds as for [`open`]: beneath the workspace
/// with no symlink on the way (`confine`, `beneath`), a regular file only, never waiting; and a
/// file with other hard links is refused (it may be another file under the floor file's
/// name). At most `limit` bytes are read. Blocking: run it through [`blocking`].
pub fn read_floor_file_for_person(
    workspace: &Path,
    raw: &str,
    limit: u64,
) -> Result<PersonRead, ToolError> {
    let target = confine::resolve(workspace, raw)?;
    let file = match open(&target, Access::Read, &Guard::Cleared) {
        Ok(file) => file,
        Err(ToolError::NotFound(_)) => return Ok(PersonRead::Absent),
        Err(e) => return Err(e),
    };
    let meta = file
        .metadata()
        .map_err(|e| ToolError::io("read", &target.shown, e))?;
    if meta.nlink() > 1 {
        return Err(ToolError::OnFloor {
            path: target.shown.clone(),
            why: format!(
                "is a file with {} names (hard links), so what it holds is not shown",
                meta.nlink()
            ),
        });
    }
    if meta.len() > limit {
        return Ok(PersonRead::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", &target.shown, e))?;
    match u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        true => Ok(PersonRead::TooLarge(meta.len().max(limit + 1))),
        false => Ok(PersonRead::Text(
            String::from_utf8_lossy(&bytes).into_owned(),
        )),
    }
}

/// Runs blocking file work on the blocking pool, giving up after `limit` or on `cancel`.
pub(crate) async fn blocking<T: Send + 'static>(
    shown: &str,
    limit: Duration,
    cancel: Option<&CancellationToken>,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    crate::timeline::mark("tool: handed to the blocking pool");
    let task = tokio::task::spawn_blocking(move || {
        crate::timeline::mark("tool: blocking work begins");
        work()
    });
    let cancelled = async {
        match cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        joined = task => joined.map_err(|e| ToolError::io("use", shown, io::Error::other(e)))?,
        () = tokio::time::sleep(limit) => Err(ToolError::TimedOut {
            path: shown.to_owned(),
            secs: limit.as_secs(),
        }),
        () = cancelled => Err(ToolError::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    struct DotEnv;

    impl FloorPaths for DotEnv {
        fn path_hit(&self, path: &str) -> Option<String> {
            (path == ".env" || path.starts_with(".git/")).then(|| format!("touches {path}"))
        }
    }

    fn mkfifo(path: &Path) {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a plain mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_is_an_error_at_once_to_read_and_to_write() {
        let ws = tempfile::tempdir().unwrap();
        mkfifo(&ws.path().join("pipe"));
        let target = confine::resolve(ws.path(), "pipe").unwrap();
        for access in [Access::Read, Access::Write] {
            let err = open(&target, access, &Guard::Cleared).unwrap_err();
            assert!(
                matches!(err, ToolError::NotRegular { .. }),
                "{access:?}: {err}"
            );
        }
    }

    #[test]
    fn floor_files_are_refused_by_their_real_path_and_other_names() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join(".env"), "KEY=secret").unwrap();
        std::os::unix::fs::symlink(".env", ws.path().join("notes.txt")).unwrap();
        std::fs::hard_link(ws.path().join(".env"), ws.path().join("other.txt")).unwrap();
        for name in ["notes.txt", "other.txt", ".env"] {
            let target = confine::resolve(ws.path(), name).unwrap();
            let err = open(&target, Access::Read, &Guard::Floor(Arc::new(DotEnv))).unwrap_err();
            assert!(matches!(err, ToolError::OnFloor { .. }), "{name}: {err}");
        }
        assert_eq!(
            hidden(ws.path(), "notes.txt"),
            [Hidden::LeadsTo(".env".into()), Hidden::OtherLinks(2)]
        );
        assert_eq!(hidden(ws.path(), "other.txt"), [Hidden::OtherLinks(2)]);
        // A person approved this call on a floor card: it may read what the card showed.
        let target = confine::resolve(ws.path(), "notes.txt").unwrap();
        let mut text = String::new();
        open(&target, Access::Read, &Guard::Cleared)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "KEY=secret");
    }

    #[tokio::test]
    async fn blocking_work_gives_up_at_its_limit_and_on_cancel() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let err = blocking("slow", Duration::from_millis(50), None, move || {
            let _ = rx.recv();
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(matches!(err, ToolError::TimedOut { .. }), "{err}");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = blocking("slow", Duration::from_secs(60), Some(&cancel), move || {
            std::thread::sleep(Duration::from_millis(200));
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(matches!(err, ToolError::Cancelled), "{err}");
        drop(tx);
    }

    #[test]
    fn the_persons_view_opens_a_floor_file_but_not_past_a_symlink_or_a_hard_link() {
        let ws = tempfile::tempdir().unwrap();
        let away = tempfile::tempdir().unwrap();
        assert_eq!(
            read_floor_file_for_person(ws.path(), ".env", 64).unwrap(),
            PersonRead::Absent
        );
        std::fs::write(ws.path().join(".env"), "A=1\n").unwrap();
        assert_eq!(
            read_floor_file_for_person(ws.path(), ".env", 64).unwrap(),
            PersonRead::Text("A=1\n".into())
        );
        assert_eq!(
            read_floor_file_for_person(ws.path(), ".env", 2).unwrap(),
            PersonRead::TooLarge(4)
        );
        std::fs::write(away.path().join("secret"), "B=2\n").unwrap();
        std::os::unix::fs::symlink(away.path().join("secret"), ws.path().join("out.env")).unwrap();
        assert!(read_floor_file_for_person(ws.path(), "out.env", 64).is_err());
        std::fs::hard_link(ws.path().join(".env"), ws.path().join("twin")).unwrap();
        let err = read_floor_file_for_person(ws.path(), ".env", 64).unwrap_err();
        assert!(matches!(err, ToolError::OnFloor { .. }), "{err}");
        mkfifo(&ws.path().join("pipe"));
        let err = read_floor_file_for_person(ws.path(), "pipe", 64).unwrap_err();
        assert!(matches!(err, ToolError::NotRegular { .. }), "{err}");
    }
}
