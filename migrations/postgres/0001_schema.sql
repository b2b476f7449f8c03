-- Countersign's schema on PostgreSQL: the same tables and meanings as the SQLite migrations
-- 0001–0007, in one step. Times are RFC 3339 text (they sort as time does), as on SQLite, so
-- both backends read and write the same values.

CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    title               TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    approval_mode       TEXT NOT NULL,
    last_seq            BIGINT NOT NULL DEFAULT 0,
    pre_plan_mode       TEXT,
    plan_execution_mode TEXT,
    source              TEXT,
    -- insertion order, for ties in created_at (SQLite's rowid)
    ord                 BIGSERIAL
);
CREATE INDEX sessions_by_created ON sessions (created_at DESC, ord DESC);

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    turn_id    TEXT,
    at         TEXT NOT NULL,
    body       TEXT NOT NULL, -- the event's full JSON, exactly as sent on the wire
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_turn ON events (session_id, turn_id);
CREATE INDEX events_by_kind ON events (session_id, kind, seq);

CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id     TEXT NOT NULL,
    request     TEXT NOT NULL, -- ApprovalRequest JSON
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    resolution  TEXT,          -- Resolution JSON; NULL while pending
    resolved_at TEXT,
    ord         BIGSERIAL
);
CREATE INDEX approvals_pending ON approvals (created_at, ord) WHERE resolution IS NULL;
CREATE INDEX approvals_by_session ON approvals (session_id);

CREATE TABLE rules (
    id                  TEXT PRIMARY KEY,
    tool                TEXT NOT NULL,
    pattern             TEXT NOT NULL,
    scope               TEXT NOT NULL,  -- session | workspace
    session_id          TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    created_at          TEXT NOT NULL,
    created_by_approval TEXT,
    uses                BIGINT NOT NULL DEFAULT 0,
    last_used_at        TEXT,
    revoked_at          TEXT,
    expires_at          TEXT,
    ord                 BIGSERIAL
);

CREATE TABLE audit (
    n         BIGINT PRIMARY KEY,
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

CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    scope        TEXT NOT NULL,          -- admin | approve | gates
    secret_hash  TEXT NOT NULL UNIQUE,   -- sha256 hex of the secret
    created_at   TEXT NOT NULL,
    last_used_at TEXT
);

CREATE TABLE external_sessions (
    source           TEXT NOT NULL,
    external_session TEXT NOT NULL,
    session_id       TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    PRIMARY KEY (source, external_session)
);

CREATE TABLE external_gates (
    approval_id     TEXT PRIMARY KEY REFERENCES approvals (approval_id) ON DELETE CASCADE,
    opened_by       TEXT NOT NULL,
    idempotency_key TEXT,
    created_at      TEXT NOT NULL
);
CREATE UNIQUE INDEX external_gates_by_key
    ON external_gates (opened_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
