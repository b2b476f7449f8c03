-- The audit log: append-only and hash-chained. Each entry's hash covers the previous entry's
-- hash and its own canonical JSON, so altering or deleting an entry breaks the chain there.
CREATE TABLE audit (
    n         INTEGER PRIMARY KEY NOT NULL,
    at        TEXT NOT NULL,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL,
    subject   TEXT NOT NULL,
    detail    TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX audit_by_action ON audit (action, n);
CREATE INDEX audit_by_subject ON audit (subject, n);
