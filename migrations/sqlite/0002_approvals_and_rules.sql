-- Gates and standing rules. The event log stays the source of truth; `approvals` is the
-- index where resolving is a compare-and-set (resolution IS NULL → set), written in the same
-- transaction as the approval_request / approval_resolved events.
CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY NOT NULL,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id     TEXT NOT NULL,
    request     TEXT NOT NULL, -- ApprovalRequest JSON
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    resolution  TEXT,          -- Resolution JSON; NULL while pending
    resolved_at TEXT
);
CREATE INDEX approvals_pending ON approvals (created_at) WHERE resolution IS NULL;
CREATE INDEX approvals_by_session ON approvals (session_id);

CREATE TABLE rules (
    id                  TEXT PRIMARY KEY NOT NULL,
    tool                TEXT NOT NULL,
    pattern             TEXT NOT NULL,
    scope               TEXT NOT NULL,  -- session | workspace
    session_id          TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    created_at          TEXT NOT NULL,
    created_by_approval TEXT,
    uses                INTEGER NOT NULL DEFAULT 0,
    last_used_at        TEXT,
    revoked_at          TEXT
);
