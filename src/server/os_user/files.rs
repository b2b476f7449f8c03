//! Who owns a file and who else may open it: the facts the OS boundary rests on.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

/// A path's owner and permission bits, read without following a symlink.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileState {
    pub path: PathBuf,
    pub kind: Kind,
    pub owner: u32,
    pub group: u32,
    /// The permission bits (`0o7777`).
    pub mode: u32,
}

impl FileState {
    /// The path's state; `Ok(None)` when nothing is there.
    pub fn of(path: &Path) -> std::io::Result<Option<FileState>> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let kind = if meta.file_type().is_symlink() {
            Kind::Symlink
        } else if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Ok(Some(FileState {
            path: path.to_owned(),
            kind,
            owner: meta.uid(),
            group: meta.gid(),
            mode: meta.mode() & 0o7777,
        }))
    }

    /// Whether a user other than the owner (its group or anyone) may read, write or enter it.
    pub fn open_to_others(&self) -> bool {
        self.kind != Kind::Symlink && open_to_others(self.mode)
    }
}

/// The first folder on the way to `path` (not `path` itself) that someone other than root or
/// `uid` could use to move `path` away and put another in its place: owned by another user,
/// or writable by its group or others without the sticky bit (`/tmp`'s `1777` is fine).
pub fn unsafe_ancestor(path: &Path, uid: u32) -> Option<FileState> {
    path.ancestors().skip(1).find_map(|dir| {
        let state = FileState::of(dir).ok().flatten()?;
        let owner_ok = state.owner == 0 || state.owner == uid;
        let sticky = state.mode & 0o1000 != 0;
        let others_write = state.mode & 0o022 != 0 && !sticky;
        (!owner_ok || others_write).then_some(state)
    })
}

/// Whether `mode` gives its group or others any access.
pub fn open_to_others(mode: u32) -> bool {
    mode & 0o077 != 0
}

/// `mode` with every group and other bit taken away and the owner's `owner_needs` added: the
/// one way modes change here, so a fix never loosens anything for anyone else.
pub fn restricted(mode: u32, owner_needs: u32) -> u32 {
    (mode & 0o700) | (owner_needs & 0o700)
}

/// `0o755` as `0755`.
pub fn octal(mode: u32) -> String {
    format!("{:04o}", mode & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn any_group_or_other_bit_opens_a_file() {
        assert!(!open_to_others(0o700));
        assert!(!open_to_others(0o600));
        assert!(!open_to_others(0o400));
        for open in [0o701, 0o710, 0o704, 0o640, 0o602, 0o620, 0o755, 0o777] {
            assert!(open_to_others(open), "{open:o}");
        }
    }

    #[test]
    fn a_fix_takes_away_and_never_gives_to_others() {
        assert_eq!(restricted(0o755, 0o700), 0o700);
        assert_eq!(restricted(0o644, 0o600), 0o600);
        assert_eq!(restricted(0o400, 0o600), 0o600);
        assert_eq!(restricted(0o4777, 0o700), 0o700, "no setuid survives");
        assert_eq!(restricted(0o000, 0o600), 0o600);
    }

    #[test]
    fn a_folder_others_may_write_on_the_way_is_found_unless_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        let inner = open.join("inner/data");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let me = FileState::of(dir.path()).unwrap().unwrap().owner;
        let found = unsafe_ancestor(&inner, me).expect("the 0777 folder");
        assert_eq!(found.path, open);
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(unsafe_ancestor(&inner, me), None, "sticky, like /tmp");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(unsafe_ancestor(&inner, me), None);
        if me == 0 {
            return;
        }
        // Owned by this test's user, which is neither root nor the uid asked about.
        assert!(unsafe_ancestor(&inner, me + 1).is_some());
    }

    #[test]
    fn a_state_is_read_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let state = FileState::of(&file).unwrap().unwrap();
        assert_eq!((state.kind, state.mode), (Kind::File, 0o640));
        assert!(state.open_to_others());
        let link = FileState::of(&link).unwrap().unwrap();
        assert_eq!(link.kind, Kind::Symlink);
        assert!(!link.open_to_others(), "a link's own bits mean nothing");
        assert!(FileState::of(&dir.path().join("none")).unwrap().is_none());
    }
}
