//! `service install`: the steps from what is there now to Countersign running as its own user.

use std::path::{Path, PathBuf};

use super::InstallArgs;
use super::action::{self, Action, Owner, carry_out};
use super::checks::{check_user_name, require_root};
use super::error::ServiceError;
use super::unit::{Launch, plain_path};
use crate::server::os_user::account::{self, Account};
use crate::server::os_user::files::{FileState, Kind, octal, restricted, unsafe_ancestor};

/// The shells an account made here may get, the first that exists.
const NOLOGIN: [&str; 4] = [
    "/usr/sbin/nologin",
    "/sbin/nologin",
    "/usr/bin/false",
    "/bin/false",
];
/// What a new config file says.
const CONFIG_TEXT: &str = "\
# Countersign's configuration (made by `countersign service install`). Only Countersign's own
# user may read this file: keep it that way (mode 0600). Keys: see the README, Configuration.
";

/// The steps, and how the server will be started.
pub struct Plan {
    pub actions: Vec<Action>,
    pub notes: Vec<String>,
    pub launch: Launch,
}

pub fn run(args: &InstallArgs) -> Result<(), ServiceError> {
    require_root(args.dry_run)?;
    // Folders made on the way (`<prefix>/bin`) get 0755 whatever umask sudo passed on; what
    // must be closed is given its mode explicitly.
    // SAFETY: umask(2) only sets this process's file mode mask.
    unsafe {
        libc::umask(0o022);
    }
    let plan = plan(args)?;
    carry_out(&plan.actions, &args.place.user, args.dry_run)?;
    for note in &plan.notes {
        println!("note: {note}");
    }
    print_next_steps(args, &plan.launch);
    Ok(())
}

/// Every step install would take now.
pub fn plan(args: &InstallArgs) -> Result<Plan, ServiceError> {
    let place = &args.place;
    check_user_name(&place.user)?;
    let accounts = account::all();
    let data_dir = place.data_dir.clone();
    let workspace = args
        .workspace
        .clone()
        .unwrap_or_else(|| data_dir.join("workspace"));
    check_data_dir(&data_dir, &accounts, &place.user)?;
    check_plain("workspace", &workspace)?;
    check_prefix(&place.prefix)?;
    if !args.no_systemd {
        check_plain("unit file", &place.unit_file)?;
    }
    let mut actions = Vec::new();
    let mut notes = Vec::new();
    let service = account_steps(&place.user, &data_dir, &accounts, &mut actions)?;
    let uid = service.as_ref().map(|a| a.uid);
    owned_dir_steps(&data_dir, uid, &mut actions)?;
    let config = data_dir.join("config.toml");
    if !config.exists() {
        actions.push(Action::WriteFile {
            path: config,
            text: CONFIG_TEXT.into(),
            mode: 0o600,
            owner: Owner::Service,
        });
    }
    workspace_steps(&workspace, &data_dir, uid, &mut actions, &mut notes)?;
    let binary = binary_steps(&place.prefix, &mut actions)?;
    let site_root = site_steps(&place.prefix, &mut actions, &mut notes);
    let launch = Launch {
        user: place.user.clone(),
        binary,
        data_dir,
        workspace,
        listen: args.listen,
        site_root,
    };
    if !args.no_systemd {
        unit_steps(&place.unit_file, &launch.unit(), &mut actions);
    }
    Ok(Plan {
        actions,
        notes,
        launch,
    })
}

fn check_plain(what: &str, path: &Path) -> Result<(), ServiceError> {
    if plain_path(path) {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!(
            "the {what} {} must be an absolute path of letters, digits and `/._-+,` only",
            path.display()
        )))
    }
}

