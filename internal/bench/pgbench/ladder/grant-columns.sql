-- A ladder step (BENCHMARKS.md, "Where a cycle's time goes"): the grant
-- writes only the function floor's six columns; the rule and the result
-- row stay the locker's. What its grant does not serve goes on as the
-- locker's acquire does. Throwaway databases only.
CREATE OR REPLACE FUNCTION distributed_lock_acquire(
    key text, owner text, ttl_us bigint, lease_metadata jsonb DEFAULT NULL,
    event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL, log_grants boolean DEFAULT false,
    lock_delay_us bigint DEFAULT 0)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := clock_timestamp();
    res distributed_lock_acquire_result;
BEGIN
    UPDATE distributed_lock l SET owner_id = owner,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = ts + ttl_us * interval '1 microsecond', ttl = ttl_us * interval '1 microsecond',
        acquired_at = ts, released_at = NULL
    WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                        WHERE x.lock_key = key AND distributed_lock_admits(x, 'exclusive', NULL, NULL, ts)
                        FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.grant_kind, interval '0', NULL, NULL
    INTO res;
    -- The locker's test on the way out, kept.
    IF FOUND AND res.outcome <> 'stolen' AND NOT log_grants THEN
        RETURN res;
    END IF;
    IF FOUND THEN
        RETURN res;
    END IF;
    RETURN distributed_lock_acquire_otherwise(key, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                              log_grants, lock_delay_us, ts);
END $$;
