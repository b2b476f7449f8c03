-- Passkeys (WebAuthn) registered for step-up: answering what matters needs one of them.
CREATE TABLE passkeys (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    rp_id         TEXT NOT NULL,          -- the domain it was made for
    origin        TEXT NOT NULL,          -- the origin it was registered from: assertions must come from it
    credential    TEXT NOT NULL,          -- the WebAuthn library's JSON: id, public key, counter
    created_at    TEXT NOT NULL,
    last_used_at  TEXT
);

-- Passkey ceremonies already used (registration or assertion): each is spent once, whichever
-- instance finishes it and across restarts. Rows past their expiry are pruned as new ones come.
CREATE TABLE spent_ceremonies (
    nonce       TEXT PRIMARY KEY,
    expires_ms  BIGINT NOT NULL
);
