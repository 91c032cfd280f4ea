-- A person's own say in how they are told: the channels they turned off,
-- and the one-time codes that link a Telegram chat to them. A code is kept
-- only as its SHA-256, for ten minutes, one per user at a time.
ALTER TABLE users ADD COLUMN notify_off TEXT NOT NULL DEFAULT '';  -- channels turned off, comma-separated
CREATE TABLE telegram_links (
    code_hash  TEXT PRIMARY KEY,
    user_id    BIGINT  NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
