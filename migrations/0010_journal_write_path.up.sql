-- A new operation's writes touch fewer pages, and no more of them as the
-- journal grows. The reconciler's two indexes by status (with lease and
-- check times) go: its look-ups read the few started and unknown rows
-- through the browser's index by status and creation time, which a
-- status change updates anyway, so an operation going from started to
-- succeeded no longer moves its entries in two more indexes of every row.
-- The audit trail's hashes lose their unique index: nothing looks an
-- event up by hash (the chain is verified by walking ids, each event
-- naming its predecessor's hash), and every event put its random hash at
-- a random page of an index as large as the trail. SQLite drops a column
-- constraint only by rebuilding the table: the events are copied as they
-- are.
DROP INDEX operations_status_lease;
DROP INDEX operations_status_check;

CREATE TABLE audit_events_new (
    id            INTEGER PRIMARY KEY,
    at            TEXT NOT NULL,
    actor_kind    TEXT NOT NULL CHECK (actor_kind IN ('agent', 'user', 'system')),
    actor         TEXT NOT NULL,
    event         TEXT NOT NULL,
    operation_key TEXT,
    detail        TEXT NOT NULL,
    prev_hash     TEXT NOT NULL CHECK (length(prev_hash) = 64),
    hash          TEXT NOT NULL CHECK (length(hash) = 64)
) STRICT;
INSERT INTO audit_events_new (id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash)
    SELECT id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash FROM audit_events;
DROP TABLE audit_events;
ALTER TABLE audit_events_new RENAME TO audit_events;
CREATE INDEX audit_events_operation ON audit_events (operation_key, id);
CREATE INDEX audit_events_event ON audit_events (event, id);
