//! Accounts as `/etc/passwd` lists them: who a uid is, and whether it can log in.
//!
//! Read from the file rather than through NSS: `useradd --system` (what `countersign service
//! install` runs) writes there, and an account found nowhere else (a directory service) is a
//! person's, never a service account, which is the answer that matters here.

use std::path::PathBuf;

/// Where the accounts are listed.
pub const PASSWD: &str = "/etc/passwd";

/// One line of `/etc/passwd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    /// The login shell as written (empty means `/bin/sh`).
    pub shell: String,
}

impl Account {
    /// Whether a person could log in as this account: its shell is a shell, not `nologin` or
    /// `false`.
    pub fn can_log_in(&self) -> bool {
        is_login_shell(&self.shell)
    }
}

/// Whether `shell` lets someone log in (an empty field is `/bin/sh`).
pub fn is_login_shell(shell: &str) -> bool {
    let name = shell.rsplit('/').next().unwrap_or(shell);
    !matches!(name, "nologin" | "false" | "true")
}

/// Every account `text` (in `/etc/passwd`'s format) lists; lines it cannot read are skipped.
pub fn parse(text: &str) -> Vec<Account> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Account> {
    if line.starts_with('#') || line.starts_with('+') || line.starts_with('-') {
        return None;
    }
    let fields: Vec<&str> = line.split(':').collect();
    let [name, _password, uid, gid, _gecos, home, shell] = fields.as_slice() else {
        return None;
    };
    Some(Account {
        name: (*name).to_owned(),
        uid: uid.parse().ok()?,
        gid: gid.parse().ok()?,
        home: PathBuf::from(home),
        shell: (*shell).to_owned(),
    })
}

/// The accounts of this machine (none when the file cannot be read).
pub fn all() -> Vec<Account> {
    std::fs::read_to_string(PASSWD)
        .map(|text| parse(&text))
        .unwrap_or_default()
}

/// The account with this uid.
pub fn by_uid(uid: u32) -> Option<Account> {
    all().into_iter().find(|a| a.uid == uid)
}

/// The account with this name.
pub fn by_name(name: &str) -> Option<Account> {
    all().into_iter().find(|a| a.name == name)
}

/// The effective uid of this process.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD_TEXT: &str = "\
root:x:0:0:root:/root:/bin/bash
# a comment
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
countersign:x:998:998::/var/lib/countersign:/usr/sbin/nologin
ada:x:1000:1000:Ada,,,:/home/ada:/bin/zsh
bare:x:1001:1001::/home/bare:
sync:x:4:65534:sync:/bin:/bin/sync
broken line
nfs:x:notanumber:1::/:/bin/sh
+ldapuser::::::
";

    #[test]
    fn lines_are_read_and_broken_ones_skipped() {
        let accounts = parse(PASSWD_TEXT);
        let names: Vec<&str> = accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            ["root", "daemon", "countersign", "ada", "bare", "sync"]
        );
        let service = &accounts[2];
        assert_eq!((service.uid, service.gid), (998, 998));
        assert_eq!(service.home, PathBuf::from("/var/lib/countersign"));
    }

    #[test]
    fn only_nologin_and_false_keep_a_person_out() {
        let accounts = parse(PASSWD_TEXT);
        let logs_in = |name: &str| {
            accounts
                .iter()
                .find(|a| a.name == name)
                .unwrap()
                .can_log_in()
        };
        assert!(logs_in("root"));
        assert!(logs_in("ada"));
        // An empty shell is /bin/sh.
        assert!(logs_in("bare"));
        // A shell that is a program still runs it at login: not a service account's.
        assert!(logs_in("sync"));
        assert!(!logs_in("daemon"));
        assert!(!logs_in("countersign"));
        assert!(!is_login_shell("/bin/false"));
        assert!(!is_login_shell("/sbin/nologin"));
    }
}
