-- Finding where a turn starts (its user_message) without scanning the session's log: the
-- session page renders a recent window that begins at a turn boundary and pages older turns.
CREATE INDEX events_by_kind ON events (session_id, kind, seq);
