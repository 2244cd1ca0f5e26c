-- A holder's release beside the others (docs/design.md, "Shared leases and
-- semaphores"). Under contention a release of one of a group's leases
-- hands its permit straight to the next waiter and changes nothing on the
-- group's row, so it takes the row only FOR SHARE: the releases of a
-- semaphore's permits, its waiters' enqueues (12_shared_queue.sql) and its
-- holders' grants then run side by side instead of in one line, each
-- holding the row through its commit.
--
-- Two things need an order all the same:
--   * The group ends with its last lease, and only a release that holds the
--     row for update may end it (distributed_lock_settle). A release that
--     hands its permit on keeps the group running past its commit: the
--     slot it handed is this transaction's until then. One that hands it
--     to nobody locks another live holder's slot FOR SHARE (SKIP LOCKED:
--     one being released or renewed is passed over): that lease cannot be
--     released before this release commits. It picks the youngest grant
--     (the largest token), likeliest to be released last, so that release
--     seldom waits for this one. Finding none, the release is undone (a
--     subtransaction, whose row locks go with it) and made as any end of a
--     lease is, under the row for update (11_shared.sql). (A pin at every
--     release would make the pinned holder's release wait for this one's
--     commit.)
--   * The permit it frees must reach a waiter. An enqueue beside it may
--     queue unseen (its record not yet committed) having found every
--     permit held, this one too. A release that hands its permit on leaves
--     no more room than it found; one that finds nobody to hand it to
--     waits, on the key's queue lock, for the enqueues in flight, and
--     serves whoever they queued: an enqueue after that wait finds the
--     permit free.
--   * Its waits are bounded (lock_timeout, below PostgreSQL's default
--     deadlock_timeout): an enqueue it waits for may in turn wait for a
--     row it holds, and any role may hold the queue lock, an advisory
--     lock. Past the bound it is undone, as when it finds nobody to pin,
--     and the lease ends under the row for update, a wait that holds
--     nothing, which the enqueues beside it (holding the row FOR SHARE)
--     are ordered with.

-- distributed_lock_release_holder releases owner's slot of key granted
-- with token beside the other holders, as the caller's release: logged
-- (with log_release, a "released" event by event_actor, default owner),
-- its permit handed to the waiters queued for it
-- (distributed_lock_hand_off, beside). Returns the slot as it left it, or NULL
-- columns when it did nothing: not such a slot, no running group whose
-- releases hand off, or no other live holder it could lock (the caller
-- then ends the lease under the row for update,
-- distributed_lock_end_holders), as when one of its waits lasted longer
-- than 200 ms. An upgrade's lease at the head of the queue keeps the group
-- running for nobody: the group ends with the other leases, under the row
-- for update (17_convert.sql). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_release_holder(
    key text, owner text, token bigint, log_release boolean, event_actor text)
RETURNS distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT SET lock_timeout = '200ms' AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
    ts timestamptz;
BEGIN
    BEGIN
        -- Whether its releases hand off is judged before the row is taken,
        -- so that no release waits for a row it will not use; the release
        -- is stamped with a now read after that wait.
        ts := distributed_lock_now();
        PERFORM 1 FROM distributed_lock l
        WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) AND l.released_at IS NULL
          AND l.expires_at = distributed_lock_group_end() AND l.wake_until > ts
        FOR SHARE;
        IF NOT FOUND THEN
            RAISE SQLSTATE 'LK001';
        END IF;
        ts := distributed_lock_now();
        UPDATE distributed_lock s SET released_at = ts
        WHERE s.lock_key = key AND s.slot > 0 AND s.owner_id = owner AND s.fence_token = token AND s.released_at IS NULL
          AND s.owner_role = session_user
        RETURNING s.* INTO h;
        IF NOT FOUND THEN
            RAISE SQLSTATE 'LK001'; -- not such a slot: the row's lock goes too
        END IF;
        IF log_release THEN
            INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
            VALUES (ts, key, 'released', owner, token, coalesce(event_actor, owner));
        END IF;
        IF distributed_lock_hand_off(key, ts, beside => true) IS NULL THEN
            -- Handed to nobody: another live holder keeps the group running.
            PERFORM 1 FROM distributed_lock x
            WHERE x.lock_key = key AND x.slot > 0 AND x.slot <> h.slot AND distributed_lock_live(x, ts)
              AND x.fence_token IS DISTINCT FROM (SELECT distributed_lock_head_upgrade(key, ts))
            ORDER BY x.fence_token DESC LIMIT 1 FOR SHARE SKIP LOCKED;
            IF NOT FOUND THEN
                RAISE SQLSTATE 'LK001'; -- perhaps the last lease
            END IF;
            -- Nobody seen to hand it to: wait for the enqueues in flight
            -- beside this release (distributed_lock_queue_lock), then serve
            -- whoever they queued, waiting for a head another transaction
            -- has locked. An enqueue after this sees the permit free.
            IF NOT distributed_lock_queue_lock(key, true, interval '200 milliseconds') THEN
                RAISE SQLSTATE 'LK001';
            END IF;
            -- Served with a now read after that wait: a record queued
            -- during it gets no claim window counted from before it asked.
            PERFORM distributed_lock_hand_off(key, distributed_lock_now());
        END IF;
        RETURN h;
    EXCEPTION WHEN SQLSTATE 'LK001' OR lock_not_available THEN
        -- Undone, its locks too: the caller may take the row for update, and
        -- one keeping it for share would deadlock with another doing the same.
        RETURN NULL;
    END;
