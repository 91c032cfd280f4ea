ALTER TABLE audit_events ADD CONSTRAINT audit_events_hash_key UNIQUE (hash);
CREATE INDEX operations_status_lease ON operations (status, lease_until);
CREATE INDEX operations_status_check ON operations (status, next_check_at);
