-- A grant may answer a limited number of calls (NULL: no limit). Once `uses` reaches
-- `max_uses` it no longer applies; the use is claimed by one UPDATE whose WHERE checks it.
ALTER TABLE rules ADD COLUMN max_uses INTEGER;

-- A grant belongs to the agent it was made for: `source` is the outside session's source
-- (`codex`, `claude-code`, …) when an outside agent's card made it, NULL for the built-in
-- agent's. A rule answers only calls of that agent (`gate::rules::made_for`); a grant made
-- before this column existed is read as its making session's source was, or the built-in
-- agent's when that session is gone.
ALTER TABLE rules ADD COLUMN source TEXT;
UPDATE rules SET source = (
    SELECT s.source FROM approvals a JOIN sessions s ON s.id = a.session_id
    WHERE a.approval_id = rules.created_by_approval
);
