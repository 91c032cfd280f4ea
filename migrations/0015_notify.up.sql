-- People told when something waits for them: a user's e-mail address and
-- Telegram chat, and the notices outbox. Each notice is written in the
-- batch that makes the change it tells of, one per event, person and
-- channel, so a crash can lose none and a retry sends none twice.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN telegram_chat_id TEXT;
CREATE TABLE notices (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id      TEXT NOT NULL,              -- the event told of: its type, operation and moment
    recipient     TEXT NOT NULL,              -- the user's name
    channel       TEXT NOT NULL CHECK (channel IN ('email', 'telegram', 'bitrix24')),
    address       TEXT NOT NULL,              -- the e-mail address (for bitrix24 too) or chat id at the time
    event_type    TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    subject       TEXT NOT NULL,
    body          TEXT NOT NULL,              -- the message's text, nothing secret in it
    link          TEXT NOT NULL,              -- the admin card it points at
    created_at    TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       TEXT NOT NULL,
    lease_until   TEXT,
    digest_of     INTEGER,                    -- sent in the digest named by its first notice's id
    last_error    TEXT,
    sent_at       TEXT,
    UNIQUE (event_id, recipient, channel)
);
CREATE INDEX notices_due ON notices (state, next_at);
CREATE INDEX notices_address ON notices (channel, address, sent_at);
