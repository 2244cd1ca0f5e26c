-- Converting a lease between modes (docs/design.md, "Downgrade and
-- upgrade"). A downgrade turns an exclusive lease into the first shared
-- lease of a group, in one transaction under the key's row lock, so no
-- writer can take the key between the two. An upgrade is a wait for the
-- key itself by a holder of its group: a waiter record like any other,
-- placed as any arrival, which names the holder's lease (upgrade_from).
-- The group then ends when every lease but that one has ended
-- (distributed_lock_settle asks distributed_lock_upgrade_due), the lease
-- ends with it, and the key is handed to the record as any hand-off. Its
-- wait is a wait for the other holders, which the deadlock search
-- (09_deadlock.sql) already sees: a waiter waits for every live lease of
-- the key but its owner's, so two holders that both upgrade close a cycle.
-- Every conversion gives a new lease, with a new token: tokens keep rising.

-- distributed_lock_head_upgrade: the token of the lease that the head of
-- key's queue gives up for the key, when that head is an upgrade; NULL
-- otherwise. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_head_upgrade(key text, ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN (SELECT x.upgrade_from FROM distributed_lock_waiter x
            WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
            ORDER BY x.waiter_id LIMIT 1);
END $$;

-- distributed_lock_upgrade_due: whether key's group ends for an upgrade
-- at ts: the head of its queue is one, and its lease is the group's only
-- live one. That lease then ends here (released, an 'upgraded' event by
-- the record's actor), and distributed_lock_settle, which asks (holding the
-- key's row FOR NO KEY UPDATE), ends the group and hands the key to the
-- head in the same transaction. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_upgrade_due(key text, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    w distributed_lock_waiter%ROWTYPE;
    h distributed_lock;
BEGIN
    SELECT * INTO w FROM distributed_lock_waiter x
    WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
    ORDER BY x.waiter_id LIMIT 1;
    IF w.upgrade_from IS NULL OR EXISTS (
        SELECT 1 FROM distributed_lock s
        WHERE s.lock_key = key AND s.slot > 0 AND distributed_lock_live(s, ts) AND s.fence_token <> w.upgrade_from) THEN
        RETURN false;
    END IF;
    UPDATE distributed_lock s SET released_at = ts
    WHERE s.lock_key = key AND s.slot > 0 AND s.fence_token = w.upgrade_from AND distributed_lock_live(s, ts)
    RETURNING s.* INTO h;
    IF FOUND THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, caller_role, detail)
        VALUES (ts, key, 'upgraded', h.owner_id, h.fence_token, coalesce(w.actor, w.owner_id), w.owner_role,
                jsonb_strip_nulls(jsonb_build_object('mode', h.lock_mode, 'permits', h.permits, 'slot', h.slot,
                                                     'waiter_id', w.waiter_id)));
    END IF;
    RETURN true;
END $$;

-- distributed_lock_upgrade_edges: the waits of frontier's owners (other
-- than start) on a key that start holds a live lease of, each an edge to
-- start, as distributed_lock_wait_cycle's steps are (next: start). The
-- search reads each key's queue once, from the first record it meets, and
-- reaches the key's holders from there, all but that record's owner: when
-- that owner is start, waiting on a key it holds (an upgrade), a later
-- waiter on the key still waits for it, and closes the cycle. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_upgrade_edges(frontier text[], start text, ts timestamptz,
    OUT waiter text, OUT lock_key text, OUT waiter_id bigint, OUT next text)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    SELECT w.owner_id::text, w.lock_key::text, w.waiter_id, start
    FROM distributed_lock_waiter w
    WHERE w.owner_id = ANY (frontier) AND w.owner_id <> start AND distributed_lock_waits(w, ts)
      AND EXISTS (SELECT 1 FROM distributed_lock l
                  WHERE l.lock_key = w.lock_key AND l.owner_id = start AND distributed_lock_live(l, ts));
END $$;

-- distributed_lock_downgrade: owner's running exclusive lease of key,
-- granted with token, becomes a shared lease: in one transaction under the
-- key's row lock the lease is released, the key's row becomes a shared
-- group's (11_shared.sql) and owner its first holder, for ttl_us from the
-- database's now, with a new token (above the exclusive one); then the
-- readers at the head of the queue are granted beside it, up to the first
-- waiter for another kind of lease. A 'downgraded' event (by event_actor,
-- default owner) names both tokens. One row: the new lease, outcome
-- 'downgraded', or 'not_held' (no such running exclusive lease of the
-- caller's role), the lease untouched.
CREATE OR REPLACE FUNCTION distributed_lock_downgrade(
    key text, owner text, token bigint, ttl_us bigint, event_actor text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    h distributed_lock;
    ts timestamptz;
BEGIN
    lock_key := key;
    outcome := 'not_held';
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF r.lock_key IS NULL OR distributed_lock_is_group(r) OR r.fence_token <> token
       OR NOT distributed_lock_held(r, owner, session_user, ts) THEN
        RETURN;
    END IF;
    -- Released before it is its group's: a clean release, which starts no
    -- lock-delay and is stolen from nobody.
    UPDATE distributed_lock l SET released_at = ts WHERE l.lock_key = key AND l.slot = 0 RETURNING l.* INTO r;
    PERFORM distributed_lock_form_group(r, 'shared', NULL, ts, ttl_us, coalesce(event_actor, owner), session_user);
    h := distributed_lock_take_slot(key, owner, session_user, ttl_us, NULL, r.metadata, ts);
    IF h.slot IS NULL OR h.slot < 0 THEN
        RAISE EXCEPTION 'distributed_lock_downgrade: no slot for % on %', owner, key; -- the row is this call's
    END IF;
    INSERT INTO distributed_lock_event
        (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    VALUES (ts, key, 'downgraded', owner, h.fence_token, coalesce(event_actor, owner), owner, token,
            jsonb_build_object('mode', 'shared', 'slot', h.slot));
    IF coalesce(r.wake_until > ts, false) THEN
        PERFORM distributed_lock_hand_off(key, ts);
    END IF;
    owner_id := h.owner_id; fence_token := h.fence_token; expires_at := h.expires_at; ttl := h.ttl;
    outcome := 'downgraded';
END $$;

-- distributed_lock_upgrade: owner's running shared lease or permit of key,
-- granted with token, is to become the key's exclusive lease. The caller
-- queues for the key as any waiter (distributed_lock_enqueue's arguments
-- and answer), its record naming that lease, and keeps the lease while it
-- waits. When its record is the head and its lease the group's only live
-- one, the group ends, the lease with it (an 'upgraded' event), and the
-- key is the caller's: at once here (outcome 'acquired', a new token,
-- claimed), or later by the hand-off that the other holders' ends make
-- (the waiter's check and claim take it, as any waiter's). Without wait a
-- call that is not granted at once leaves no record: outcome 'held' (other
-- live holders) or 'queued' (waiters ahead). With wait it stays queued
-- ('queued', waiter_id), unless its wait closes a cycle ('deadlock', as
-- the enqueue's: two holders that both upgrade). 'not_held': owner holds
-- no such lease (another role's is not the caller's); nothing changes.
CREATE OR REPLACE FUNCTION distributed_lock_upgrade(
    key text, owner text, token bigint, ttl_us bigint, claim_us bigint, seen_for_us bigint,
    wait boolean DEFAULT false, event_actor text DEFAULT NULL, wake_channel text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz;
    id bigint;
    channel distributed_lock_channel := distributed_lock_upgrade.wake_channel;
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    lock_key := key;
    outcome := 'not_held';
    PERFORM 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM distributed_lock s WHERE s.lock_key = key AND s.slot > 0
                                AND s.fence_token = token AND distributed_lock_held(s, owner, session_user, ts)) THEN
        RETURN;
    END IF;
    -- Its grant is logged whatever the caller's habit: the log shows the
    -- upgrade's lease ended and the key granted in one transaction.
    id := coalesce(
        distributed_lock_take_over_waiter(key, owner, ttl_us, claim_us, seen_for_us, NULL, event_actor, true, 0, channel,
                                          NULL, NULL, ts),
        distributed_lock_add_waiter(key, owner, ttl_us, claim_us, seen_for_us, NULL, event_actor, true, 0, channel,
                                    NULL, NULL, ts));
    UPDATE distributed_lock_waiter w SET upgrade_from = token WHERE w.waiter_id = id;
    -- The group ended for it, the key handed to it if it is the head.
    IF distributed_lock_settle(key, ts) THEN
        PERFORM distributed_lock_hand_off(key, ts);
    END IF;
    -- Handed to the caller's record now: it is here, and claims it.
    UPDATE distributed_lock l SET expires_at = ts + l.ttl, renewed_at = ts, renew_count = l.renew_count + 1
    WHERE l.lock_key = key AND l.slot = 0 AND l.handed_to = id AND l.released_at IS NULL
    RETURNING l.owner_id, l.fence_token, l.expires_at, l.ttl, l.grant_kind, interval '0', ts
    INTO owner_id, fence_token, expires_at, ttl, outcome, remaining, db_now;
    IF FOUND THEN
        RETURN;
    END IF;
    IF NOT wait THEN
        outcome := CASE WHEN distributed_lock_queue_position(key, id, ts) > 1 THEN 'queued' ELSE 'held' END;
        DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = id;
        SELECT l.owner_id, l.fence_token, l.ttl, distributed_lock_queue_length(key, ts), ts
        INTO owner_id, fence_token, ttl, queue_length, db_now
        FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
        RETURN;
    END IF;
    PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
    cycle := distributed_lock_refuse_deadlock(owner, ARRAY[id], ts, false);
    SELECT l.owner_id, l.fence_token, distributed_lock_lease_end(l), l.ttl,
           CASE WHEN cycle IS NULL THEN 'queued' ELSE 'deadlock' END, distributed_lock_lease_end(l) - ts, ts,
           CASE WHEN cycle IS NULL THEN id END,
           distributed_lock_queue_position(key, id, ts), distributed_lock_queue_length(key, ts)
    INTO owner_id, fence_token, expires_at, ttl, outcome, remaining, db_now, waiter_id, queue_position, queue_length
    FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
END $$;
