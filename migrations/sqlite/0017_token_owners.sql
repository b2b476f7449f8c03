-- Tokens belong to their maker (issue 41): the person's id (`people.id`), or NULL for the
-- admin (the startup token, a login link's browser, the local CLI), which every token made
-- before this migration becomes. A token whose maker is gone works no more; removing a
-- person revokes their tokens. No foreign key: a person's row is deleted on removal and the
-- token is then refused by the lookup, whether or not its revocation has run yet.
ALTER TABLE tokens ADD COLUMN owner TEXT;
CREATE INDEX tokens_by_owner ON tokens (owner) WHERE owner IS NOT NULL;
