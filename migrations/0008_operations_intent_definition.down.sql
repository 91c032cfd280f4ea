ALTER TABLE operations DROP COLUMN intent_digest;
ALTER TABLE operations DROP COLUMN intent_version;
