//! Changing the owner and mode of what lies in the service's folders without being led
//! elsewhere. The service's user owns its data dir, so while root runs `service install` a
//! process of that user could swap an entry (or a folder on the way) for a symlink to
//! `/etc/passwd`; a plain `chmod`/`chown` by path would then change root's file. Here every
//! entry is reached from the folder's own handle with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` and changed through that handle, so a swap only makes the step fail.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Gives `path` (never what a link there points to) to `uid`:`gid`.
pub fn give(root: &Path, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let entry = open_beneath(root, path, libc::O_PATH | libc::O_NOFOLLOW)?;
    let empty = CString::default();
    // SAFETY: a valid fd and an empty NUL-terminated path with AT_EMPTY_PATH: the fd's own file.
    let rc = unsafe {
        libc::fchownat(
            entry.as_raw_fd(),
            empty.as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the mode of the file or folder at `path` (a link is refused, not followed).
pub fn restrict(root: &Path, path: &Path, mode: u32) -> io::Result<()> {
    let entry = open_beneath(
        root,
        path,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )?;
    // SAFETY: fchmod on a valid fd.
    let rc = unsafe { libc::fchmod(entry.as_raw_fd(), mode as libc::mode_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `path` (which lies in `root`) opened from `root`'s handle, no link or `..` on the way.
fn open_beneath(root: &Path, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let rel = path.strip_prefix(root).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path is not in the folder")
    })?;
    let anchor = open(root, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let c = CString::new(rel.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open_how is plain data; zeroed is a valid value for it.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: the pointers stay valid for the call; the size is the struct's.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            anchor.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn open(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: a plain open of a NUL-terminated path; the fd is owned right after.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    #[test]
    fn a_link_on_the_way_or_at_the_end_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        let target = outside.join("victim");
        std::fs::write(&target, "x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&target, root.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("via")).unwrap();
        assert!(restrict(&root, &root.join("link"), 0o600).is_err());
        assert!(restrict(&root, &root.join("via/victim"), 0o600).is_err());
        assert!(
            restrict(&root, &target, 0o600).is_err(),
            "not in the folder"
        );
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o644);
        // A link itself may change hands; what it points to does not.
        let me = std::fs::metadata(&target).unwrap();
        give(&root, &root.join("link"), me.uid(), me.gid()).unwrap();
        assert!(give(&root, &root.join("via/victim"), me.uid(), me.gid()).is_err());
        // What is really there changes.
        std::fs::write(root.join("sub/file"), "y").unwrap();
        restrict(&root, &root.join("sub/file"), 0o600).unwrap();
        restrict(&root, &root, 0o700).unwrap();
        assert_eq!(
            std::fs::metadata(root.join("sub/file")).unwrap().mode() & 0o777,
            0o600
        );
        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o700);
    }
}
