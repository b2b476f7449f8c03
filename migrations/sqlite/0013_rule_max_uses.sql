-- A grant may answer a limited number of calls (NULL: no limit). Once `uses` reaches
-- `max_uses` it no longer applies; the use is claimed by one UPDATE whose WHERE checks it.
ALTER TABLE rules ADD COLUMN max_uses INTEGER;