END $$;

-- The key's queue lock orders the enqueues beside its lease or running
-- group (they take it shared, before they look at the key again: an
-- enqueue beside an exclusive lease, 14_queue_beside.sql, and one joining
-- a group's queue, 12_shared_queue.sql) with a release that found nobody
-- to hand the key or its permit to (it takes it exclusively, waiting for
-- every enqueue in flight, then hands on to whoever they queued:
-- distributed_lock_pass_on, distributed_lock_release_holder). It is a
-- transaction-level advisory lock, one per key and lock schema (the waiter
-- table's oid; a hash collision only makes one wait for the other), and
-- any role may take an advisory lock: so no call waits for it without a
-- bound. An enqueue beside an exclusive lease does not wait at all (held
-- exclusively, or asked for, it queues under the row lock instead, which
-- orders it with releases as well).

-- distributed_lock_try_queue_lock takes key's queue lock shared if it is
-- free of exclusive holders and requests now, and says whether it did.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_try_queue_lock(key text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN pg_try_advisory_xact_lock_shared('distributed_lock_waiter'::regclass::oid::int, hashtext(key));
END $$;

-- distributed_lock_queue_lock takes key's queue lock (exclusively, or
-- shared), waiting at most wait for it: false past that, without it. The
-- caller's lock_timeout is kept. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_queue_lock(key text, exclusive boolean, wait interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    caller_lock_timeout text := current_setting('lock_timeout');
    got boolean := true;
BEGIN
    PERFORM set_config('lock_timeout', ceil(extract(epoch FROM wait) * 1000) || 'ms', true);
    BEGIN
        IF exclusive THEN
            PERFORM pg_advisory_xact_lock('distributed_lock_waiter'::regclass::oid::int, hashtext(key));
        ELSE
            PERFORM pg_advisory_xact_lock_shared('distributed_lock_waiter'::regclass::oid::int, hashtext(key));
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        got := false;
    END;
    PERFORM set_config('lock_timeout', caller_lock_timeout, true);
    RETURN got;
END $$;

-- distributed_lock_lock_to_serve locks waiter record id to serve it, while
-- it still waits, live at ts, for a lease of the kind of row r's group.
-- A release serves a record under its row lock FOR UPDATE (and consumes
-- it); whatever else locks a record takes less: its process's heartbeat,
-- its own check, a release that looks at the head of the queue (FOR NO
-- KEY UPDATE). So a record locked FOR UPDATE (or being removed) is being
-- served by another release beside this one, and is passed over at once,
-- and only such a record: one locked otherwise commits in a moment and is
-- waited for, as passing it over would serve the waiter behind it first.
-- FOR KEY SHARE conflicts only with FOR UPDATE, so a lock of it that would
-- be granted at once says which (it is undone at once: kept, two releases
-- waiting for the same record would each wait for the other's). The wait
-- is bounded (lock_timeout, within a subtransaction), for a transaction
-- that might in turn wait for this one: past it, the record is passed
-- over, as is one that is gone or waits for another kind. No role but the
-- owner may lock a record. Returns the record locked, or NULL columns.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_lock_to_serve(id bigint, r distributed_lock, ts timestamptz)
RETURNS distributed_lock_waiter
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT SET lock_timeout = '500ms' AS $$
DECLARE
    w distributed_lock_waiter;
    served boolean := true;
BEGIN
    -- Without waiting first: the subtransactions below only when needed.
    SELECT * INTO w FROM distributed_lock_waiter x
    WHERE x.waiter_id = id AND x.seen_until > ts AND x.ttl IS NOT NULL AND x.group_id IS NULL
      AND distributed_lock_group_of(r, x.lock_mode, x.permits)
    FOR UPDATE SKIP LOCKED;
    IF FOUND OR NOT EXISTS (SELECT 1 FROM distributed_lock_waiter x WHERE x.waiter_id = id AND x.seen_until > ts) THEN
        RETURN w;
    END IF;
    BEGIN
        PERFORM 1 FROM distributed_lock_waiter x WHERE x.waiter_id = id FOR KEY SHARE SKIP LOCKED;
        IF FOUND THEN
            RAISE SQLSTATE 'LK001';
        END IF;
    EXCEPTION WHEN SQLSTATE 'LK001' THEN
        served := false;
    END;
    IF served THEN
        RETURN w;
    END IF;
    BEGIN
        SELECT * INTO w FROM distributed_lock_waiter x
        WHERE x.waiter_id = id AND x.seen_until > ts AND x.ttl IS NOT NULL AND x.group_id IS NULL
          AND distributed_lock_group_of(r, x.lock_mode, x.permits)
        FOR UPDATE;
    EXCEPTION WHEN lock_not_available THEN
        w := NULL;
    END;
    RETURN w;
END $$;

-- distributed_lock_serve_beside hands the room a release beside others
-- made (the group's row held FOR SHARE) to the waiters queued for it at
-- ts, in turn: the first live record no other release is serving
-- (distributed_lock_lock_to_serve), while it waits for a lease of the
-- group's kind and no record ahead of it waits for anything else (a
-- queued writer is not overtaken), until the group has no room. Returns
-- the first waiter it served, or NULL. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_serve_beside(key text, ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    r distributed_lock;
    w distributed_lock_waiter%ROWTYPE;
    candidate bigint;
    after bigint;
    first bigint;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    LOOP
        -- A release frees one permit: once a semaphore is full again, the
        -- next record would be locked only to find no slot for it.
        EXIT WHEN first IS NOT NULL AND r.permits IS NOT NULL
                  AND distributed_lock_live_holders(key, ts) >= r.permits;
        -- Only a record it serves is locked: one of another kind, left
        -- locked, could be the head a release after it waits for
        -- (distributed_lock_release_holder) while this one waits for that.
        -- One record at a time, by id: most often the first is served.
        w := NULL;
        after := 0;
        LOOP
            SELECT x.waiter_id INTO candidate FROM distributed_lock_waiter x
            WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL AND x.waiter_id > after
              AND x.group_id IS NULL AND distributed_lock_group_of(r, x.lock_mode, x.permits)
              AND NOT EXISTS (SELECT 1 FROM distributed_lock_waiter y
                              WHERE y.lock_key = key AND y.seen_until > ts AND y.ttl IS NOT NULL
                                AND y.waiter_id < x.waiter_id
                                AND (y.group_id IS NOT NULL OR NOT distributed_lock_group_of(r, y.lock_mode, y.permits)))
            ORDER BY x.waiter_id LIMIT 1;
            EXIT WHEN NOT FOUND;
            -- Passed over when another release serves it.
            w := distributed_lock_lock_to_serve(candidate, r, ts);
            EXIT WHEN w.waiter_id IS NOT NULL;
            after := candidate;
        END LOOP;
        EXIT WHEN w.waiter_id IS NULL;
        -- Granted with a now read after the record's lock: the record may
        -- have queued after ts, and locking it may have waited.
        EXIT WHEN NOT distributed_lock_grant_holder_waiter(w, distributed_lock_now(), false);
        first := coalesce(first, w.waiter_id);
    END LOOP;
    RETURN first;
END $$;
