-- Processes: a declared sequence of steps, each an ordinary operation under
-- a key derived from the process's. A process's row holds what its steps
-- are made from (the payload, the agent and the rights it ran under) and
-- where it stands; its steps' rows are in operations.
CREATE TABLE processes (
    key            TEXT PRIMARY KEY,
    intent         TEXT NOT NULL,             -- the process's name
    intent_version BIGINT NOT NULL,
    intent_digest  TEXT NOT NULL,
    fingerprint    TEXT NOT NULL,
    agent          TEXT NOT NULL,
    scopes         TEXT NOT NULL,             -- the token's scopes, space-separated: its steps run under them
    request_id     TEXT NOT NULL DEFAULT '',
    payload        TEXT NOT NULL,             -- the normalized process payload
    state          TEXT NOT NULL CHECK (state IN ('started', 'awaiting_approval', 'unknown', 'succeeded',
                       'compensating', 'compensated', 'needs_review', 'rejected')),
    step           TEXT NOT NULL DEFAULT '',  -- the step the state is about
    error_code     TEXT NOT NULL DEFAULT '',  -- the failed step's code, once one failed for good
    error_message  TEXT NOT NULL DEFAULT '',
    undo_rounds    TEXT NOT NULL DEFAULT '{}', -- per step, how often a person had its undoing tried again
    undone         TEXT NOT NULL DEFAULT '',   -- the steps a person recorded as undone by hand, space-separated
    lease_owner    TEXT,                      -- the gateway run sending its steps now, one at a time
    lease_until    TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    completed_at   TEXT
);
CREATE INDEX processes_state ON processes (state, updated_at);
-- Which process each step's (and compensation's) key belongs to: an
-- approval of a step shows its process.
CREATE TABLE process_steps (
    step_key    TEXT PRIMARY KEY,
    process_key TEXT NOT NULL
);
