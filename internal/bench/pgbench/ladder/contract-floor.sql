-- A ladder step (BENCHMARKS.md, "One lease table"): the least grant that
-- keeps the exclusive contract, the release left as it is. It keeps the
-- epoch's token, the role's lease (owner_role; the functions stay SECURITY
-- DEFINER with their search_path), the grant rule whole (lock-delay, the
-- queue's promise, no group's row, no reserved owner), the grant's kind
-- (a steal is logged: events are otherwise off) and the columns a later
-- grant, hand-off or claim reads (lock_mode, lock_delay, delay_until,
-- handed_to); it leaves out what only readers show: metadata, renewals,
-- the previous lease. What its grant does not serve (a key without a row,
-- a refusal, a renewal) goes on as the locker's acquire does. Throwaway
-- databases only.
CREATE OR REPLACE FUNCTION distributed_lock_acquire(
    key text, owner text, ttl_us bigint, lease_metadata jsonb DEFAULT NULL,
    event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL, log_grants boolean DEFAULT false,
    lock_delay_us bigint DEFAULT 0)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := distributed_lock_now();
    res distributed_lock_acquire_result;
BEGIN
    UPDATE distributed_lock l SET
        lock_mode = 'exclusive', owner_id = owner, owner_role = session_user,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = ts + distributed_lock_us(ttl_us), ttl = distributed_lock_us(ttl_us), acquired_at = ts,
        released_at = NULL, grant_kind = distributed_lock_grant_kind(l, owner, session_user),
        lock_delay = distributed_lock_us(lock_delay_us), delay_until = NULL, handed_to = NULL
    WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                        WHERE x.lock_key = key AND x.slot = 0 AND distributed_lock_admits(x, 'exclusive', NULL, NULL, ts)
                          AND NOT distributed_lock_reserved(owner)
                        FOR NO KEY UPDATE SKIP LOCKED)
      AND l.slot = 0
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.grant_kind, interval '0', NULL, NULL
    INTO res;
    IF FOUND AND res.outcome <> 'stolen' AND NOT log_grants THEN
        RETURN res;
    END IF;
    IF FOUND THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
        VALUES (ts, key, res.outcome, res.owner_id, res.fence_token, coalesce(event_actor, owner));
        RETURN res;
    END IF;
    RETURN distributed_lock_acquire_otherwise(key, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                              log_grants, lock_delay_us, ts);
END $$;
