-- Who may answer which card (issue 41): as in SQLite's 0018_routes.sql.
ALTER TABLE sessions ADD COLUMN owner TEXT;
ALTER TABLE approvals ADD COLUMN escalated_at TEXT;
CREATE TABLE approvals_given (
    session_id  TEXT NOT NULL,
    approval_id TEXT NOT NULL REFERENCES approvals (approval_id) ON DELETE CASCADE,
    who         TEXT NOT NULL,
    name        TEXT,
    digest      TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (session_id, approval_id, digest, who)
);
