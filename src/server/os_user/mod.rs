//! Whether Countersign shares its OS user with the agents it answers for.
//!
//! An outside agent (Claude Code, Codex, …) runs as the person. When Countersign runs as that
//! user too, every file it keeps is the agent's to read and write, whatever the floor says;
//! the OS keeps them apart only when Countersign runs as a user of its own. Two signals:
//!
//! - **A dedicated user** (checked at start, before any agent connects). The server runs as
//!   one when it is not root, its account has no login shell (`nologin` or `false`, as the
//!   account `countersign service install` makes), and it owns its data dir with mode `0700`.
//!   A person's account has a login shell, so an agent of that person never shares a
//!   dedicated user.
//! - **A same-user agent** (seen as it happens): a request with a `gates` credential arrives
//!   over loopback from a socket owned by the server's own uid ([`peer::uid_of_peer`]). It is
//!   recorded in memory (which credential, first and last seen) for the Security page.

pub mod account;
pub mod files;
pub mod peer;
pub mod section;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;

use crate::protocol::Timestamp;
use files::{FileState, Kind, octal};

/// Where the README explains all this.
pub const SEE_README: &str = "README: \"Outside agents and the OS boundary\"";
/// The one command that sets the boundary up.
pub const FIX: &str = "sudo countersign service install";
/// At most this many credentials are remembered as seen from the server's own user.
const MAX_SIGHTINGS: usize = 32;

/// The files the boundary protects.
#[derive(Clone, Debug)]
pub struct Places {
    pub data_dir: PathBuf,
    pub config_file: PathBuf,
    /// The database file, when the store is a file.
    pub database_file: Option<PathBuf>,
}

/// One reason the boundary does not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// Root reads everything; every agent run as root shares it.
    RunsAsRoot,
    /// The uid has no entry in `/etc/passwd`: not an account made for Countersign.
    NoAccount { uid: u32 },
    /// The account has a login shell: a person's account, which their agents share.
    LoginShell { user: String, shell: String },
    /// Someone else owns a file the server keeps (a root-owned config is fine).
    NotOwner { path: PathBuf, owner: u32 },
    /// A file or the data dir gives its group or others some access.
    OpenToOthers { path: PathBuf, mode: u32 },
    /// The file could not be inspected.
    Unreadable { path: PathBuf, error: String },
    /// A folder on the way to the data dir lets another user move the data dir away and put
    /// their own in its place.
    OpenAncestor {
        path: PathBuf,
        owner: u32,
        mode: u32,
    },
}

impl Problem {
    /// Whether this reason says the server's user is not its own (rather than a file's mode).
    fn shares_user(&self) -> bool {
        matches!(
            self,
            Problem::RunsAsRoot | Problem::NoAccount { .. } | Problem::LoginShell { .. }
        )
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::RunsAsRoot => write!(f, "it runs as root"),
            Problem::NoAccount { uid } => write!(f, "uid {uid} has no entry in /etc/passwd"),
            Problem::LoginShell { user, shell } => {
                let shell = if shell.is_empty() { "/bin/sh" } else { shell };
                write!(f, "its user `{user}` has a login shell ({shell})")
            }
            Problem::NotOwner { path, owner } => {
                write!(f, "{} is owned by uid {owner}", path.display())
            }
            Problem::OpenToOthers { path, mode } => write!(
                f,
                "{} has mode {} (others may open it)",
                path.display(),
                octal(*mode)
            ),
            Problem::Unreadable { path, error } => {
                write!(f, "{} cannot be inspected: {error}", path.display())
            }
            Problem::OpenAncestor { path, owner, mode } => write!(
                f,
                "{} (uid {owner}, mode {}) lets another user replace the data dir inside it",
                path.display(),
                octal(*mode)
            ),
        }
    }
}

/// The server's user and files, as they are now.
#[derive(Clone, Debug, Serialize)]
pub struct Assessment {
    pub uid: u32,
    /// The account's name, when `/etc/passwd` lists the uid.
    pub user: Option<String>,
    pub problems: Vec<Problem>,
    /// The data dir, the config file and the database, those that exist.
    pub files: Vec<FileState>,
}

impl Assessment {
    /// Whether the server runs as a user of its own (see the module's definition).
    pub fn dedicated(&self) -> bool {
        !self.problems.iter().any(Problem::shares_user)
    }

    /// Whether another user's process can neither read nor change the server's files.
    pub fn holds(&self) -> bool {
        self.problems.is_empty()
    }

    /// `root (uid 0)`, `uid 1234`.
    pub fn who(&self) -> String {
        match &self.user {
            Some(name) => format!("`{name}` (uid {})", self.uid),
            None => format!("uid {}", self.uid),
        }
    }

