DROP INDEX operations_created;
CREATE INDEX operations_created ON operations (created_at);
DROP INDEX operations_review;
DROP INDEX operations_target_created;
DROP INDEX operations_agent_created;
DROP INDEX operations_intent_created;
DROP INDEX operations_status_created;
