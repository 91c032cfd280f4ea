DROP INDEX operations_object;
DROP INDEX operations_order;
ALTER TABLE operations DROP COLUMN order_id;
