-- Duplicate rules by business key. Each operation of an intent with a
-- rule records the SHA-256 of its business key (never the clear values),
-- and, when a rule found an earlier live operation of the same business
-- event, that operation's key and time. A held operation waits on an
-- approval of kind 'duplicate' (a person decides: not a duplicate, or
-- one); a money intent held so still needs its money approval after
-- (then_money).
ALTER TABLE operations ADD COLUMN business_key TEXT;
ALTER TABLE operations ADD COLUMN duplicate_of TEXT;
ALTER TABLE operations ADD COLUMN duplicate_at TEXT;

CREATE INDEX operations_business_key ON operations (intent, business_key, created_at, operation_key) WHERE business_key IS NOT NULL;

ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'money';
ALTER TABLE approvals ADD COLUMN then_money INTEGER NOT NULL DEFAULT 0;