/// The data dir is given to the service: never a system folder, a link, nor a person's home
/// or a folder holding one.
fn check_data_dir(dir: &Path, accounts: &[Account], user: &str) -> Result<(), ServiceError> {
    check_plain("data dir", dir)?;
    let system = [
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/opt", "/proc", "/root", "/run",
        "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/tmp",
    ];
    let refuse = |why: String| {
        Err(ServiceError::Invalid(format!(
            "refusing to give {} to `{user}`: {why}; pick a folder of its own (--data-dir)",
            dir.display()
        )))
    };
    if system.iter().any(|s| dir == Path::new(s)) {
        return refuse("it is a system folder".into());
    }
    if let Some(person) = accounts
        .iter()
        .filter(|a| a.name != user && a.can_log_in() && a.home != Path::new("/"))
        .find(|a| a.home.starts_with(dir))
    {
        return refuse(format!("it holds the home of `{}`", person.name));
    }
    if let Ok(Some(state)) = FileState::of(dir)
        && state.kind != Kind::Dir
    {
        return refuse("it is not a folder (a link, or a file)".into());
    }
    let service_uid = accounts
        .iter()
        .find(|a| a.name == user)
        .map_or(0, |a| a.uid);
    if let Some(open) = unsafe_ancestor(dir, service_uid) {
        return refuse(format!(
            "{} on the way (uid {}, mode {}) would let another user move it away and put \
             their own in its place",
            open.path.display(),
            open.owner,
            octal(open.mode)
        ));
    }
    Ok(())
}

/// The installed binary's folder: only root may change what runs as the service.
fn check_prefix(prefix: &Path) -> Result<(), ServiceError> {
    check_plain("prefix", prefix)?;
    match unsafe_ancestor(&prefix.join("bin/countersign"), 0) {
        Some(open) => Err(ServiceError::Invalid(format!(
            "refusing to install into {}: {} (uid {}, mode {}) would let another user replace \
             the binary the service runs; pick a --prefix only root may write",
            prefix.display(),
            open.path.display(),
            open.owner,
            octal(open.mode)
        ))),
        None => Ok(()),
    }
}

/// The account: made when missing; an existing one must be a service account, not root nor
/// anyone's login.
fn account_steps(
    user: &str,
    home: &Path,
    accounts: &[Account],
    actions: &mut Vec<Action>,
) -> Result<Option<Account>, ServiceError> {
    match accounts.iter().find(|a| a.name == user) {
        Some(a) if a.uid == 0 => Err(ServiceError::Account(format!(
            "`{user}` is root: Countersign needs a user of its own (--user)"
        ))),
        Some(a) if a.can_log_in() => Err(ServiceError::Account(format!(
            "`{user}` exists and has a login shell ({}): a person's account, which their agents \
             share. Pick another --user (one is made for you), or give `{user}` the shell \
             /usr/sbin/nologin",
            if a.shell.is_empty() {
                "/bin/sh"
            } else {
                &a.shell
            }
        ))),
        Some(a) => Ok(Some(a.clone())),
        None => {
            if !Path::new("/usr/sbin/useradd").exists() && !Path::new("/sbin/useradd").exists() {
                return Err(ServiceError::Account(format!(
                    "useradd is missing: make a system user `{user}` without a login shell, home \
                     {}, by hand, then run this again",
                    home.display()
                )));
            }
            let shell = NOLOGIN
                .iter()
                .map(PathBuf::from)
                .find(|s| s.exists())
                .unwrap_or_else(|| PathBuf::from(NOLOGIN[0]));
            actions.push(Action::CreateAccount {
                name: user.to_owned(),
                home: home.to_owned(),
                shell,
            });
            Ok(None)
        }
    }
}

