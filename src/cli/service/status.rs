//! `service status`: whether the boundary holds for the service's user and files.

use std::path::Path;
use std::process::ExitCode;

use super::Place;
use crate::server::os_user::account::{self, Account};
use crate::server::os_user::files::{FileState, octal};
use crate::server::os_user::{self, Places};

pub fn run(place: &Place) -> ExitCode {
    let accounts = account::all();
    let Some(service) = accounts.iter().find(|a| a.name == place.user) else {
        println!(
            "user: `{}` does not exist: Countersign does not run as a user of its own here",
            place.user
        );
        println!(
            "the boundary does not hold; set it up with: {}",
            os_user::FIX
        );
        return ExitCode::from(1);
    };
    let places = Places {
        data_dir: place.data_dir.clone(),
        config_file: place.data_dir.join("config.toml"),
        database_file: Some(place.data_dir.join("countersign.db")),
    };
    let assessment = os_user::assess(&places, service.uid, &accounts);
    print_user(service);
    for (what, path) in [
        ("data dir", &places.data_dir),
        ("config", &places.config_file),
        (
            "database",
            places.database_file.as_ref().unwrap_or(&places.config_file),
        ),
    ] {
        print_file(what, path, &assessment.files, &accounts);
    }
    let unit = if place.unit_file.exists() {
        "present"
    } else {
        "absent"
    };
    println!("unit: {} ({unit})", place.unit_file.display());
    if assessment.holds() {
        println!(
            "the boundary holds: a process of another user (an agent you run as yourself) can \
             neither read nor change {}; it reaches Countersign only over HTTP",
            place.data_dir.display()
        );
        ExitCode::SUCCESS
    } else {
        println!("the boundary does not hold: {}", assessment.reasons());
        println!("fix it with: {} (it never loosens a mode)", os_user::FIX);
        ExitCode::from(1)
    }
}

fn print_user(service: &Account) {
    let shell = if service.shell.is_empty() {
        "/bin/sh"
    } else {
        &service.shell
    };
    let kind = if service.uid == 0 {
        "root: not a user of its own"
    } else if service.can_log_in() {
        "a login shell: a person's account, not a service's"
    } else {
        "a system account without a login shell"
    };
    println!(
        "user: {} (uid {}), shell {shell}: {kind}",
        service.name, service.uid
    );
}

fn print_file(what: &str, path: &Path, seen: &[FileState], accounts: &[Account]) {
    match seen.iter().find(|f| f.path == path) {
        Some(state) => {
            let owner = accounts
                .iter()
                .find(|a| a.uid == state.owner)
                .map_or_else(|| format!("uid {}", state.owner), |a| a.name.clone());
            println!(
                "{what}: {} (owner {owner}, mode {})",
                path.display(),
                octal(state.mode)
            );
        }
        None if account::current_uid() != 0 => println!(
            "{what}: {} (not visible to you: run as root to look inside)",
            path.display()
        ),
        None => println!("{what}: {} (missing)", path.display()),
    }
}