    /// The reasons, in one line.
    pub fn reasons(&self) -> String {
        self.problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Looks at the server's user (`uid`, in `accounts`) and at its files.
pub fn assess(places: &Places, uid: u32, accounts: &[account::Account]) -> Assessment {
    let account = accounts.iter().find(|a| a.uid == uid);
    let mut problems = Vec::new();
    if uid == 0 {
        problems.push(Problem::RunsAsRoot);
    } else {
        match account {
            None => problems.push(Problem::NoAccount { uid }),
            Some(a) if a.can_log_in() => problems.push(Problem::LoginShell {
                user: a.name.clone(),
                shell: a.shell.clone(),
            }),
            Some(_) => {}
        }
    }
    let (files, found) = kept_files(places, uid);
    problems.extend(found);
    if let Some(dir) = files::unsafe_ancestor(&places.data_dir, uid) {
        problems.push(Problem::OpenAncestor {
            path: dir.path,
            owner: dir.owner,
            mode: dir.mode,
        });
    }
    Assessment {
        uid,
        user: account.map(|a| a.name.clone()),
        problems,
        files,
    }
}

/// The data dir, the config and the database, and what is wrong with them. A file inside a
/// data dir only its owner may enter is out of others' reach whatever its own bits say (and a
/// caller that may not enter it, `service status` run by a person, cannot look).
fn kept_files(places: &Places, uid: u32) -> (Vec<FileState>, Vec<Problem>) {
    let (mut files, mut problems) = (Vec::new(), Vec::new());
    let dir = FileState::of(&places.data_dir);
    let closed = matches!(&dir, Ok(Some(d)) if d.owner == uid && !d.open_to_others());
    let others = [Some(&places.config_file), places.database_file.as_ref()];
    let kept = std::iter::once((&places.data_dir, dir))
        .chain(others.into_iter().flatten().map(|p| (p, FileState::of(p))));
    for (path, state) in kept {
        let sheltered = closed && path != &places.data_dir && path.starts_with(&places.data_dir);
        match state {
            Ok(Some(state)) => {
                let must_own = path == &places.data_dir;
                problems.extend(
                    file_problems(&state, uid, must_own)
                        .into_iter()
                        .filter(|p| !(sheltered && matches!(p, Problem::OpenToOthers { .. }))),
                );
                files.push(state);
            }
            Ok(None) => {}
            Err(e) if sheltered && e.kind() == std::io::ErrorKind::PermissionDenied => {}
            Err(e) => problems.push(Problem::Unreadable {
                path: path.clone(),
                error: e.to_string(),
            }),
        }
    }
    (files, problems)
}

/// What is wrong with one kept file: another user owns it (root may own the config and the
/// database's folder's files, never the data dir the server writes in), or others may open it.
fn file_problems(state: &FileState, uid: u32, must_own: bool) -> Vec<Problem> {
    let mut found = Vec::new();
    let owner_ok = state.owner == uid || (!must_own && state.owner == 0);
    if !owner_ok {
        found.push(Problem::NotOwner {
            path: state.path.clone(),
            owner: state.owner,
        });
    }
    if state.kind != Kind::Symlink && state.open_to_others() {
        found.push(Problem::OpenToOthers {
            path: state.path.clone(),
            mode: state.mode,
        });
    }
    found
}

/// A credential seen from a process of the server's own user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sighting {
    /// Who the credential is (`token:<name>`, `admin`).
    pub credential: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    pub requests: u64,
}

/// What the server knows about its boundary: the assessment made at start (before any agent
/// connected), and the agents seen since from its own user.
pub struct Boundary {
    places: Places,
    uid: u32,
    at_start: Assessment,
    seen: Mutex<BTreeMap<String, Sighting>>,
}

/// The boundary as the Security page and `GET /api/v1/boundary` show it.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Whether another user's process can neither read nor change the server's files.
    pub holds: bool,
    /// Whether the server runs as a user of its own.
    pub dedicated: bool,
    #[serde(flatten)]
    pub assessment: Assessment,
    /// The reasons as sentences.
    pub reasons: Vec<String>,
    /// Outside agents that connected as the server's own user.
    pub same_user_agents: Vec<Sighting>,
    /// Set when the boundary does not hold: what to do.
    pub warning: Option<String>,
}

