//! Where a path an outside agent names leads on this machine's disk. The agent runs as the same
//! user on the same machine, so a symlink it made earlier (`ln -s / r`, then `r/…/token`) is
//! followed by its tools exactly as the kernel follows it: the floor reads the path that way
//! too, besides as written. Blocking: callers run the floor on the blocking pool.

use std::path::{Component, Path, PathBuf};

/// Paths longer than this are not followed on disk (they are still read as written).
const MAX_COMPONENTS: usize = 64;

/// `path` (absolute, `..` not yet resolved) as the kernel resolves it: its longest prefix
/// that exists, canonical, and the rest as written. `None` when it is not absolute, is under
/// `/proc` or `/dev` (read as written, see `procfs`), or nothing of it exists.
pub fn resolve(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() || path.starts_with("/proc") || path.starts_with("/dev") {
        return None;
    }
    let parts: Vec<Component> = path.components().collect();
    if parts.len() > MAX_COMPONENTS {
        return None;
    }
    let mut known = parts.len();
    while known > 1 {
        let prefix: PathBuf = parts[..known].iter().collect();
        if let Ok(real) = std::fs::canonicalize(&prefix) {
            let mut out = real;
            for part in &parts[known..] {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::Normal(name) => out.push(name),
                    _ => {}
                }
            }
            return Some(out);
        }
        known -= 1;
    }
    None
}

/// `path` (as the agent wrote it) joined to `base` when relative, as a path the kernel would
/// resolve; `None` when it cannot be placed.
pub fn joined(path: &str, base: Option<&str>) -> Option<PathBuf> {
    let path = Path::new(path);
    if path.is_absolute() {
        return Some(path.to_owned());
    }
    let base = Path::new(base?);
    base.is_absolute().then(|| base.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_is_followed_and_what_does_not_exist_is_kept() {
        let dir = std::env::temp_dir().join(format!("cs-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real/inner")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("root")).unwrap();
        let real = std::fs::canonicalize(dir.join("real")).unwrap();
        assert_eq!(
            resolve(&dir.join("link/inner/../missing/file")),
            Some(real.join("missing/file"))
        );
        assert_eq!(
            resolve(&dir.join("root/etc/../tmp/x")),
            Some(PathBuf::from("/tmp/x"))
        );
        assert_eq!(resolve(Path::new("relative/x")), None);
        assert_eq!(resolve(Path::new("/proc/self/root/x")), None);
        assert_eq!(joined("a/b", Some("/w")), Some(PathBuf::from("/w/a/b")));
        assert_eq!(joined("a/b", None), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
