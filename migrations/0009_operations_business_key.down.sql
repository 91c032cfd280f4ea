ALTER TABLE approvals DROP COLUMN then_money;
ALTER TABLE approvals DROP COLUMN kind;
DROP INDEX operations_business_key;
ALTER TABLE operations DROP COLUMN duplicate_at;
ALTER TABLE operations DROP COLUMN duplicate_of;
ALTER TABLE operations DROP COLUMN business_key;
