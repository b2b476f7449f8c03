-- People who sign in with OpenID Connect (issue 41): invited by email (unique, lowercased),
-- bound to their provider's (issuer, sub) at their first sign-in. Roles and groups are JSON
-- arrays of names. Removing a person deletes the row: their browser logins name its id and
-- stop working with it.
CREATE TABLE people (
    id         TEXT PRIMARY KEY NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    name       TEXT,
    roles      TEXT NOT NULL,          -- JSON: ["admin" | "approver" | "viewer", …]
    groups     TEXT NOT NULL,          -- JSON: ["maintainers", …]
    issuer     TEXT,
    subject    TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX people_by_subject ON people (issuer, subject) WHERE subject IS NOT NULL;
