-- Who may answer which card (issue 41). A session remembers the person whose session it is
-- (`owner` in a route); each approval counted toward a card's quorum is its own row, against
-- the digest it approved (an edit makes a new digest, and the count starts again); a card
-- routed also to `escalate_to` remembers when.
ALTER TABLE sessions ADD COLUMN owner TEXT;
ALTER TABLE approvals ADD COLUMN escalated_at TEXT;
CREATE TABLE approvals_given (
    session_id  TEXT NOT NULL,
    approval_id TEXT NOT NULL REFERENCES approvals (approval_id) ON DELETE CASCADE,
    who         TEXT NOT NULL,          -- the person's email, or `admin`
    name        TEXT,                   -- their name from the people store, when it had one
    digest      TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (session_id, approval_id, digest, who)
);
