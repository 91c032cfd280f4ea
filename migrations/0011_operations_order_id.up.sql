-- The operations browser finds an operation by what people have at hand:
-- the order it was for (its request's top-level order_id, recorded apart
-- so it is indexed), the object it made at the target (INV-…, a payment
-- id, a Ref_Key), or its key. Each look-up walks its own index. The index
-- by object alone also serves the look-up by target and object (a
-- refund's charge: object ids do not repeat), which had one of its own:
-- a new operation's writes touch no more indexes than before but the
-- order's.
ALTER TABLE operations ADD COLUMN order_id TEXT;

UPDATE operations SET order_id = json_extract(payload, '$.order_id')
WHERE json_valid(payload) AND json_type(payload, '$.order_id') = 'text';

CREATE INDEX operations_order ON operations (order_id, created_at, operation_key) WHERE order_id IS NOT NULL;
CREATE INDEX operations_object ON operations (target_object_id, created_at, operation_key) WHERE target_object_id IS NOT NULL;
DROP INDEX operations_target_object;
