-- Turn ownership across instances: the instance running a session's turn holds its lease and
-- renews it; a lapsed lease is taken over by a live instance, which resumes the turn from the
-- log. Times here are the database's own clock (no instance's clock is trusted).
CREATE TABLE turn_leases (
    session_id       TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    owner            TEXT NOT NULL,      -- the instance that runs the turn
    expires_at       TIMESTAMPTZ NOT NULL,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    sealed           BOOLEAN NOT NULL DEFAULT FALSE  -- the turn decided how it ends
);
CREATE INDEX turn_leases_by_expiry ON turn_leases (expires_at);
CREATE INDEX turn_leases_by_owner ON turn_leases (owner);
