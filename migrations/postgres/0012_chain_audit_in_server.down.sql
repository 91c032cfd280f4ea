DROP FUNCTION oncegate_chain_audit(BIGINT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BYTEA[]);
