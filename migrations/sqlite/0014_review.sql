-- The reviewer (issue 40): a prediction per card it was shown, with the answer it met, and
-- the classes (tool class × agent) the person trusts it with. Self-contained: no foreign
-- keys, so a prediction outlives its session (the reviewer's record with the person must not
-- be erased by deleting a session) and may be stored after its card was answered.
CREATE TABLE review_predictions (
    approval_id  TEXT PRIMARY KEY NOT NULL,
    session_id   TEXT NOT NULL,
    class        TEXT NOT NULL,          -- read | edit | exec | decision | network
    source       TEXT NOT NULL,          -- countersign | the outside agent's source
    reviewer     TEXT NOT NULL,          -- history | model
    predicted    TEXT NOT NULL,          -- approve | escalate
    reason       TEXT NOT NULL,          -- the reviewer's one line
    predicted_at TEXT NOT NULL,
    answered     TEXT,                   -- approved | denied | edited | expired | reviewer; NULL: not yet (or cancelled)
    answered_at  TEXT,
    disagreed_at TEXT                    -- the person would not have approved the reviewer's answer
);
CREATE INDEX review_predictions_answered ON review_predictions (answered_at) WHERE answered IS NOT NULL;

CREATE TABLE review_trust (
    class      TEXT NOT NULL,
    source     TEXT NOT NULL,
    trusted_at TEXT NOT NULL,
    -- The reviewer that earned it (`review::reviewer_key`): a trust ends when it changes.
    reviewer   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (class, source)
);

-- The history reviewer reads the latest answered cards, newest first: the index on
-- approvals (resolved_at, approval_id) of the Your answers migration serves it.
