-- Indexes for the operations browser: each filter walks its own index in
-- creation order, so a page costs the same on a journal of a million rows.
CREATE INDEX operations_status_created ON operations (status, created_at, operation_key);
CREATE INDEX operations_intent_created ON operations (intent, created_at, operation_key);
CREATE INDEX operations_agent_created ON operations (agent, created_at, operation_key);
CREATE INDEX operations_target_created ON operations (target_system, created_at, operation_key);
CREATE INDEX operations_review ON operations (needs_review, created_at) WHERE needs_review = 1;
DROP INDEX operations_created;
CREATE INDEX operations_created ON operations (created_at, operation_key);
