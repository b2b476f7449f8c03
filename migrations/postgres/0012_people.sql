-- People who sign in with OpenID Connect (issue 41): as in SQLite's 0015_people.sql.
CREATE TABLE people (
    id         TEXT PRIMARY KEY NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    name       TEXT,
    roles      TEXT NOT NULL,
    groups     TEXT NOT NULL,
    issuer     TEXT,
    subject    TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX people_by_subject ON people (issuer, subject) WHERE subject IS NOT NULL;