impl Boundary {
    /// Assesses the server's user and files now (reads `/etc/passwd` and stats files: call
    /// it off the async workers).
    pub fn new(places: Places) -> Boundary {
        let uid = account::current_uid();
        let at_start = assess(&places, uid, &account::all());
        Boundary {
            places,
            uid,
            at_start,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    /// The uid the server runs as.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The assessment made at start.
    pub fn at_start(&self) -> &Assessment {
        &self.at_start
    }

    /// The start-up warning (one line), when the boundary did not hold at start.
    pub fn startup_warning(&self) -> Option<String> {
        warning(&self.at_start)
    }

    /// What a new `gates` token's maker should know: the server shares a user with its agents
    /// (it did at start, or an agent connected as its user since).
    pub fn token_warning(&self) -> Option<String> {
        let seen = self.same_user_agents();
        if !self.at_start.dedicated() {
            return warning(&self.at_start);
        }
        let first = seen.first()?;
        Some(format!(
            "warning: an outside agent ({}) connected to Countersign as its own OS user, {}: \
             that agent can read and change Countersign's files. Run the agents as another \
             user than Countersign's ({SEE_README})",
            first.credential,
            self.at_start.who()
        ))
    }

    /// Records that `credential` made a request from a process of user `peer_uid`; returns
    /// whether that is the server's own user (and the first time this credential was seen so).
    pub fn note_peer(&self, credential: &str, peer_uid: u32) -> (bool, bool) {
        if peer_uid != self.uid {
            return (false, false);
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let now = Timestamp::now();
        if let Some(known) = seen.get_mut(credential) {
            known.last_seen = now;
            known.requests = known.requests.saturating_add(1);
            return (true, false);
        }
        if seen.len() >= MAX_SIGHTINGS {
            return (true, false);
        }
        seen.insert(
            credential.to_owned(),
            Sighting {
                credential: credential.to_owned(),
                first_seen: now.clone(),
                last_seen: now,
                requests: 1,
            },
        );
        (true, true)
    }

    /// The credentials seen from the server's own user, first seen first.
    pub fn same_user_agents(&self) -> Vec<Sighting> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let mut list: Vec<Sighting> = seen.values().cloned().collect();
        list.sort_by(|a, b| a.first_seen.as_str().cmp(b.first_seen.as_str()));
        list
    }

    /// The boundary now: the files assessed again, the sightings so far (blocking, as
    /// [`Boundary::new`]).
    pub fn report(&self) -> Report {
        let assessment = assess(&self.places, self.uid, &account::all());
        let same_user_agents = self.same_user_agents();
        let warning = warning(&assessment).or_else(|| {
            (!same_user_agents.is_empty())
                .then(|| self.token_warning())
                .flatten()
        });
        Report {
            holds: assessment.holds() && same_user_agents.is_empty(),
            dedicated: assessment.dedicated(),
            reasons: assessment
                .problems
                .iter()
                .map(ToString::to_string)
                .collect(),
            assessment,
            same_user_agents,
            warning,
        }
    }
}

/// The one-line warning for an assessment that does not hold.
pub fn warning(assessment: &Assessment) -> Option<String> {
    if assessment.holds() {
        return None;
    }
    let reasons = assessment.reasons();
    Some(if assessment.dedicated() {
        format!(
            "warning: Countersign's files are open to other users ({reasons}): fix them with \
             `{FIX}` ({SEE_README})"
        )
    } else {
        format!(
            "warning: Countersign runs as {}, not as a user of its own ({reasons}): an outside \
             agent running as this user can read and change its files (database, config, \
             keys). Run it as its own user with `{FIX}` ({SEE_README})",
            assessment.who()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::account::Account;
    use super::*;

    fn account(name: &str, uid: u32, shell: &str) -> Account {
        Account {
            name: name.into(),
            uid,
            gid: uid,
            home: PathBuf::from("/"),
            shell: shell.into(),
        }
    }

    fn accounts() -> Vec<Account> {
        vec![
            account("root", 0, "/bin/bash"),
            account("countersign", 998, "/usr/sbin/nologin"),
            account("ada", 1000, "/bin/bash"),
        ]
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A data dir with a config and a database, owned by whoever runs the test.
    fn places(dir: &Path) -> Places {
        let data_dir = dir.join("data");
        std::fs::create_dir(&data_dir).unwrap();
        chmod(&data_dir, 0o700);
        let places = Places {
            config_file: data_dir.join("config.toml"),
            database_file: Some(data_dir.join("countersign.db")),
            data_dir,
        };
        for file in [&places.config_file, places.database_file.as_ref().unwrap()] {
            std::fs::write(file, "").unwrap();
            chmod(file, 0o600);
        }
        places
    }

    fn me() -> u32 {
        account::current_uid()
    }

    #[test]
    fn a_service_account_owning_a_closed_data_dir_holds() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        // The files are this test's user's; call that uid the service account's.
        let mut list = accounts();
        list.retain(|a| a.uid != me());
        list.push(account("svc", me(), "/usr/sbin/nologin"));
        let found = assess(&places, me(), &list);
        if me() == 0 {
            assert_eq!(found.problems, vec![Problem::RunsAsRoot]);
            return;
        }
        assert!(found.holds(), "{:?}", found.problems);
        assert!(found.dedicated());
        assert_eq!(found.files.len(), 3);
        assert_eq!(warning(&found), None);
    }

    #[test]
    fn a_person_or_root_is_not_a_user_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        let root = assess(&places, 0, &accounts());
        assert!(!root.dedicated());
        assert!(root.problems.contains(&Problem::RunsAsRoot));
        let person = assess(&places, 1000, &accounts());
        assert!(!person.dedicated());
        assert!(person.problems.contains(&Problem::LoginShell {
            user: "ada".into(),
            shell: "/bin/bash".into()
        }));
        let nobody = assess(&places, 4242, &accounts());
        assert!(nobody.problems.contains(&Problem::NoAccount { uid: 4242 }));
        let line = warning(&person).unwrap();
        assert!(
            line.starts_with(
                "warning: Countersign runs as `ada` (uid 1000), not as a user of its own"
            ),
            "{line}"
        );
        assert!(line.contains(FIX) && line.contains(SEE_README), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn open_modes_and_other_owners_are_each_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        chmod(&places.data_dir, 0o755);
        chmod(&places.config_file, 0o640);
        let db = places.database_file.clone().unwrap();
        chmod(&db, 0o606);
        let mut list = accounts();
        list.push(account("svc", 4343, "/usr/sbin/nologin"));
        // As a service account that owns none of them (the test's user does).
        let found = assess(&places, 4343, &list);
        assert!(found.dedicated(), "the account is a service account");
        assert!(!found.holds());
        let expect = |p: Problem| {
            assert!(
                found.problems.contains(&p),
                "{:?} lacks {p:?}",
                found.problems
            )
        };
        expect(Problem::OpenToOthers {
            path: places.data_dir.clone(),
            mode: 0o755,
        });
        expect(Problem::OpenToOthers {
            path: places.config_file.clone(),
            mode: 0o640,
        });
        expect(Problem::OpenToOthers {
            path: db.clone(),
            mode: 0o606,
        });
        if me() != 0 {
            expect(Problem::NotOwner {
                path: places.data_dir.clone(),
                owner: me(),
            });
            expect(Problem::NotOwner {
                path: db,
                owner: me(),
            });
        }
        let line = warning(&found).unwrap();
        assert!(
            line.starts_with("warning: Countersign's files are open to other users"),
            "{line}"
        );
    }

    #[test]
    fn a_file_inside_a_closed_data_dir_is_out_of_reach_whatever_its_bits() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        let db = places.database_file.clone().unwrap();
        chmod(&db, 0o644);
        let outside = dir.path().join("outside.toml");
        std::fs::write(&outside, "").unwrap();
        chmod(&outside, 0o644);
        let places = Places {
            config_file: outside.clone(),
            ..places
        };
        let found = assess(&places, me(), &accounts());
        assert!(
            !found
                .problems
                .iter()
                .any(|p| matches!(p, Problem::OpenToOthers { path, .. } if *path == db)),
            "{:?}",
            found.problems
        );
        assert!(found.problems.contains(&Problem::OpenToOthers {
            path: outside,
            mode: 0o644
        }));
    }

    #[test]
    fn root_may_own_the_config_but_never_the_data_dir() {
        let state = |path: &str, owner| FileState {
            path: PathBuf::from(path),
            kind: Kind::File,
            owner,
            group: 0,
            mode: 0o600,
        };
        assert!(file_problems(&state("/etc/cs.toml", 0), 998, false).is_empty());
        assert_eq!(
            file_problems(&state("/var/lib/cs", 0), 998, true),
            vec![Problem::NotOwner {
                path: PathBuf::from("/var/lib/cs"),
                owner: 0
            }]
        );
        assert_eq!(
            file_problems(&state("/home/ada/cs.toml", 1000), 998, false).len(),
            1,
            "a person's config is theirs to rewrite"
        );
    }

    #[test]
    fn sightings_are_only_of_the_servers_own_user_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let boundary = Boundary::new(places(dir.path()));
        let own = boundary.uid();
        assert_eq!(
            boundary.note_peer("token:other-user", own + 1),
            (false, false)
        );
        assert!(boundary.same_user_agents().is_empty());
        assert_eq!(boundary.note_peer("token:claude", own), (true, true));
        assert_eq!(boundary.note_peer("token:claude", own), (true, false));
        let seen = boundary.same_user_agents();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].credential.as_str(), seen[0].requests),
            ("token:claude", 2)
        );
        for n in 0..100 {
            boundary.note_peer(&format!("token:t{n}"), own);
        }
        assert_eq!(boundary.same_user_agents().len(), MAX_SIGHTINGS);
        let report = boundary.report();
        assert!(!report.holds);
        assert!(report.warning.is_some());
        assert!(boundary.token_warning().is_some());
    }
}
