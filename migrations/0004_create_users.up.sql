-- Admin UI users, their server-side sessions, and failed sign-ins for
-- login throttling. Times are UTC text in the journal's fixed-width format.

-- Names compare case-insensitively (COLLATE NOCASE): "Alice" and "alice"
-- are one user. The hash is an argon2id PHC string carrying its own
-- parameters, never the password.
CREATE TABLE users (
    id                  INTEGER PRIMARY KEY,
    name                TEXT NOT NULL UNIQUE COLLATE NOCASE
                            CHECK (length(name) BETWEEN 1 AND 64),
    role                TEXT NOT NULL CHECK (role IN ('admin', 'accountant', 'operator', 'auditor')),
    password_hash       TEXT NOT NULL CHECK (password_hash LIKE '$argon2id$v=19$%'),
    disabled_at         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    password_changed_at TEXT NOT NULL
) STRICT;

-- Sessions: only the SHA-256 (hex) of the id given to the browser is stored.
CREATE TABLE sessions (
    id_hash      TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL CHECK (length(csrf_token) >= 32),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    remote_addr  TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- One row per failed sign-in and scope: the user name tried, and the
-- client address. Rows older than the throttling window are pruned.
CREATE TABLE login_failures (
    id      INTEGER PRIMARY KEY,
    scope   TEXT NOT NULL CHECK (scope IN ('name', 'addr')),
    subject TEXT NOT NULL COLLATE NOCASE CHECK (length(subject) BETWEEN 1 AND 128),
    at      TEXT NOT NULL
) STRICT;

CREATE INDEX login_failures_subject ON login_failures (scope, subject, at);
CREATE INDEX login_failures_at ON login_failures (at);
