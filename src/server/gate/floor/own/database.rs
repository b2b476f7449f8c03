//! Countersign's PostgreSQL database, as a command may name it: a `postgres://` URL of the
//! same database (whatever its user, password, host spelling or options), or its name in a
//! connection string (`dbname=…`). Its clients (`psql`, `pg_dump`, …) are on the floor
//! whatever they name (`cli.rs`): they reach it through `PGDATABASE`, `~/.pgpass` or a
//! service file just as well.

/// The database the store is on.
#[derive(Debug)]
pub struct Postgres {
    /// Its name, case-folded.
    name: String,
}

impl Postgres {
    /// The database a `postgres://` or `postgresql://` URL names; `None` for any other store.
    pub fn of(url: &str) -> Option<Postgres> {
        let parsed = url::Url::parse(url.trim()).ok()?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return None;
        }
        Some(Postgres {
            name: name_in(&parsed).to_lowercase(),
        })
    }

    /// Why a case-folded text names this database; `None` when it does not.
    pub fn named_in(&self, text: &str) -> Option<String> {
        let in_url = text
            .match_indices("postgres")
            .filter_map(|(start, _)| {
                let rest = &text[start..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || "'\"`;|&<>()".contains(c))
                    .unwrap_or(rest.len());
                url::Url::parse(&rest[..end]).ok()
            })
            .filter(|url| matches!(url.scheme(), "postgres" | "postgresql"))
            .any(|url| name_in(&url).eq_ignore_ascii_case(&self.name));
        let in_conninfo = text.match_indices("dbname").any(|(start, _)| {
            let value = text[start + "dbname".len()..]
                .trim_start()
                .strip_prefix('=')
                .map(|v| v.trim_start().trim_start_matches(['\'', '"']))
                .unwrap_or("");
            value
                .split(|c: char| c.is_whitespace() || "'\"&;".contains(c))
                .next()
                .is_some_and(|name| name == self.name)
        });
        (in_url || in_conninfo).then(|| {
            format!(
                "names Countersign's own PostgreSQL database `{}`, built in",
                self.name
            )
        })
    }
}

/// The database a URL names: its path, else `?dbname=`, else its user (PostgreSQL's
/// default), else `postgres`.
fn name_in(url: &url::Url) -> String {
    let path = url.path().trim_start_matches('/');
    if !path.is_empty() {
        return percent(path);
    }
    if let Some((_, name)) = url.query_pairs().find(|(k, _)| k == "dbname") {
        return name.into_owned();
    }
    match url.username() {
        "" => "postgres".to_owned(),
        user => percent(user),
    }
}

fn percent(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_database_is_named_in_any_spelling_and_others_are_not() {
        let db = Postgres::of("postgres://cs:secret@db.internal:5432/countersign?sslmode=require")
            .unwrap();
        for text in [
            "psql postgres://cs:secret@db.internal:5432/countersign",
            "postgresql://other@127.0.0.1/countersign?application_name=x",
            "psql 'host=db dbname=countersign user=cs'",
            "python -c \"connect('postgresql://u@h/countersign')\"",
        ] {
            assert!(db.named_in(&text.to_lowercase()).is_some(), "{text}");
        }
        for text in [
            "psql postgres://cs@db.internal/app",
            "dbname=countersign_test",
            "echo postgres",
        ] {
            assert!(db.named_in(text).is_none(), "{text}");
        }
        assert!(Postgres::of("sqlite:///tmp/x.db").is_none());
    }
}
