DROP INDEX operations_completed;
DROP TABLE audit_events;
DROP TABLE approvals;
