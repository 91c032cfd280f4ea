-- Events in: each notice a source sent (a YooKassa notification, a
-- Bitrix24 outbound event), one row per rule it is for, written before the
-- notice is answered so a notice received is never lost. The operation it
-- runs is an ordinary one under op_key, a key derived from the notice's
-- stable id; the row says whether the source's truth let it run.
CREATE TABLE events (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       TEXT NOT NULL,              -- the target instance that sent it
    event        TEXT NOT NULL,              -- the source's event name
    object_id    TEXT NOT NULL,              -- the source's id of the object it is about
    run          TEXT NOT NULL,              -- the intent or process the rule runs
    op_key       TEXT NOT NULL,              -- the key of the operation it runs
    state        TEXT NOT NULL CHECK (state IN ('pending', 'run', 'dropped', 'failed')),
    reason       TEXT NOT NULL DEFAULT '',   -- why dropped or failed, or what the last read-back met
    deliveries   BIGINT  NOT NULL DEFAULT 1, -- how often the source sent it
    attempts     BIGINT  NOT NULL DEFAULT 0, -- read-backs that could not tell
    received_at  TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    next_at      TEXT NOT NULL,              -- when a pending one is read back next
    UNIQUE (source, event, object_id, run)
);
CREATE INDEX events_due ON events (state, next_at);
CREATE INDEX events_op_key ON events (op_key);
CREATE INDEX events_updated ON events (updated_at);
