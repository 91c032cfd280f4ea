-- Approvals of money operations: bound to the key and its fingerprint,
-- decided once, consumed once.
CREATE TABLE approvals (
    id            INTEGER PRIMARY KEY,
    operation_key TEXT NOT NULL UNIQUE REFERENCES operations (operation_key) ON DELETE CASCADE,
    fingerprint   TEXT NOT NULL CHECK (length(fingerprint) = 64),
    status        TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'consumed')),
    expires_at    TEXT NOT NULL,
    decided_by    TEXT,
    decided_at    TEXT,
    comment       TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    CHECK ((status IN ('pending', 'expired')) = (decided_by IS NULL))
) STRICT;

CREATE INDEX approvals_status_expires ON approvals (status, expires_at);

-- Retention deletes terminal operations by completion time.
CREATE INDEX operations_completed ON operations (completed_at) WHERE completed_at IS NOT NULL;

-- The audit trail: append-only, each event chained to the one before by
-- hash = sha256(prev_hash || canonical(event)). No foreign key: the trail
-- outlives the retention of the operations it speaks of.
CREATE TABLE audit_events (
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

CREATE INDEX audit_events_operation ON audit_events (operation_key, id);
CREATE INDEX audit_events_event ON audit_events (event, id);
