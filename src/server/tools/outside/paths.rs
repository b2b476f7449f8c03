//! Puts an outside agent's path into the form the agent's file system will resolve, so the
//! safety floor and standing rules match the file that will really be touched, whatever
//! its spelling (`C:\Repo\.ENV`, `./a/../.git//config`, `\\?\C:\…`).
//!
//! Purely lexical. The path is the agent's, often on another machine, so nothing is read
//! from disk, and symlinks and Windows short names (`PROGRA~1`) stay as written.

/// Where a path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Relative,
    Slash,
    /// A drive letter, lowercased.
    Drive(char),
    /// `//server/share`: the first two segments are the root.
    Unc,
}

/// An outside agent's path, normalized for matching: `\` read as `/`, a drive letter (`C:`)
/// lowercased and kept as `/c:/…`, `.` and `..` segments resolved lexically (a `..` above the
/// root stays at the root), repeated `/` collapsed, a trailing `/` dropped; relative paths
/// joined to `cwd` when a cwd is given (cwd normalized the same way).
///
/// A relative path with no cwd keeps its leading `..`, since it still leaves whatever base
/// it is read against. On a Windows-looking path (see [`case_insensitive_hint`]), each
/// segment also loses what Windows ignores when it opens a file: trailing dots and spaces
/// (`.env.` is `.env`) and a stream suffix (`.env::$DATA` and `.env:x` are in `.env`).
pub fn normalize(path: &str, cwd: Option<&str>) -> String {
    let windows = case_insensitive_hint(path) || cwd.is_some_and(case_insensitive_hint);
    let (mut root, rest) = split(path);
    let mut base = String::new();
    if let Some(cwd) = cwd {
        let (cwd_root, cwd_rest) = split(cwd);
        if root == Root::Relative {
            (root, base) = (cwd_root, cwd_rest);
        } else if let (Root::Slash, Root::Drive(_)) = (root, cwd_root) {
            // `\Users\x` on Windows is on the drive of the working directory.
            root = cwd_root;
        }
    }
    let floor = if root == Root::Unc { 2 } else { 0 };
    let mut out: Vec<&str> = Vec::new();
    for segment in base.split('/').chain(rest.split('/')) {
        let segment = if windows {
            windows_name(segment)
        } else {
            segment
        };
        match segment {
            "" | "." => {}
            ".." if out.len() > floor && out.last() != Some(&"..") => {
                out.pop();
            }
            // Above the root (or inside a UNC root): the root stays.
            ".." if root != Root::Relative || out.len() < floor => {}
            _ => out.push(segment),
        }
    }
    let joined = out.join("/");
    match root {
        Root::Relative if joined.is_empty() => ".".to_owned(),
        Root::Relative => joined,
        Root::Slash => format!("/{joined}"),
        Root::Drive(letter) if joined.is_empty() => format!("/{letter}:"),
        Root::Drive(letter) => format!("/{letter}:/{joined}"),
        Root::Unc => format!("//{joined}"),
    }
}

/// The same path lowercased, for file systems that ignore case (macOS, Windows): the floor
/// checks both forms.
pub fn folded(path: &str) -> String {
    path.to_lowercase()
}

/// Whether the agent's platform folds case: true for a drive-letter path or a `\`-separated
/// one; the caller also passes true when it knows the agent runs on macOS.
///
/// A `//server/share` path counts too, so that a normalized UNC path still says Windows.
pub fn case_insensitive_hint(path: &str) -> bool {
    let unc = path.starts_with("//") && !path.starts_with("///");
    path.contains('\\') || unc || drive(path).is_some() || slash_drive(path).is_some()
}

/// The root and the rest of a path, with `\` already read as `/`. The Windows device
/// prefixes `\\?\` and `\\.\` are dropped (`\\?\UNC\s\x` is `\\s\x`).
fn split(path: &str) -> (Root, String) {
    let mut path = path.replace('\\', "/");
    for (prefix, keep) in [("//?/UNC/", "//"), ("//?/", ""), ("//./", "")] {
        if let Some(rest) = path.strip_prefix(prefix) {
            path = format!("{keep}{rest}");
            break;
        }
    }
    if let Some((letter, rest)) = drive(&path).or_else(|| slash_drive(&path)) {
        return (Root::Drive(letter), rest.to_owned());
    }
    match path.strip_prefix("//") {
        Some(rest) if !rest.starts_with('/') => (Root::Unc, rest.to_owned()),
        _ if path.starts_with('/') => (Root::Slash, path),
        _ => (Root::Relative, path),
    }
}

/// `C:…`: the lowercased letter and the rest. `C:foo` (relative to drive C's own working
/// directory, which the gate cannot know) counts as `C:\foo`.
fn drive(path: &str) -> Option<(char, &str)> {
    let mut chars = path.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    let rest = chars.as_str().strip_prefix(':')?;
    Some((letter.to_ascii_lowercase(), rest))
}

