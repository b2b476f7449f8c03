-- Secrets the server hands out and takes back, kept only as their SHA-256: the admin token,
-- login links, browser logins, the local CLI's short-lived credential, answer capabilities and
-- passkey ceremonies in progress. Nothing on disk can be turned back into one of them, and no
-- key is kept from which one could be made.
CREATE TABLE hashed_secrets (
    hash        TEXT PRIMARY KEY NOT NULL,   -- hex SHA-256 of the secret
    kind        TEXT NOT NULL,               -- admin_token | cli_token | login_code | browser_login | capability | ceremony
    body        TEXT NOT NULL,               -- what the secret grants (JSON; never the secret)
    created_ms  BIGINT NOT NULL,
    expires_ms  BIGINT                       -- NULL: until forgotten
);
CREATE INDEX hashed_secrets_by_kind ON hashed_secrets (kind);
CREATE INDEX hashed_secrets_by_expiry ON hashed_secrets (expires_ms) WHERE expires_ms IS NOT NULL;

-- The one start at which an older build's `<data-dir>/token` file is taken over (its hash kept,
-- the file removed): this row, taken by the first start after this migration. A token file
-- that appears later is removed and ignored (it can only have been planted).
INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms)
    VALUES ('legacy-token-window', 'legacy_token_window', '{}', 0, NULL);

-- Ceremonies are now kept (and spent) as hashed secrets.
DROP TABLE spent_ceremonies;
