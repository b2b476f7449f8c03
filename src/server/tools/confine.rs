//! Confines tool paths to the workspace: lexically (no absolute paths, no `..` escapes) and
//! physically (symlinks may not lead outside).
//!
//! The tools then use only the resolved path, never the text the model sent, so what was
//! checked is what is touched; `beneath` opens it so that a folder swapped for a symlink
//! between the check and the use (a command of the same parallel batch) is refused.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// A path checked against the workspace.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    /// The canonical workspace.
    pub root: PathBuf,
    /// Where the path really leads: canonical for the part that exists, plus the new names.
    pub abs: PathBuf,
    /// The lexically normalized relative path, for messages (`.` for the workspace itself).
    pub shown: String,
}

/// Normalizes `raw` without touching the disk: `./a/../b` → `b`. Refuses absolute paths and
/// any `..` that climbs above the workspace.
pub(crate) fn normalize(raw: &str) -> Result<PathBuf, ToolError> {
    if raw.is_empty() {
        return Err(ToolError::InvalidArgs("`path` is empty".into()));
    }
    let mut out = PathBuf::new();
    for part in Path::new(raw).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(ToolError::OutsideWorkspace(raw.to_owned()));
                }
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::AbsolutePath(raw.to_owned()));
            }
        }
    }
    Ok(out)
}

/// The form a path is shown in: normalized when it can be, so one file has one spelling.
pub(crate) fn display_form(raw: &str) -> String {
    normalize(raw).map_or_else(|_| raw.to_owned(), |rel| shown(&rel))
}

fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".into()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

/// Resolves `raw` inside `workspace`. The deepest part of the path that exists is
/// canonicalized (following every symlink) and must still lie inside the canonical workspace;
/// names below it don't exist yet, so nothing can redirect them.
pub(crate) fn resolve(workspace: &Path, raw: &str) -> Result<Resolved, ToolError> {
    let rel = normalize(raw)?;
    let root = fs::canonicalize(workspace)
        .map_err(|e| ToolError::io("open the workspace", &workspace.to_string_lossy(), e))?;
    let mut existing = root.join(&rel);
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        match fs::canonicalize(&existing) {
            Ok(real) => {
                if !real.starts_with(&root) {
                    return Err(ToolError::OutsideWorkspace(raw.to_owned()));
                }
                let mut abs = real;
                abs.extend(missing.iter().rev());
                return Ok(Resolved {
                    root,
                    abs,
                    shown: shown(&rel),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symlink: writing through it would create its target, wherever that is.
                if fs::symlink_metadata(&existing).is_ok() {
                    return Err(ToolError::BrokenSymlink(raw.to_owned()));
                }
                match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(parent)) => {
                        missing.push(name.to_owned());
                        existing = parent.to_path_buf();
                    }
                    // Unreachable: the canonical root exists, so the climb stops there.
                    _ => return Err(ToolError::NotFound(raw.to_owned())),
                }
            }
            Err(e) => return Err(ToolError::io("resolve", raw, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn normalizes_inner_dots() {
        assert_eq!(normalize("./a/../b/./c").unwrap(), PathBuf::from("b/c"));
        assert_eq!(normalize(".").unwrap(), PathBuf::new());
        assert_eq!(display_form("./a/../b.txt"), "b.txt");
        assert_eq!(display_form("."), ".");
        assert_eq!(display_form("../x"), "../x");
    }

    #[test]
    fn refuses_lexical_escapes() {
        let ws = tempfile::tempdir().unwrap();
        for raw in ["..", "../x", "a/../../x", "a/b/../../../etc/passwd"] {
            let err = resolve(ws.path(), raw).unwrap_err();
            assert!(
                matches!(err, ToolError::OutsideWorkspace(_)),
                "{raw}: {err}"
            );
            assert_eq!(
                err.to_string(),
                format!("path `{raw}` is outside the workspace")
            );
        }
    }

    #[test]
    fn refuses_absolute_and_empty_paths() {
        let ws = tempfile::tempdir().unwrap();
        let inside = ws.path().join("a.txt");
        for raw in ["/etc/passwd", inside.to_str().unwrap()] {
            let err = resolve(ws.path(), raw).unwrap_err();
            assert!(matches!(err, ToolError::AbsolutePath(_)), "{raw}: {err}");
        }
        assert!(matches!(
            resolve(ws.path(), ""),
            Err(ToolError::InvalidArgs(_))
        ));
    }

    #[test]
    fn refuses_symlinks_that_lead_outside() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path(), ws.path().join("dir")).unwrap();
        symlink(outside.path().join("secret"), ws.path().join("file")).unwrap();
        symlink(outside.path().join("nope"), ws.path().join("dangling")).unwrap();
        for raw in ["dir", "dir/secret", "dir/new/deeper.txt", "file"] {
            let err = resolve(ws.path(), raw).unwrap_err();
            assert!(
                matches!(err, ToolError::OutsideWorkspace(_)),
                "{raw}: {err}"
            );
        }
        let err = resolve(ws.path(), "dangling").unwrap_err();
        assert!(matches!(err, ToolError::BrokenSymlink(_)), "{err}");
    }

    #[test]
    fn allows_nested_new_and_inward_symlinked_paths() {
        let ws = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(ws.path()).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        symlink(root.join("sub"), root.join("alias")).unwrap();

        let r = resolve(ws.path(), "a/b/c.txt").unwrap();
        assert_eq!(r.abs, root.join("a/b/c.txt"));
        assert_eq!(r.shown, "a/b/c.txt");

        let r = resolve(ws.path(), "alias/x.txt").unwrap();
        assert_eq!(r.abs, root.join("sub/x.txt"));

        let r = resolve(ws.path(), ".").unwrap();
        assert_eq!((r.abs, r.shown), (root.clone(), ".".to_owned()));
        assert_eq!(r.root, root);
    }
}
