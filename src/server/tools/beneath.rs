//! Opening the path `confine` resolved so that nothing changed on disk in between can lead
//! outside the workspace.
//!
//! `confine` checks the canonical path; a command running beside the file tool (a parallel
//! batch) could then swap a folder of it for a symlink to the data dir. So the file tools open
//! that canonical path relative to the workspace with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`: the kernel refuses any `..` or symlink on the way, whatever happens
//! meanwhile. (The canonical path has none, so an honest path always opens.)

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::confine::Resolved;

/// How to open.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access {
    Read,
    ReadDir,
    /// Write, creating the file if needed, keeping what it holds (see `replace`).
    Write,
}

fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: a plain open of a NUL-terminated path; the fd is owned right after.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(dir, rel, flags, mode)` refusing `..`, absolute paths and every symlink.
fn openat_beneath(dir: &OwnedFd, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let c = CString::new(rel.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open_how is plain data; zeroed is a valid value for it.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 {
        u64::from(mode)
    } else {
        0
    };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: the pointers stay valid for the call; the size is the struct's.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        // ELOOP / EXDEV: something on the way is now a symlink or leads out.
        return Err(match err.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::EXDEV) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the path changed to lead outside the workspace",
            ),
            _ => err,
        });
    }
    let fd = libc::c_int::try_from(fd).map_err(io::Error::other)?;
    // SAFETY: the syscall returned a new fd that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The resolved path relative to the workspace root (it is inside, `confine` checked).
fn relative(target: &Resolved) -> io::Result<&Path> {
    target
        .abs
        .strip_prefix(&target.root)
        .map_err(|_| io::Error::new(io::ErrorKind::PermissionDenied, "outside the workspace"))
}

/// Opens the resolved path inside the workspace. Blocking. Only `reader::open` calls it (and
/// this file's tests): it adds the checks every open needs.
pub(super) fn open(target: &Resolved, access: Access) -> io::Result<File> {
    let root = open_dir(&target.root)?;
    let rel = relative(target)?;
    // Never waits on the open itself: a FIFO opens (or refuses) at once, and the caller
    // (`reader::open`) refuses anything but a regular file.
    let flags = match access {
        Access::Read => libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
        Access::ReadDir => libc::O_RDONLY | libc::O_DIRECTORY,
        Access::Write => libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK | libc::O_NOCTTY,
    };
    openat_beneath(&root, rel, flags, 0o666).map(File::from)
}

/// Makes the file (opened for writing through `reader::open`) hold exactly `bytes`. Blocking.
///
/// **Why not `O_TRUNC`:** emptying a file first frees all its blocks, and on a filesystem
/// mounted with online `discard` (common on cloud disks) freeing waits for the device to
/// discard them: about 0.3 ms here for a one-block file, inside every approved write. Writing
/// over the old bytes and then cutting the file to the new length frees only what is left
/// over. A crash part-way leaves a torn file either way.
pub(crate) fn replace(mut file: File, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    file.set_len(u64::try_from(bytes.len()).map_err(io::Error::other)?)
}

/// Creates the folders above the resolved path, each inside the workspace. Blocking.
pub(crate) fn create_parents(target: &Resolved) -> io::Result<()> {
    let rel = relative(target)?;
    let Some(parent) = rel.parent() else {
        return Ok(());
    };
    let mut dir = open_dir(&target.root)?;
    for part in parent.components() {
        let name = Path::new(part.as_os_str());
        dir = match openat_beneath(&dir, name, libc::O_PATH | libc::O_DIRECTORY, 0) {
            Ok(next) => next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let c = CString::new(name.as_os_str().as_bytes()).map_err(io::Error::other)?;
                // SAFETY: mkdirat with a directory fd we own and a NUL-terminated name.
                if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) } != 0 {
                    let err = io::Error::last_os_error();
                    if err.kind() != io::ErrorKind::AlreadyExists {
                        return Err(err);
                    }
                }
                openat_beneath(&dir, name, libc::O_PATH | libc::O_DIRECTORY, 0)?
            }
            Err(e) => return Err(e),
        };
    }
    Ok(())
}

/// The entries of a folder opened beneath the workspace (read through the open descriptor,
/// so the listing is of the folder that was checked).
pub(crate) fn read_dir(dir: &File) -> io::Result<std::fs::ReadDir> {
    std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::super::confine::resolve;
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    #[test]
    fn an_honest_path_opens_and_a_swapped_one_does_not() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("token"), "secret").unwrap();
        std::fs::create_dir(ws.path().join("dir")).unwrap();
        std::fs::write(ws.path().join("dir/token"), "mine").unwrap();

        let checked = resolve(ws.path(), "dir/token").unwrap();
        let mut text = String::new();
        open(&checked, Access::Read)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "mine");

        // Between the check and the use, `dir` becomes a symlink to the secret's folder.
        std::fs::remove_dir_all(ws.path().join("dir")).unwrap();
        symlink(outside.path(), ws.path().join("dir")).unwrap();
        let err = open(&checked, Access::Read).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        let err = open(&checked, Access::Write).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("token")).unwrap(),
            "secret",
            "nothing outside was touched"
        );
    }

    #[test]
    fn a_replaced_file_holds_exactly_the_new_bytes() {
        let ws = tempfile::tempdir().unwrap();
        let target = resolve(ws.path(), "notes.txt").unwrap();
        for text in [
            "a much longer first version\n",
            "short",
            "",
            "grown again: 0123456789",
        ] {
            replace(open(&target, Access::Write).unwrap(), text.as_bytes()).unwrap();
            assert_eq!(
                std::fs::read_to_string(ws.path().join("notes.txt")).unwrap(),
                text
            );
        }
    }

    #[test]
    fn parents_are_created_inside_and_a_swapped_parent_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let target = resolve(ws.path(), "a/b/c.txt").unwrap();
        create_parents(&target).unwrap();
        replace(open(&target, Access::Write).unwrap(), b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a/b/c.txt")).unwrap(),
            "x"
        );

        let outside = tempfile::tempdir().unwrap();
        let target = resolve(ws.path(), "d/e/f.txt").unwrap();
        symlink(outside.path(), ws.path().join("d")).unwrap();
        assert!(create_parents(&target).is_err());
        assert!(!outside.path().join("e").exists());
    }
}
