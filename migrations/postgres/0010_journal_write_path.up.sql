-- A new operation's writes touch fewer pages, and no more of them as the
-- journal grows (the SQLite journal's 0010 says why): the reconciler's
-- two indexes by status go (the index by status and creation time serves
-- its look-ups), and the audit trail's hashes lose their unique index.
DROP INDEX operations_status_lease;
DROP INDEX operations_status_check;
ALTER TABLE audit_events DROP CONSTRAINT audit_events_hash_key;
