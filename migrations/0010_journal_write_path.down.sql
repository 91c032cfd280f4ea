CREATE TABLE audit_events_old (
    id            INTEGER PRIMARY KEY,
    at            TEXT NOT NULL,
    actor_kind    TEXT NOT NULL CHECK (actor_kind IN ('agent', 'user', 'system')),
    actor         TEXT NOT NULL,
    event         TEXT NOT NULL,
    operation_key TEXT,
    detail        TEXT NOT NULL,
    prev_hash     TEXT NOT NULL CHECK (length(prev_hash) = 64),
    hash          TEXT NOT NULL UNIQUE CHECK (length(hash) = 64)
) STRICT;
INSERT INTO audit_events_old (id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash)
    SELECT id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash FROM audit_events;
DROP TABLE audit_events;
ALTER TABLE audit_events_old RENAME TO audit_events;
CREATE INDEX audit_events_operation ON audit_events (operation_key, id);
CREATE INDEX audit_events_event ON audit_events (event, id);

CREATE INDEX operations_status_lease ON operations (status, lease_until);
CREATE INDEX operations_status_check ON operations (status, next_check_at);
