-- A standing rule may expire; an expired rule stops applying at once.
ALTER TABLE rules ADD COLUMN expires_at TEXT;
