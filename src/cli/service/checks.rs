//! The checks every `service` command makes before it changes anything.

use super::error::ServiceError;
use crate::server::os_user::account;

/// Refuses unless this process is root (a dry run may be anyone's).
pub fn require_root(dry_run: bool) -> Result<(), ServiceError> {
    if dry_run || account::current_uid() == 0 {
        return Ok(());
    }
    let words: Vec<String> = std::env::args()
        .map(|w| {
            if w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/.-_=:,+".contains(c))
            {
                w
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    Err(ServiceError::NotRoot(words.join(" ")))
}

/// A user name `useradd` takes and a unit can hold.
pub fn check_user_name(name: &str) -> Result<(), ServiceError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c));
    if first_ok && rest_ok && name.len() <= 32 {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!(
            "`{name}` is not a user name: lowercase letters, digits, `_` and `-`, starting with \
             a letter or `_`, at most 32"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_plain() {
        for ok in ["countersign", "cs-svc_1", "_cs"] {
            assert!(check_user_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Root",
            "1cs",
            "a b",
            "cs;rm",
            "x".repeat(33).as_str(),
            "-cs",
        ] {
            assert!(check_user_name(bad).is_err(), "{bad:?}");
        }
    }
}