/// A folder the service owns whole: made `0700` when missing, else everything in it given to
/// the service (links not followed) and closed to others.
fn owned_dir_steps(
    dir: &Path,
    uid: Option<u32>,
    actions: &mut Vec<Action>,
) -> Result<(), ServiceError> {
    if FileState::of(dir)
        .map_err(ServiceError::io("inspect", dir))?
        .is_none()
    {
        actions.push(Action::MakeDir {
            path: dir.to_owned(),
            mode: 0o700,
        });
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(dir).follow_links(false) {
        let entry = entry
            .map_err(|e| ServiceError::Invalid(format!("cannot read {}: {e}", dir.display())))?;
        let Some(state) =
            FileState::of(entry.path()).map_err(ServiceError::io("inspect", entry.path()))?
        else {
            continue;
        };
        if uid != Some(state.owner) {
            actions.push(Action::Own {
                root: dir.to_owned(),
                path: state.path.clone(),
                was: state.owner,
            });
        }
        let needs = if entry.depth() == 0 { 0o700 } else { 0 };
        if state.kind != Kind::Symlink && (state.open_to_others() || state.mode & needs != needs) {
            actions.push(Action::Restrict {
                root: dir.to_owned(),
                path: state.path.clone(),
                was: state.mode,
                to: restricted(state.mode, needs),
            });
        }
    }
    Ok(())
}

/// The workspace: inside the data dir it is the service's like the rest; a folder elsewhere is
/// made when missing, and an existing one is left as it is (it may be a person's project).
fn workspace_steps(
    workspace: &Path,
    data_dir: &Path,
    uid: Option<u32>,
    actions: &mut Vec<Action>,
    notes: &mut Vec<String>,
) -> Result<(), ServiceError> {
    let state = FileState::of(workspace).map_err(ServiceError::io("inspect", workspace))?;
    match state {
        None => actions.push(Action::MakeDir {
            path: workspace.to_owned(),
            mode: 0o700,
        }),
        Some(_) if workspace.starts_with(data_dir) => {}
        Some(state) if uid != Some(state.owner) => notes.push(format!(
            "the workspace {} is uid {}'s, not the service's: the agent's tools may not be \
             able to write there (left as it is)",
            workspace.display(),
            state.owner
        )),
        Some(_) => {}
    }
    Ok(())
}

/// This binary, root's, at `<prefix>/bin/countersign` (so neither the service nor an agent can
/// change what runs).
fn binary_steps(prefix: &Path, actions: &mut Vec<Action>) -> Result<PathBuf, ServiceError> {
    let to = prefix.join("bin/countersign");
    let from = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| ServiceError::Invalid(format!("cannot find this binary: {e}")))?;
    let same_file = to.canonicalize().is_ok_and(|t| t == from);
    if !same_file && action::file_differs(&from, &to) {
        actions.push(Action::CopyFile {
            from,
            to: to.clone(),
            mode: 0o755,
        });
    }
    Ok(to)
}

/// The web UI's files beside the binary, when this build has them (or an earlier install
/// put them there).
fn site_steps(
    prefix: &Path,
    actions: &mut Vec<Action>,
    notes: &mut Vec<String>,
) -> Option<PathBuf> {
    let to = prefix.join("share/countersign/site");
    let built = |dir: &Path| dir.join("pkg/countersign.js").is_file();
    let from = crate::server::settings::find_site_root();
    let from = from.canonicalize().unwrap_or(from);
    if built(&from) && from != to {
        if action::tree_differs(&from, &to) {
            actions.push(Action::CopyTree {
                from,
                to: to.clone(),
            });
        }
        return Some(to);
    }
    if built(&to) {
        return Some(to);
    }
    notes.push(
        "the web UI's files were not found (build them with scripts/run, or set \
         COUNTERSIGN_SITE_ROOT, then install again): the API works, the pages will not"
            .into(),
    );
    None
}

fn unit_steps(path: &Path, text: &str, actions: &mut Vec<Action>) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        actions.push(Action::WriteFile {
            path: path.to_owned(),
            text: text.to_owned(),
            mode: 0o644,
            owner: Owner::Root,
        });
    }
}

