-- The webhook outbox: each delivery is written in the batch that makes the
-- state change it reports, so a crash can lose neither; the dispatcher
-- sends them in id order per endpoint and operation.
CREATE TABLE webhook_deliveries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id    TEXT NOT NULL UNIQUE,       -- the webhook-id header, the same on every attempt
    endpoint      TEXT NOT NULL,              -- the endpoint's name in the configuration
    event_type    TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    body          TEXT NOT NULL,              -- the JSON sent, signed at each attempt
    created_at    TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       TEXT NOT NULL,
    lease_until   TEXT,
    last_status   INTEGER,                    -- the receiver's HTTP status, 0 when none
    last_error    TEXT,                       -- what went wrong, in the gateway's words
    delivered_at  TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint, operation_key, id);
-- An endpoint that answered 410 Gone, or was paused: nothing is sent to it
-- until an admin resumes it.
CREATE TABLE webhook_endpoints (
    endpoint   TEXT PRIMARY KEY,
    state      TEXT NOT NULL CHECK (state IN ('gone', 'paused')),
    reason     TEXT NOT NULL,
    changed_at TEXT NOT NULL
);
