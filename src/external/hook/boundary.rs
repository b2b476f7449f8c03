//! What `hook install` says about the OS boundary: an agent runs as the person who installs its
//! hook, so when that person can read Countersign's data dir, or the server says it runs as
//! their user, every file Countersign keeps is the agent's to read and change.

use std::path::{Path, PathBuf};

use super::{HookContext, HookOutcome};
use crate::external::gates_client::GatesClient;
use crate::external::remote::DEFAULT_URL;

/// Where `countersign service install` keeps the data by default.
const SERVICE_DATA_DIR: &str = "/var/lib/countersign";
/// What to read instead of this module's warnings.
const SEE: &str = "run Countersign as its own user: `sudo countersign service install` (README: \"Outside \
     agents and the OS boundary\")";

/// Adds the warnings that apply to `out`.
pub(super) async fn warn(out: &mut HookOutcome, ctx: &HookContext) {
    let env = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    let candidates = data_dirs(
        env("COUNTERSIGN_DATA_DIR").map(PathBuf::from),
        env("XDG_DATA_HOME").map(PathBuf::from),
        ctx.home.as_deref(),
    );
    for dir in readable(&candidates) {
        out.say(format!(
            "warning: you can read Countersign's data dir {}: so can every agent you run as \
             this user, and its files (database, config, keys) are theirs to read and change; {SEE}",
            dir.display()
        ));
    }
    let token = std::env::var("COUNTERSIGN_TOKEN").ok();
    let Some(token) = token.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
        return;
    };
    let url = std::env::var("COUNTERSIGN_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let Ok(client) = GatesClient::new(&url, Some(token)) else {
        return;
    };
    if let Ok(answer) = client.os_user().await
        && answer.same_user == Some(true)
    {
        out.say(format!(
            "warning: the Countersign at {} runs as your OS user: every agent you run can read \
             and change its files; {SEE}",
            client.url()
        ));
    }
}

/// The data dirs an installing user's Countersign may use: the one named in the environment,
/// else the default under the user's data home; and the service's.
fn data_dirs(named: Option<PathBuf>, xdg: Option<PathBuf>, home: Option<&Path>) -> Vec<PathBuf> {
    let default = named
        .or_else(|| xdg.map(|x| x.join("countersign")))
        .or_else(|| home.map(|h| h.join(".local/share/countersign")));
    let mut dirs: Vec<PathBuf> = default.into_iter().collect();
    let service = PathBuf::from(SERVICE_DATA_DIR);
    if !dirs.contains(&service) {
        dirs.push(service);
    }
    dirs
}

/// The dirs of `candidates` this process can list, or whose database or config it can open.
fn readable(candidates: &[PathBuf]) -> Vec<PathBuf> {
    candidates
        .iter()
        .filter(|dir| {
            std::fs::read_dir(dir).is_ok()
                || ["countersign.db", "config.toml"]
                    .iter()
                    .any(|name| std::fs::File::open(dir.join(name)).is_ok())
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_dir_beats_the_defaults_and_the_service_dir_is_always_looked_at() {
        let home = Path::new("/home/ada");
        assert_eq!(
            data_dirs(Some("/srv/cs".into()), Some("/x".into()), Some(home)),
            [PathBuf::from("/srv/cs"), PathBuf::from(SERVICE_DATA_DIR)]
        );
        assert_eq!(
            data_dirs(None, Some("/x".into()), Some(home)),
            [
                PathBuf::from("/x/countersign"),
                PathBuf::from(SERVICE_DATA_DIR)
            ]
        );
        assert_eq!(
            data_dirs(None, None, Some(home)),
            [
                PathBuf::from("/home/ada/.local/share/countersign"),
                PathBuf::from(SERVICE_DATA_DIR)
            ]
        );
        assert_eq!(
            data_dirs(Some(SERVICE_DATA_DIR.into()), None, None),
            [PathBuf::from(SERVICE_DATA_DIR)]
        );
    }

    #[test]
    fn a_dir_that_lists_is_readable_and_a_missing_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none");
        assert_eq!(
            readable(&[dir.path().to_owned(), missing]),
            [dir.path().to_owned()]
        );
    }
}
