//! `service uninstall`: the unit goes; with `--purge` the data, the installed files and the
//! account go too.

use std::path::Path;

use super::UninstallArgs;
use super::action::{Action, carry_out};
use super::checks::{check_user_name, require_root};
use super::error::ServiceError;
use crate::server::os_user::account;

pub fn run(args: &UninstallArgs) -> Result<(), ServiceError> {
    require_root(args.dry_run)?;
    let actions = plan(args)?;
    carry_out(&actions, &args.place.user, args.dry_run)?;
    if !args.purge {
        println!(
            "kept: the data dir {}, the user `{}` and the installed binary (--purge removes them)",
            args.place.data_dir.display(),
            args.place.user
        );
    }
    Ok(())
}

/// Whether systemd is the running init (where `systemctl` can act).
fn systemd_runs() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn plan(args: &UninstallArgs) -> Result<Vec<Action>, ServiceError> {
    let place = &args.place;
    check_user_name(&place.user)?;
    let mut actions = Vec::new();
    let systemctl = |words: &[&str]| Action::Systemctl {
        args: words.iter().map(|w| (*w).to_owned()).collect(),
    };
    if place.unit_file.exists() {
        let unit = place
            .unit_file
            .file_name()
            .map_or("countersign.service".into(), |n| {
                n.to_string_lossy().into_owned()
            });
        if systemd_runs() {
            actions.push(systemctl(&["disable", "--now", &unit]));
        }
        actions.push(Action::RemoveFile {
            path: place.unit_file.clone(),
        });
        if systemd_runs() {
            actions.push(systemctl(&["daemon-reload"]));
        }
    }
    if args.purge {
        purge_steps(args, &mut actions)?;
    }
    Ok(actions)
}

/// The data, the installed files and the account; never a person's account or their files.
fn purge_steps(args: &UninstallArgs, actions: &mut Vec<Action>) -> Result<(), ServiceError> {
    let place = &args.place;
    let found = account::by_name(&place.user);
    if let Some(a) = &found
        && (a.uid == 0 || a.can_log_in())
    {
        return Err(ServiceError::Account(format!(
            "`{}` is not a service account (root, or a login shell): refusing to purge it or \
             its files",
            place.user
        )));
    }
    if place.data_dir.is_dir() {
        let owner = std::fs::symlink_metadata(&place.data_dir)
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
            .ok();
        if found.as_ref().map(|a| a.uid) != owner {
            return Err(ServiceError::Invalid(format!(
                "{} is not `{}`'s: refusing to remove it",
                place.data_dir.display(),
                place.user
            )));
        }
        actions.push(Action::RemoveTree {
            path: place.data_dir.clone(),
        });
    }
    let binary = place.prefix.join("bin/countersign");
    if binary.is_file() {
        actions.push(Action::RemoveFile { path: binary });
    }
    let share = place.prefix.join("share/countersign");
    if share.is_dir() {
        actions.push(Action::RemoveTree { path: share });
    }
    if found.is_some() {
        actions.push(Action::DeleteAccount {
            name: place.user.clone(),
        });
    }
    Ok(())
}
