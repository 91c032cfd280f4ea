-- Each operation records the definition of its intent it was accepted
-- under: its version, and the SHA-256 of the definition file's bytes. A
-- key's meaning never changes: a retry of a key whose definition changed
-- in place or is gone is refused, and serve does not start while
-- unfinished operations name a definition edited in place. Rows from
-- before this version ran under version 1 of a built-in, digest unknown.
ALTER TABLE operations ADD COLUMN intent_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE operations ADD COLUMN intent_digest TEXT NOT NULL DEFAULT '';