/// `/c:/…`, the form [`normalize`] writes, so that normalizing twice changes nothing.
fn slash_drive(path: &str) -> Option<(char, &str)> {
    let (letter, rest) = drive(path.strip_prefix('/')?)?;
    (rest.is_empty() || rest.starts_with('/')).then_some((letter, rest))
}

/// The name Windows opens for a segment: up to any `:` stream suffix, without trailing dots
/// and spaces. A run of dots keeps its dots (`.. ` is `..`, and `...` is a name).
fn windows_name(segment: &str) -> &str {
    let name = segment.split(':').next().unwrap_or(segment);
    if name.chars().all(|c| c == '.' || c == ' ') {
        return name.trim_end_matches(' ');
    }
    name.trim_end_matches(['.', ' '])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str, cwd: Option<&str>, want: &str) {
        let got = normalize(path, cwd);
        assert_eq!(got, want, "{path:?} in {cwd:?}");
        assert_eq!(normalize(&got, None), got, "normalizing {got:?} again");
    }

    #[test]
    fn reads_windows_spellings() {
        check(r"C:\Users\me\.ENV", None, "/c:/Users/me/.ENV");
        check(r"d:/Work//repo\src\", None, "/d:/Work/repo/src");
        check(r"C:\", None, "/c:");
        check(r"E:notes.txt", None, "/e:/notes.txt");
        check(r"C:\w\app\..\..\..\boot.ini", None, "/c:/boot.ini");
        check(r"\\?\C:\Repo\.git\config", None, "/c:/Repo/.git/config");
        check(r"\\.\D:\x", None, "/d:/x");
    }

    #[test]
    fn keeps_unc_server_and_share_as_root() {
        check(r"\\server\share\x", None, "//server/share/x");
        check(r"\\server\share\..\..\x", None, "//server/share/x");
        check(
            r"\\?\UNC\fs01\home\.ssh\id_ed25519",
            None,
            "//fs01/home/.ssh/id_ed25519",
        );
    }

    #[test]
    fn resolves_dots_and_slashes() {
        check("./a/../.git//config", None, ".git/config");
        check("/w/app/./src/../.env", None, "/w/app/.env");
        check("/w/app/src/", None, "/w/app/src");
        check("/../../etc/passwd", None, "/etc/passwd");
        check("///tmp//x", None, "/tmp/x");
        check("/", None, "/");
        check("", None, ".");
        check("a/..", None, ".");
    }

    #[test]
    fn keeps_leading_dotdot_without_a_cwd() {
        check(r"..\..\x", None, "../../x");
        check("a/../../b/./../c", None, "../c");
    }

    #[test]
    fn joins_relative_paths_to_the_cwd() {
        check("./a/../.git//config", Some("/w/app"), "/w/app/.git/config");
        check(r"..\..\x", Some("/w/app"), "/x");
        check("../../../x", Some("/w"), "/x");
        check(".env", Some(r"C:\Proj\Site\"), "/c:/Proj/Site/.env");
        check("src/lib.rs", Some("w/app"), "w/app/src/lib.rs");
        check("/etc/hosts", Some("/w/app"), "/etc/hosts");
        check(r"C:\x", Some("/w/app"), "/c:/x");
        check(r"\Windows\win.ini", Some(r"D:\w"), "/d:/Windows/win.ini");
        check(r"\\srv\s\x", Some(r"C:\w"), "//srv/s/x");
    }

    #[test]
    fn drops_what_windows_ignores_in_a_name() {
        check(r"C:\w\.env.", None, "/c:/w/.env");
        check(r"C:\w\.env::$DATA", None, "/c:/w/.env");
        check(r"C:\w\.git. \config", None, "/c:/w/.git/config");
        check(r"C:\w\app\.. \.git\config", None, "/c:/w/.git/config");
        check(r"C:\w\...\x", None, "/c:/w/.../x");
        check(".env:stream", Some(r"C:\w"), "/c:/w/.env");
        // Not on Windows: those are real names.
        check("/srv/app/.env.", None, "/srv/app/.env.");
        check("/srv/app/a:b", None, "/srv/app/a:b");
        check("/w/app/.. /x", None, "/w/app/.. /x");
    }

    #[test]
    fn folds_case() {
        assert_eq!(
            folded(&normalize(r"C:\Users\me\.ENV", None)),
            "/c:/users/me/.env"
        );
        assert_eq!(folded("/Users/Me/.SSH/Config"), "/users/me/.ssh/config");
    }

    #[test]
    fn hints_at_case_folding_platforms() {
        for path in [
            r"C:\x",
            "c:",
            r"src\main.rs",
            "/c:/users",
            "/d:",
            r"\\srv\s",
            "//srv/s",
        ] {
            assert!(case_insensitive_hint(path), "{path}");
        }
        for path in ["/home/me/.env", "src/main.rs", "/c:x", "///x", ""] {
            assert!(!case_insensitive_hint(path), "{path}");
        }
    }
}
