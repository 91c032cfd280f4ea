CREATE INDEX operations_target_object ON operations (target_system, target_object_id, created_at) WHERE target_object_id IS NOT NULL;
DROP INDEX operations_object;
DROP INDEX operations_order;
ALTER TABLE operations DROP COLUMN order_id;