fn print_next_steps(args: &InstallArgs, launch: &Launch) {
    let user = &args.place.user;
    let data = launch.data_dir.display();
    println!();
    println!(
        "Countersign runs as `{user}`, apart from the agents you run as yourself: its data dir \
         {data} (0700) and config {data}/config.toml (0600) are its own."
    );
    if !args.no_systemd {
        let unit = args
            .place
            .unit_file
            .file_stem()
            .map_or("countersign".into(), |s| s.to_string_lossy().into_owned());
        println!("Start it with systemd:");
        println!("  systemctl daemon-reload && systemctl enable --now {unit}");
    }
    println!("Without systemd (as root; it stays in the foreground):");
    println!("  {}", launch.runuser_line());
    println!("  (or: {})", launch.setpriv_line());
    println!("A login link for your browser, made by the server's own user:");
    println!(
        "  sudo -u {user} {} login --data-dir {data}",
        launch.binary.display()
    );
    println!(
        "Your agents reach it only over HTTP: make a `gates` token on the Tokens page and set \
         COUNTERSIGN_URL=http://{} and COUNTERSIGN_TOKEN=<the token> where they start.",
        launch.listen
    );
    println!(
        "Check the boundary any time: countersign service status --user {user} --data-dir {data}"
    );
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn an_open_tree_is_closed_and_never_opened_further() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::fs::write(data.join("countersign.db"), "").unwrap();
        std::fs::write(data.join("sub/key"), "").unwrap();
        std::fs::write(data.join("closed"), "").unwrap();
        chmod(&data, 0o755);
        chmod(&data.join("countersign.db"), 0o644);
        chmod(&data.join("sub"), 0o777);
        chmod(&data.join("sub/key"), 0o400);
        chmod(&data.join("closed"), 0o600);
        std::os::unix::fs::symlink("/etc/passwd", data.join("link")).unwrap();
        let me = account::current_uid();
        let mut actions = Vec::new();
        owned_dir_steps(&data, Some(me), &mut actions).unwrap();
        let restricts: Vec<(PathBuf, u32)> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Restrict { path, to, .. } => Some((path.clone(), *to)),
                _ => None,
            })
            .collect();
        assert_eq!(restricts.len(), 3, "{actions:#?}");
        assert!(restricts.contains(&(data.clone(), 0o700)));
        assert!(restricts.contains(&(data.join("countersign.db"), 0o600)));
        assert!(restricts.contains(&(data.join("sub"), 0o700)));
        assert!(
            !actions.iter().any(|a| matches!(a, Action::Own { .. })),
            "all mine already"
        );
        // Given to another uid: every entry changes hands, the link itself included.
        let mut actions = Vec::new();
        owned_dir_steps(&data, Some(me + 1), &mut actions).unwrap();
        let owned = actions
            .iter()
            .filter(|a| matches!(a, Action::Own { .. }))
            .count();
        assert_eq!(owned, 6, "{actions:#?}");
    }

    #[test]
    fn a_missing_dir_is_made_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut actions = Vec::new();
        owned_dir_steps(&dir.path().join("new"), None, &mut actions).unwrap();
        assert_eq!(
            actions,
            [Action::MakeDir {
                path: dir.path().join("new"),
                mode: 0o700
            }]
        );
    }

    #[test]
    fn a_persons_home_or_a_system_folder_is_never_the_data_dir() {
        let accounts = vec![
            Account {
                name: "ada".into(),
                uid: 1000,
                gid: 1000,
                home: "/home/ada".into(),
                shell: "/bin/bash".into(),
            },
            Account {
                name: "countersign".into(),
                uid: 998,
                gid: 998,
                home: "/var/lib/countersign".into(),
                shell: "/usr/sbin/nologin".into(),
            },
        ];
        let check = |dir: &str| check_data_dir(Path::new(dir), &accounts, "countersign");
        assert!(check("/var/lib/countersign").is_ok());
        assert!(check("/srv/countersign").is_ok());
        for bad in [
            "/",
            "/etc",
            "/home",
            "/var/lib",
            "/home/ada",
            "relative/dir",
            "/with space",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(check_data_dir(&link, &accounts, "countersign").is_err());
    }
}
