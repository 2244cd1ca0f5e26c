-- A waiter queueing beside the others (docs/design.md, "A queue beside its
-- releases"). A key under contention sees, for every hand-off, one release
-- and one more enqueue (the waiter served last time, queueing again). An
-- enqueue that takes the key's row for update holds it through its commit,
-- so enqueues and releases would stand in one line, each waiting for the
-- one before to reach the disk. Yet an enqueue into the queue of a lease
-- another owner holds changes nothing on the key's row: it only adds its
-- record. Such an enqueue takes no lock on the row at all.
--
-- The release that frees the key must still reach it. The enqueue takes the
-- key's queue lock shared (distributed_lock_try_queue_lock) and only then
-- reads the row again: a release committed before that is seen, and the
-- call answers 'busy' (the caller enqueues again, now under the row lock);
-- a release that commits after it and finds nobody to hand the key to
-- waits for the queue lock (distributed_lock_pass_on), that is for every
-- enqueue in flight, then hands the key to whoever they queued. When the
-- queue lock is not to be had at once (a release waits for it, or holds
-- it), the enqueue queues under the row lock instead. A lease that lapses
-- unreleased is taken over at the waiters' checks, which they make when it
-- ends, as for any waiter.

-- distributed_lock_lease_joinable: whether owner may queue for r's key
-- beside the other waiters (distributed_lock_enqueue_beside) at ts: r is an
-- exclusive lease another owner holds, whose releases keep handing off
-- (wake_until) for longer than a record queued at ts lives (seen_for_us),
-- and owner has no live record on the key to take over. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_lease_joinable(
    r distributed_lock, owner text, seen_for_us bigint, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN coalesce(NOT distributed_lock_is_group(r) AND NOT distributed_lock_open(r, ts) AND r.owner_id <> owner
                    AND r.wake_until >= ts + distributed_lock_us(seen_for_us), false)
        AND NOT EXISTS (SELECT 1 FROM distributed_lock_waiter x
                        WHERE x.lock_key = r.lock_key AND x.owner_id = owner AND x.seen_until > ts);
END $$;

-- distributed_lock_lock_to_queue takes key's row for update, as an enqueue
-- that cannot queue beside the others does, and returns it (every column
-- NULL when the key has no row), with beside false. When the row is being
-- changed (locked by another transaction), it first waits for that change
-- beside the other waiters, FOR SHARE, and looks again: if owner may now
-- queue beside the others (the change was an enqueue that made the
-- queue's releases hand off) and the key's queue lock is to be had at once
-- (distributed_lock_try_queue_lock, let go again: the caller takes it), it
-- returns beside true, holding nothing. Whether it may is the rule of the
-- lease it waits for (mode, as a waiter record's: NULL for the key
-- itself): the key's (distributed_lock_lease_joinable), or for a shared lease or one of n
-- permits, a running group's of that kind
-- (distributed_lock_queue_joinable). Many waiters that come to a key at
-- once then wait for the first one's commit together, instead of taking
-- the row in turn; behind a running group, whose releases and joining
-- enqueues hold the row for share one after another, a wait for update
-- could last as long as they keep coming. Each wait is undone once over
-- (a subtransaction), its lock with it; the third try waits for the row
-- lock as any other, as does every try while the queue lock is held or
-- asked for exclusively. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_lock_to_queue(
    key text, owner text, seen_for_us bigint, mode text, n integer, OUT r distributed_lock, OUT beside boolean)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    ts timestamptz;
BEGIN
    beside := false;
    FOR attempt IN 1..3 LOOP
        BEGIN
            IF attempt < 3 THEN
                SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE NOWAIT;
            ELSE
                SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
            END IF;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            BEGIN
                SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR SHARE;
                RAISE SQLSTATE 'LK002';
            EXCEPTION WHEN SQLSTATE 'LK002' THEN
                NULL;
            END;
        END;
        -- Judged with a now read after that wait.
        ts := distributed_lock_now();
        IF (CASE WHEN distributed_lock_waits_for_group(mode) THEN distributed_lock_queue_joinable(r, n, seen_for_us, ts)
                 ELSE distributed_lock_lease_joinable(r, owner, seen_for_us, ts) END) THEN
            BEGIN
                IF distributed_lock_try_queue_lock(key) THEN
                    RAISE SQLSTATE 'LK002';
                END IF;
            EXCEPTION WHEN SQLSTATE 'LK002' THEN
                r := NULL;
                beside := true;
                RETURN;
            END;
        END IF;
    END LOOP;
END $$;

-- distributed_lock_enqueue_beside is distributed_lock_enqueue's first try
-- (same arguments, channel already checked; same answer): it queues owner
-- beside the other waiters when key's lease is joinable
-- (distributed_lock_lease_joinable), without locking the key's row (see
-- above). Outcome
-- 'queued', or 'deadlock' (the record removed again, as the enqueue's), or
-- 'busy' (nothing done) when the key changed hands before the queue lock
-- was taken; NULL (nothing done) when the key is not joinable or the
-- queue lock was not to be had at once: the caller queues under the row
-- lock. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue_beside(
    key text, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint, lease_metadata jsonb,
    event_actor text, log_grants boolean, lock_delay_us bigint, channel text,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    ts timestamptz := distributed_lock_now();
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    IF NOT distributed_lock_lease_joinable(r, owner, seen_for_us, ts) THEN
        RETURN;
    END IF;
    IF NOT distributed_lock_try_queue_lock(key) THEN
        RETURN;
    END IF;
    lock_key := key;
    -- Read again, for a release committed before the queue lock (which is
    -- taken without waiting: the same now judges it).
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    IF NOT distributed_lock_lease_joinable(r, owner, seen_for_us, ts) THEN
        -- Released (or lapsed) meanwhile. Taking the row now, holding the
        -- queue lock, could deadlock with a release waiting for it.
        outcome := 'busy';
        RETURN;
    END IF;
    waiter_id := distributed_lock_add_waiter(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata, event_actor,
                                             log_grants, lock_delay_us, channel, NULL, NULL, ts);
    -- The key is held: a refused record leaves nothing to hand on.
    cycle := distributed_lock_refuse_deadlock(owner, ARRAY[waiter_id], ts, false);
    owner_id := r.owner_id; fence_token := r.fence_token; expires_at := r.expires_at; ttl := r.ttl;
    remaining := r.expires_at - ts; db_now := ts;
    outcome := CASE WHEN cycle IS NULL THEN 'queued' ELSE 'deadlock' END;
    queue_position := distributed_lock_queue_position(key, waiter_id, ts);
    queue_length := distributed_lock_queue_length(key, ts);
    IF cycle IS NOT NULL THEN
        waiter_id := NULL;
    END IF;
END $$;
