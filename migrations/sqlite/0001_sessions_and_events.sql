-- Sessions and their append-only event logs. The log is the single source of truth;
-- `sessions.last_seq` exists only so a new seq is assigned in the same transaction as the insert.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY NOT NULL,
    title         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    approval_mode TEXT NOT NULL,
    last_seq      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_created ON sessions (created_at DESC);

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    turn_id    TEXT,
    at         TEXT NOT NULL,
    body       TEXT NOT NULL, -- the event's full JSON, exactly as sent on the wire
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_turn ON events (session_id, turn_id);
