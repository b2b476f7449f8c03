-- Resolved gates by when they were resolved: the answering figures (GET /api/v1/stats/decisions)
-- read the cards resolved in a window, in resolution order, and without this index would scan
-- every gate ever opened, requests and all, to find a month's.
CREATE INDEX approvals_resolved ON approvals (resolved_at, approval_id) WHERE resolution IS NOT NULL;
