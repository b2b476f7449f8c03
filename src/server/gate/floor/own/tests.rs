//! Countersign's own places against the spellings an outside agent may use.

use std::path::PathBuf;

use super::*;
use crate::server::secret::Secret;

fn own(database_url: Option<&str>) -> OwnPlaces {
    let places = Places {
        workspace: PathBuf::from("/srv/ws"),
        data_dir: PathBuf::from("/home/me/.local/share/countersign"),
        config_file: PathBuf::from("/etc/countersign/config.toml"),
        database_file: Some(PathBuf::from("/var/lib/cs/countersign.db")),
        database_url: database_url.map(Secret::new),
    };
    let env = Env {
        home: Some(PathBuf::from("/home/me")),
        tmpdir: Some(PathBuf::from("/tmp")),
        user: Some("me".into()),
    };
    OwnPlaces::with_env(&places, &env, Some(4242))
}

#[test]
fn every_spelling_of_a_place_is_reached() {
    let own = own(None);
    for (path, base) in [
        ("/home/me/.local/share/countersign/token", None),
        ("~/.local/share/countersign/vapid_private_key", None),
        ("~me/.local/share/countersign", None),
        ("$HOME/.local/share/countersign/countersign.db", None),
        ("/HOME/ME/.LOCAL/SHARE/COUNTERSIGN/TOKEN", None),
        (
            "../../.local/share/countersign/token",
            Some("/home/me/src/app"),
        ),
        ("token", Some("/home/me/.local/share/countersign")),
        ("/etc/countersign/config.toml", None),
        ("/etc/countersign/./../countersign/config.toml", None),
        ("/var/lib/cs/countersign.db-wal", None),
        ("/proc/4242/environ", None),
        ("/home/me/.local", None),
        ("/etc/countersign", None),
    ] {
        assert!(own.path_hit(path, base).is_some(), "{path} in {base:?}");
    }
    for (path, base) in [
        ("/home/me/src/app/README.md", None),
        ("/home/me", None),
        ("/", None),
        ("~/.local/share/other", None),
        ("token", Some("/home/me/src/app")),
        ("token", None),
        ("/proc/4243/environ", None),
        ("~other/.local/share/countersign", None),
    ] {
        assert!(own.path_hit(path, base).is_none(), "{path} in {base:?}");
    }
}

#[test]
fn words_reach_it_through_variables_globs_and_code() {
    let own = own(None);
    let word = |text: &str, vars: &[&str], template: &str| Word {
        text: text.into(),
        dynamic: !vars.is_empty(),
        glob: false,
        vars: vars.iter().map(|v| (*v).to_owned()).collect(),
        opaque: false,
        template: template.into(),
        tilde: false,
    };
    let home = word(
        "/.local/share/countersign/token",
        &["HOME"],
        "\u{1}HOME\u{2}/.local/share/countersign/token",
    );
    assert!(own.word_hit(&home, None).is_some());
    let code = Word::literal("print(open('/etc/countersign/config.toml').read())");
    assert!(own.word_hit(&code, None).is_some());
    assert!(
        own.glob_hit("/home/me/.local/share/count*/tok?n", None)
            .is_some()
    );
    assert!(
        own.glob_hit("*/token", Some("/home/me/.local/share"))
            .is_some()
    );
    assert!(own.glob_hit("/home/me/src/*.rs", None).is_none());
    let unknown = word("/x", &["SOMETHING"], "\u{1}SOMETHING\u{2}/x");
    assert!(own.word_hit(&unknown, None).is_none());
}

#[test]
fn a_postgres_store_is_named_by_its_url_and_its_clients_ask() {
    let sqlite = own(None);
    assert!(!sqlite.on_postgres());
    let pg = own(Some("postgres://cs:pw@db:5432/countersign"));
    assert!(pg.on_postgres());
    assert!(
        pg.text_hit("postgresql://admin@localhost/countersign")
            .is_some()
    );
    assert!(pg.text_hit("postgresql://admin@localhost/other").is_none());
}
