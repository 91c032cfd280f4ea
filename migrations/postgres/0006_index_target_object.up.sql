-- An object at a target leads back to the operation that made it: a
-- refund's approval shows the charge it refunds.
CREATE INDEX operations_target_object ON operations (target_system, target_object_id, created_at) WHERE target_object_id IS NOT NULL;
