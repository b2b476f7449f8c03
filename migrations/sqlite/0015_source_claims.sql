-- Which credential an outside agent's `source` belongs to: the first token that opened a gate
-- under it. Everything kept per source (its grants, the reviewer's trust, its figures) is then
-- that credential's; another token claiming the name is refused. Removed with its token.
CREATE TABLE source_claims (
    source     TEXT PRIMARY KEY NOT NULL,
    actor      TEXT NOT NULL,          -- token:<name>
    claimed_at TEXT NOT NULL
);
CREATE INDEX source_claims_by_actor ON source_claims (actor);
