-- Waiting for a shared lease or a permit: the fair queue (05_queue.sql)
-- serves them too. A waiter for one queues with the mode (and permits) it
-- wants; the queue stays one line in arrival order across modes, so a
-- writer queued behind readers is not overtaken by readers who come later
-- (a shared or permit try is refused as 'queued' while anyone waits), and
-- readers queued behind a writer wait for it.
--
-- The head of the queue is served whenever the key may have room for it:
-- when a release or force ends a holder's lease (a freed permit), when a
-- group ends or an exclusive lease is released (the key passed on), and at
-- a waiter's check. A head waiting for a shared lease or a permit is handed
-- a slot (distributed_lock_grant_holder_waiter), and so is each next waiter
-- of the same kind, as long as the group has room: consecutive readers at
-- the head are granted together, and freed permits go to the waiters in
-- turn. A head waiting for the key exclusively stops the serving until the
-- group has ended.

-- distributed_lock_grant_holder_waiter hands w (a waiter for a shared
-- lease or a permit, its record locked by the caller, who holds the key's
-- row) a slot of the key's running group: the lease first runs until
-- least(claim_window, ttl) from ts, like any hand-off, and the slot names
-- the waiter (handed_to) until its holder's claim. The record is consumed,
-- the grant logged as the waiter's own would be (stole: the group was
-- formed over a lease that ran out unreleased), the hand-off announced
-- (07_wake.sql) and the transaction made durable. Returns false when the
-- group has no room for it. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_grant_holder_waiter(
    w distributed_lock_waiter, ts timestamptz, stole boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
    over distributed_lock;
    kind text;
BEGIN
    IF stole THEN
        -- The group formed over a lease that ran out: its row names it.
        SELECT * INTO over FROM distributed_lock l WHERE l.lock_key = w.lock_key AND l.slot = 0;
        over.owner_id := over.previous_owner; over.fence_token := over.previous_token; over.released_at := NULL;
    END IF;
    h := distributed_lock_take_slot(w.lock_key, w.owner_id, w.owner_role, (extract(epoch FROM w.ttl) * 1000000)::bigint,
                                    w.permits, w.metadata, ts, over);
    IF h.slot IS NULL OR h.slot < 0 THEN
        RETURN false;
    END IF;
    -- The hand-off's claim window, and the waiter it names.
    UPDATE distributed_lock s SET expires_at = ts + least(w.claim_window, w.ttl), handed_to = w.waiter_id
    WHERE s.lock_key = h.lock_key AND s.slot = h.slot
    RETURNING s.* INTO h;
    DELETE FROM distributed_lock_waiter x WHERE x.waiter_id = w.waiter_id;
    kind := h.grant_kind;
    IF kind = 'stolen' OR w.log_grants THEN
        INSERT INTO distributed_lock_event
            (occurred_at, lock_key, kind, owner_id, fence_token, actor, caller_role, previous_owner, previous_token,
             detail)
        VALUES (ts, w.lock_key, kind, h.owner_id, h.fence_token, coalesce(w.actor, w.owner_id), w.owner_role,
                CASE WHEN kind = 'stolen' THEN h.previous_owner END,
                CASE WHEN kind = 'stolen' THEN h.previous_token END,
                jsonb_strip_nulls(jsonb_build_object('mode', w.lock_mode, 'permits', w.permits, 'slot', h.slot,
                    'waited_ms', (extract(epoch FROM ts - w.waiting_since) * 1000)::bigint, 'waiter_id', w.waiter_id)));
    END IF;
    PERFORM set_config('synchronous_commit', 'on', true);
    PERFORM distributed_lock_announce(w, ts, json_build_object(
        'schema', distributed_lock_schema(), 'key', w.lock_key, 'waiter', w.waiter_id, 'owner', h.owner_id,
        'token', h.fence_token, 'acquired_us', (extract(epoch FROM ts) * 1000000)::bigint,
        'expires_us', (extract(epoch FROM h.expires_at) * 1000000)::bigint,
        'ttl_us', (extract(epoch FROM h.ttl) * 1000000)::bigint, 'kind', kind, 'mode', w.lock_mode)::text);
    RETURN true;
END $$;

-- distributed_lock_serve_holders serves the head of key's queue (whose
-- row the caller holds FOR NO KEY UPDATE) while it waits for a shared lease
-- or a permit and the key has room for it: a key free or lapsed (past its
-- lock-delay) becomes the group of the head's mode; a running group of the
-- head's mode and permits hands it a slot if one is free. It stops at a
-- head that waits for the key exclusively, or for another kind of group,
-- or for which there is no room. Returns the first waiter it served, or
-- NULL. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_serve_holders(key text, ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    r distributed_lock;
    w distributed_lock_waiter%ROWTYPE;
    stole boolean;
    first bigint;
BEGIN
    LOOP
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
        -- FOR NO KEY UPDATE: it may stop here without serving the head,
        -- and a release beside this call passes over only a record locked
        -- FOR UPDATE (distributed_lock_lock_to_serve).
        SELECT * INTO w FROM distributed_lock_waiter x
        WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
        ORDER BY x.waiter_id LIMIT 1
        FOR NO KEY UPDATE;
        EXIT WHEN NOT FOUND;
        IF w.group_id IS NOT NULL THEN
            -- A set's record: the set is served all its keys or none.
            RETURN coalesce(first, distributed_lock_hand_off_group(key, w, ts));
        END IF;
        EXIT WHEN NOT distributed_lock_waits_for_group(w.lock_mode);
        EXIT WHEN NOT distributed_lock_admits(r, w.lock_mode, w.permits, w.waiter_id, ts);
        stole := false;
        IF distributed_lock_open(r, ts) THEN
            stole := distributed_lock_form_group(r, w.lock_mode, w.permits, ts,
                                                 (extract(epoch FROM w.ttl) * 1000000)::bigint,
                                                 coalesce(w.actor, w.owner_id), w.owner_role);
        END IF;
        EXIT WHEN NOT distributed_lock_grant_holder_waiter(w, ts, stole);
        first := coalesce(first, w.waiter_id);
    END LOOP;
    RETURN first;
END $$;

-- distributed_lock_queue_joinable: whether row r is a running group of the
-- kind a waiter for permits n (NULL: a shared lease) asks for, whose
-- releases keep handing off (wake_until) for longer than a record queued at
-- ts lives (seen_for_us): such a waiter queues beside others, locking the
-- row only FOR SHARE (distributed_lock_enqueue_shared). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_queue_joinable(
    r distributed_lock, n integer, seen_for_us bigint, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    -- PL/pgSQL, whose expression keeps its plan: an SQL body with a pinned
    -- path is planned at every call, and every permit waiter calls it twice.
    RETURN coalesce(distributed_lock_runs_group(r, n) AND r.wake_until >= ts + distributed_lock_us(seen_for_us), false);
END $$;

-- distributed_lock_head_has_room: whether the head of key's queue waits
-- for a lease of key's running group (of permits n), and the group has
-- a permit free at ts: only then is there anyone to serve. Read without
-- locking: a true answer is acted on under locks. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_head_has_room(key text, n integer, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN coalesce((SELECT distributed_lock_asks_for(x, n) AND x.group_id IS NULL
                     FROM distributed_lock_waiter x
                     WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
                     ORDER BY x.waiter_id LIMIT 1), false)
        AND (n IS NULL OR distributed_lock_live_holders(key, ts) < n);
END $$;

-- distributed_lock_enqueue_shared is distributed_lock_enqueue for a shared
-- lease (permits NULL) or one of permits permits: one transaction that
-- takes the key's row for update (waiting for a release or grant in
-- flight, which orders it with them), then either grants it at once, as
-- distributed_lock_acquire_shared would, or queues owner with the lease it
-- wants, and serves the queue's head if the key has room for it. A waiter
-- that joins the queue of a running group of its kind whose releases keep
-- handing off (distributed_lock_queue_joinable) takes the row FOR SHARE
-- instead, beside the other waiters' enqueues, the holders' grants and the
-- releases that hand their permit straight on (13_shared_release.sql): it
-- changes nothing on the row. It takes the key's queue lock shared
-- (distributed_lock_try_queue_lock) before it looks for room, which orders
-- it with a release beside it that found nobody to hand its permit to;
-- the row changed between its look and its lock is answered 'busy'. With
-- lazy_commit a call that queues commits without waiting for the disk
-- (distributed_lock_lazily); one that grants is durable. Same
-- arguments and answer as distributed_lock_enqueue (without a lock-delay
-- or deadlock search: holders of a group wait for no one), and outcome
-- 'conflict' (nothing queued) when holders of another mode, or of a
-- semaphore of other permits, hold the key. An owner's live record on the
-- key is taken over, as there; a slot handed to it in this call is its
-- grant.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue_shared(
    key text, owner text, ttl_us bigint, permits integer, claim_us bigint, seen_for_us bigint,
    lease_metadata jsonb DEFAULT NULL, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL,
    log_grants boolean DEFAULT false, wake_channel text DEFAULT NULL, lazy_commit boolean DEFAULT false,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    ts timestamptz;
    n integer := permits;
    -- The domain checks it here, before anything is granted or queued.
    channel distributed_lock_channel := distributed_lock_enqueue_shared.wake_channel;
    joining boolean;
    locked record;
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    lock_key := key;
    SELECT * INTO locked FROM distributed_lock_lock_to_join(key, owner, n, seen_for_us) j;
    r := locked.r; joining := locked.joining; ts := locked.ts;
    IF joining AND r.lock_key IS NULL THEN
        -- Changed meanwhile (a group's end, say): the caller enqueues again.
        outcome := 'busy';
        RETURN;
    END IF;
    -- Otherwise the row first, for update: the attempt below then never
    -- takes it for share and asks for more (two such calls would deadlock).
    FOR attempt IN 1..3 LOOP
        -- Joining a queue ahead of it, it would only be told 'queued'.
        EXIT WHEN joining AND distributed_lock_queued_ahead(r, owner, ts);
        IF NOT joining THEN
            SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
            -- Judged again, with a now read after the wait for the row.
            ts := distributed_lock_now();
        END IF;
        SELECT a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining
        INTO owner_id, fence_token, expires_at, ttl, outcome, remaining
        FROM distributed_lock_acquire_shared(key, owner, ttl_us, n, lease_metadata, event_actor, event_detail,
                                             log_grants) a;
        IF outcome IN ('acquired', 'stolen', 'renewed', 'conflict') THEN
            db_now := ts;
            RETURN;
        END IF;
        -- A row made meanwhile by another's first grant, perhaps held for share by the
        -- attempt: asking for it for update could deadlock. Answered 'busy' below.
        EXIT WHEN r.lock_key IS NOT NULL OR EXISTS (SELECT 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0);
    END LOOP;
    IF r.lock_key IS NULL THEN
        owner_id := NULL; fence_token := NULL; expires_at := NULL; ttl := NULL; remaining := NULL;
        outcome := 'busy';
        RETURN;
    END IF;
    SELECT * INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waiter_id, db_now,
                  queue_position, queue_length, delay_until, cycle
    FROM distributed_lock_queue_for_holder(key, owner, ttl_us, n, claim_us, seen_for_us, lease_metadata, event_actor,
                                           log_grants, channel, lazy_commit, joining, ts) q;
END $$;

-- distributed_lock_lock_to_join decides how an enqueue for a lease of n
-- permits (NULL: shared) holds key's row, read at ts: FOR SHARE, joining
-- the queue of a running group of its kind whose releases keep handing off
-- (distributed_lock_queue_joinable), having taken the key's queue lock
-- shared (or waited a moment for it: ts read after); else for update
-- (distributed_lock_lock_to_queue, which may find it may join after all).
-- r is the row (NULL columns when key has none), or with joining true and
-- r NULL, the group changed before its share lock: the caller answers
-- 'busy'. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_lock_to_join(
    key text, owner text, n integer, seen_for_us bigint,
    OUT r distributed_lock, OUT joining boolean, OUT ts timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    locked record;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    ts := distributed_lock_now();
    joining := distributed_lock_queue_joinable(r, n, seen_for_us, ts);
    IF NOT joining THEN
        -- The row for update, unless the change another transaction is
        -- making to it (the enqueue that makes its releases hand off, say)
        -- lets this one join after all (14_queue_beside.sql).
        SELECT * INTO locked FROM distributed_lock_lock_to_queue(
            key, owner, seen_for_us, distributed_lock_holder_mode(n), n) t;
        joining := locked.beside;
        r := locked.r;
    END IF;
    IF joining THEN
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR SHARE;
        -- Judged again, with a now read after the wait for the row.
        ts := distributed_lock_now();
        IF NOT distributed_lock_queue_joinable(r, n, seen_for_us, ts) THEN
            -- Changed meanwhile (a group's end, say): taking the row for
            -- update now, with other holders of its share lock asking
            -- for the same, could deadlock. The caller enqueues again.
            r := NULL;
            RETURN;
        END IF;
        -- Before looking for room: a release beside this call that finds
        -- nobody to hand its permit to waits for it (13_shared_release.sql).
        -- Held exclusively, by such a release (it commits soon) or by
        -- another role, it is waited for a moment and then gone without:
        -- a release that cannot have it in turn ends its lease under the
        -- row for update, which waits for this call (one that holds it
        -- longer, its commit slow, leaves its permit to this waiter's next
        -- check).
        IF NOT distributed_lock_try_queue_lock(key) THEN
            PERFORM distributed_lock_queue_lock(key, false, interval '200 milliseconds');
            -- A record queued and served after that wait gets a now read
            -- after it, not a claim window counted from before.
            ts := distributed_lock_now();
        END IF;
    END IF;
END $$;

-- distributed_lock_queue_for_holder decides the rest of an enqueue for a
-- lease of n permits (NULL: shared) that the attempt refused, at ts, the
-- key's row held (joining: FOR SHARE, beside other enqueues): owner's
-- record queued (its live one taken over, or a new one), the head served
-- when the key may have room for it, and a slot handed to owner's own
-- record claimed at once (its grant kind); else 'queued' with the record's
-- place. Same columns as distributed_lock_enqueue_shared. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_queue_for_holder(
    key text, owner text, ttl_us bigint, n integer, claim_us bigint, seen_for_us bigint, lease_metadata jsonb,
    event_actor text, log_grants boolean, channel text, lazy_commit boolean, joining boolean, ts timestamptz,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    lock_key := key;
    -- Queueing grants nothing: a record lost in a crash is found gone by
    -- its waiter's next check. With lazy_commit the commit does not wait
    -- for the disk, and holds the row (or the queue lock) no longer for it.
    PERFORM distributed_lock_lazily(lazy_commit);
    waiter_id := distributed_lock_take_over_waiter(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata,
                                                   event_actor, log_grants, 0, channel,
                                                   distributed_lock_holder_mode(n), n, ts);
    IF waiter_id IS NULL THEN
        waiter_id := distributed_lock_add_waiter(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata, event_actor,
                                                 log_grants, 0, channel,
                                                 distributed_lock_holder_mode(n), n, ts);
    END IF;
    -- Room may have come since the attempt (a release that did not see
    -- this record yet): serve the head, which may be this record. Beside
    -- other enqueues, only when there is room for the head: serving locks
    -- the head's record, which would put them in line behind each other.
    IF NOT joining OR distributed_lock_head_has_room(key, n, ts) THEN
        PERFORM distributed_lock_hand_off(key, ts);
    END IF;
    -- Handed to the caller, who is here: claimed at once (renewed to its
    -- TTL). (The slot by its own columns: with use_column, an OUT name in
    -- a condition would be the column.)
    UPDATE distributed_lock s SET expires_at = ts + distributed_lock_us(ttl_us),
        renewed_at = ts, renew_count = s.renew_count + 1
    WHERE s.lock_key = key AND s.slot > 0 AND s.handed_to = distributed_lock_queue_for_holder.waiter_id
      AND s.released_at IS NULL
    RETURNING s.owner_id, s.fence_token, s.expires_at, s.ttl, s.grant_kind
    INTO owner_id, fence_token, expires_at, ttl, outcome;
    IF FOUND THEN
        remaining := interval '0';
        waiter_id := NULL;
        db_now := ts;
        RETURN;
    END IF;
    IF NOT joining THEN
        -- (A joining waiter's record lives shorter than the hand-offs it
        -- found promised, and the row is not its to write.)
        PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
    END IF;
    SELECT l.owner_id, l.fence_token, e.lease_end, l.ttl, 'queued', least(e.lease_end, l.released_at) - ts, ts,
           distributed_lock_queue_position(key, waiter_id, ts), distributed_lock_queue_length(key, ts)
    INTO owner_id, fence_token, expires_at, ttl, outcome, remaining, db_now, queue_position, queue_length
    FROM distributed_lock l, LATERAL (SELECT distributed_lock_lease_end(l) AS lease_end OFFSET 0) e
    WHERE l.lock_key = key AND l.slot = 0;
END $$;
