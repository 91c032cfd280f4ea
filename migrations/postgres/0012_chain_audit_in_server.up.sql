-- A batch's audit events are chained by the journal server, in one call:
-- the chain's lock, the read of its head, each event's hash and the
-- INSERT, instead of a round trip for each. The lock is then held for
-- that call and the COMMIT; gateways sharing the journal wait for each
-- other's appends that much less.
--
-- The gateway sends each event's columns and its canonical form without
-- the leading {"id":N (rests), which only the head tells; an event's hash
-- is sha256(prev_hash || '{"id":' || id || rest), the same bytes the
-- gateway hashes when it verifies the chain. The lock is taken first and
-- the head read after it, in a statement of its own: a volatile function
-- reads each statement with a new snapshot, so the head is the one the
-- previous holder committed.
CREATE FUNCTION oncegate_chain_audit(
    lock_key       BIGINT,
    ats            TEXT[],
    actor_kinds    TEXT[],
    actors         TEXT[],
    events         TEXT[],
    operation_keys TEXT[],
    details        TEXT[],
    rests          BYTEA[]
) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    head_id BIGINT;
    head    TEXT;
    ids     BIGINT[] := '{}';
    prevs   TEXT[] := '{}';
    hashes  TEXT[] := '{}';
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    SELECT id, hash INTO head_id, head FROM audit_events ORDER BY id DESC LIMIT 1;
    IF NOT FOUND THEN
        head_id := 0;
        head := repeat('0', 64);
    END IF;
    FOR i IN 1 .. coalesce(array_length(ats, 1), 0) LOOP
        head_id := head_id + 1;
        ids := ids || head_id;
        prevs := prevs || head;
        head := encode(sha256(convert_to(head || '{"id":' || head_id, 'UTF8') || rests[i]), 'hex');
        hashes := hashes || head;
    END LOOP;
    INSERT INTO audit_events (id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash)
    SELECT e.id, e.at, e.actor_kind, e.actor, e.event, NULLIF(e.operation_key, ''), e.detail, e.prev_hash, e.hash
    FROM unnest(ids, ats, actor_kinds, actors, events, operation_keys, details, prevs, hashes)
        AS e (id, at, actor_kind, actor, event, operation_key, detail, prev_hash, hash);
END
$$;
