-- A user whose password someone else chose (an admin in the UI, the
-- "oncegate user" commands, the first run) must choose their own at their
-- next sign-in before doing anything else: whoever knows a password they
-- set must not be able to act as that user. Users made before this
-- version got their passwords that way too, so they choose theirs once.
ALTER TABLE users ADD COLUMN must_change_password INTEGER NOT NULL DEFAULT 1
    CHECK (must_change_password IN (0, 1));
