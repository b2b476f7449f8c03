-- Browsers that asked to be told when a card waits (Web Push). A subscription belongs to the
-- credential that made it (`browser` or `token:<name>`): its pushes go only where that
-- credential may answer, its Approve and Deny answer as it, and revoking the token drops it.
CREATE TABLE push_subscriptions (
    id          TEXT PRIMARY KEY,
    endpoint    TEXT NOT NULL UNIQUE,
    p256dh      TEXT NOT NULL,          -- base64url, the browser's P-256 public key
    auth        TEXT NOT NULL,          -- base64url, its 16-byte auth secret
    credential  TEXT NOT NULL,          -- browser | token:<name>
    -- Which secret that credential was when it subscribed: the named token's secret hash, or a
    -- fingerprint of the startup token. A new secret (a re-made token of the same name, a new
    -- startup token) is another credential: its rows no longer answer.
    credential_check TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX push_subscriptions_by_credential ON push_subscriptions (credential);
