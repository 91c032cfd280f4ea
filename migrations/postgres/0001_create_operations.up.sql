-- The journal on PostgreSQL: the same rows, rules and times as the
-- embedded SQLite journal (migrations/*.sql), one version for one version.
-- Times are UTC text in one fixed-width format, so they sort as strings.
CREATE TABLE operations (
    operation_key    TEXT PRIMARY KEY,
    intent           TEXT NOT NULL,
    fingerprint      TEXT NOT NULL CHECK (length(fingerprint) = 64),
    status           TEXT NOT NULL CHECK (status IN (
                         'awaiting_approval',
                         'started',
                         'succeeded',
                         'failed_retryable',
                         'failed_final',
                         'unknown')),
    target_system    TEXT NOT NULL,
    agent            TEXT NOT NULL,
    actor_id         TEXT NOT NULL DEFAULT '',
    request_id       TEXT NOT NULL DEFAULT '',
    payload          TEXT NOT NULL,           -- normalized payload (RFC 8785), no secrets
    lease_owner      TEXT,                    -- run id of the holder; NULL when free
    lease_until      TEXT,
    attempt_count    BIGINT NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    last_attempt_at  TEXT,
    target_object_id TEXT,
    result           TEXT,                    -- minimal normalized result (JSON)
    error_code       TEXT,
    error_field      TEXT,
    error_message    TEXT,
    lookup_failures  BIGINT NOT NULL DEFAULT 0,
    needs_review     INTEGER NOT NULL DEFAULT 0 CHECK (needs_review IN (0, 1)),
    next_check_at    TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    completed_at     TEXT,
    CHECK ((lease_owner IS NULL) = (lease_until IS NULL)),
    CHECK (status <> 'succeeded' OR target_object_id IS NOT NULL)
);

CREATE INDEX operations_status_lease ON operations (status, lease_until);
CREATE INDEX operations_status_check ON operations (status, next_check_at);
CREATE INDEX operations_created ON operations (created_at);
