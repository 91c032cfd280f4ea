-- Agent tokens: only the SHA-256 of the secret is stored.
CREATE TABLE tokens (
    id          INTEGER PRIMARY KEY,
    agent       TEXT NOT NULL CHECK (length(agent) BETWEEN 1 AND 64),
    hash        TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
    scopes      TEXT NOT NULL,                -- comma-separated, sorted
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) STRICT;

CREATE INDEX tokens_agent ON tokens (agent);
