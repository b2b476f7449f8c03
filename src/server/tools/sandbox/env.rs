//! The environment a tool's process gets: `PATH`, `HOME` (the private folder), `LANG`, `TERM`,
//! `TMPDIR` and the names listed in `tools.env_passthrough` — never the server's own variables
//! (its token, the provider's key), which the config refuses to pass through.

use std::ffi::OsString;
use std::path::Path;

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The variables, in a fixed order, as `(name, value)`.
pub fn minimal(passthrough: &[String], home: &Path, tmp: &Path) -> Vec<(String, OsString)> {
    let server = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let mut env = vec![
        (
            "PATH".to_owned(),
            server("PATH").unwrap_or_else(|| DEFAULT_PATH.into()),
        ),
        ("HOME".to_owned(), home.as_os_str().to_owned()),
        (
            "LANG".to_owned(),
            server("LANG").unwrap_or_else(|| "C.UTF-8".into()),
        ),
        // No terminal is attached: programs should not draw for one.
        ("TERM".to_owned(), "dumb".into()),
        ("TMPDIR".to_owned(), tmp.as_os_str().to_owned()),
    ];
    for name in passthrough {
        if env.iter().any(|(k, _)| k == name) {
            continue;
        }
        if let Some(value) = server(name) {
            env.push((name.clone(), value));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_five_and_the_listed_names_pass() {
        // cargo sets CARGO_MANIFEST_DIR for the tests it runs.
        let env = minimal(
            &[
                "CARGO_MANIFEST_DIR".into(),
                "NOT_SET_ANYWHERE_42".into(),
                "PATH".into(),
            ],
            Path::new("/p/home"),
            Path::new("/p/tmp"),
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "LANG",
                "TERM",
                "TMPDIR",
                "CARGO_MANIFEST_DIR"
            ]
        );
        assert!(env.contains(&("HOME".into(), "/p/home".into())));
        assert!(env.contains(&("TMPDIR".into(), "/p/tmp".into())));
        assert!(env.contains(&(
            "CARGO_MANIFEST_DIR".into(),
            env!("CARGO_MANIFEST_DIR").into()
        )));
    }
}
