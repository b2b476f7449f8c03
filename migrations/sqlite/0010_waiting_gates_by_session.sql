-- A session's waiting gates by an index of waiting gates only: counting them (the cap an
-- outside gate is checked against, on every open) or listing them no longer walks every gate
-- the session ever had, and past each one's request, to find the few still waiting.
CREATE INDEX approvals_waiting_by_session ON approvals (session_id) WHERE resolution IS NULL;
