-- Tokens belong to their maker (issue 41): as in SQLite's 0017_token_owners.sql.
ALTER TABLE tokens ADD COLUMN owner TEXT;
CREATE INDEX tokens_by_owner ON tokens (owner) WHERE owner IS NOT NULL;
