-- Named tokens with scopes: only a hash of each secret is kept (the secret is shown once).
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY NOT NULL,
    scope        TEXT NOT NULL,          -- admin | approve | gates
    secret_hash  TEXT NOT NULL UNIQUE,   -- sha256 hex of the secret
    created_at   TEXT NOT NULL,
    last_used_at TEXT
);

-- Sessions opened by an outside agent: where they come from (NULL for the built-in agent).
ALTER TABLE sessions ADD COLUMN source TEXT;

-- One Countersign session per (source, the agent's own session id).
CREATE TABLE external_sessions (
    source           TEXT NOT NULL,
    external_session TEXT NOT NULL,
    session_id       TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    PRIMARY KEY (source, external_session)
) WITHOUT ROWID;

-- Who opened each external gate (only they, or a deciding credential, may read or cancel it),
-- and the Idempotency-Key it was opened with (cleared once older than a day, so a key is
-- unique per opener among the gates of the last 24 hours).
CREATE TABLE external_gates (
    approval_id     TEXT PRIMARY KEY NOT NULL REFERENCES approvals (approval_id) ON DELETE CASCADE,
    opened_by       TEXT NOT NULL,
    idempotency_key TEXT,
    created_at      TEXT NOT NULL
);
CREATE UNIQUE INDEX external_gates_by_key
    ON external_gates (opened_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
