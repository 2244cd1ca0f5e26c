-- The fair queue (locker.Acquire; docs/queue.md). A key's queue is its live
-- waiter rows (seen_until in the future) in waiter_id order. A waiter
-- enqueues once, with the lease it wants; a release (or a waiter finding
-- the key free or lapsed) hands the lease to the head in its own
-- transaction and NOTIFYs the channel the waiter's record names
-- (07_wake.sql) with everything the waiter needs to hold it. Lock order,
-- everywhere: the key's lock row, then waiter rows.

-- distributed_lock_hand_off passes key (its row locked by the caller) on
-- to the head of its queue, judged by what the head wants
-- (distributed_lock_admits with its mode and permits): the one hand-off,
-- which every release, lapse and group's end passes a key on through. A
-- head waiting for the key itself is granted it
-- (distributed_lock_grant_waiter): new token (drawn under the row lock),
-- owner, TTL and metadata from the waiter row, which is consumed; the lease
-- first runs only until least(claim_window, ttl) from ts, so a waiter that
-- died after its last heartbeat blocks the key that long at most (its
-- client renews it to the full TTL, the claim). A head waiting for a
-- shared lease or a permit is served, and so is each next head of the
-- same kind while there is room (distributed_lock_serve_holders). A head
-- that is one record of a multi-key acquire is served by
-- distributed_lock_hand_off_group (08_multi.sql), every key or none.
-- Returns the first waiter served, or NULL when no live waiter is queued,
-- the key is in its lock-delay (the queue keeps its place; a waiter's poll
-- at the delay's end hands it off), or the key has no room for the head: a
-- caller passing on several keys (a set's release) may find one already
-- granted, by the hand-off of another of them to a waiting set, and must
-- not overwrite that grant. beside: the caller is a holder's release
-- beside others, holding the row only FOR SHARE: the room it made goes to
-- the first record of the group's kind no other release is serving
-- (distributed_lock_serve_beside), so that releases beside each other
-- serve different waiters side by side. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_hand_off(key text, ts timestamptz, beside boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    w distributed_lock_waiter%ROWTYPE;
    judged distributed_lock_waiter%ROWTYPE;
BEGIN
    -- The head, unlocked: the key is judged for it before its record is
    -- locked (a record locked FOR UPDATE is one a release is serving).
    SELECT * INTO w FROM distributed_lock_waiter x
    WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
    ORDER BY x.waiter_id LIMIT 1;
    IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0
                                  AND distributed_lock_admits(l, coalesce(w.lock_mode, 'exclusive'), w.permits,
                                                              w.waiter_id, ts)) THEN
        RETURN NULL;
    END IF;
    IF beside THEN
        RETURN distributed_lock_serve_beside(key, ts);
    END IF;
    IF w.group_id IS NULL AND distributed_lock_waits_for_group(w.lock_mode) THEN
        -- Locks the heads it serves itself, FOR NO KEY UPDATE: it may stop
        -- at one without serving it (no room).
        RETURN distributed_lock_serve_holders(key, ts);
    END IF;
    -- A set's record, or one waiting for the key itself: locked to be
    -- served. A head that changed while this waited for its lock (the one
    -- judged left or was served) is judged in its turn: a running group
    -- that admits a set's shared record does not admit a writer.
    judged := w;
    SELECT * INTO w FROM distributed_lock_waiter x
    WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
    ORDER BY x.waiter_id LIMIT 1
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    ELSIF w IS DISTINCT FROM judged THEN
        RETURN distributed_lock_hand_off(key, ts);
    ELSIF w.group_id IS NOT NULL THEN
        RETURN distributed_lock_hand_off_group(key, w, ts);
    END IF;
    RETURN distributed_lock_grant_waiter(w, ts);
END $$;

-- distributed_lock_grant_waiter grants w's key, whose row the caller has
-- locked, to waiter record w (which the caller has locked): the grant of a
-- hand-off (see distributed_lock_hand_off), the lease the role that queued
-- w takes (owner_role), the record consumed, the event, the NOTIFY
-- (distributed_lock_announce), a hint that names the waiter: what it was
-- granted the waiter asks the database (distributed_lock_waiter_claim). It commits durably whatever the caller set: a grant lost in a
-- crash after its NOTIFY went out could see its token drawn again. Returns
-- w's id. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_grant_waiter(w distributed_lock_waiter, ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    key text := w.lock_key;
    g distributed_lock;
BEGIN
    g := distributed_lock_grant_lease(key, 0, false, 'exclusive', w.owner_id, w.owner_role, w.ttl,
                                      ts + least(w.claim_window, w.ttl), w.metadata, w.lock_delay, w.waiter_id, ts);
    DELETE FROM distributed_lock_waiter x WHERE x.waiter_id = w.waiter_id;
    IF g.grant_kind = 'stolen' OR w.log_grants THEN
        -- The actor is the waiter's claim, so the role beside it is the
        -- one that queued it, not the one whose release handed it on.
        INSERT INTO distributed_lock_event
            (occurred_at, lock_key, kind, owner_id, fence_token, actor, caller_role, previous_owner, previous_token,
             detail)
        VALUES (ts, key, g.grant_kind, g.owner_id, g.fence_token, coalesce(w.actor, w.owner_id), w.owner_role,
                g.previous_owner, g.previous_token,
                jsonb_build_object('waited_ms', (extract(epoch FROM ts - w.waiting_since) * 1000)::bigint,
                                   'waiter_id', w.waiter_id));
    END IF;
    PERFORM set_config('synchronous_commit', 'on', true);
    -- NOTIFY channels are per database, and a database may hold several
    -- lock schemas: the payload names this one, whose waiter ids these
    -- are.
    PERFORM distributed_lock_announce(w, ts, json_build_object(
        'schema', distributed_lock_schema(), 'key', key, 'waiter', w.waiter_id, 'owner', g.owner_id, 'token', g.fence_token,
        'acquired_us', (extract(epoch FROM ts) * 1000000)::bigint,
        'expires_us', (extract(epoch FROM g.expires_at) * 1000000)::bigint,
        'ttl_us', (extract(epoch FROM g.ttl) * 1000000)::bigint,
        'kind', g.grant_kind)::text);
    RETURN w.waiter_id;
END $$;

-- distributed_lock_add_waiter appends owner's record to key's queue at ts:
-- the lease it asks for (ttl_us, claim_us, lease_metadata, log_grants,
-- event_actor, lock_delay_us), visible for seen_for_us unless refreshed,
-- the wake channel its process LISTENs on, and the kind of lease it waits
-- for (mode 'shared' or 'semaphore' with permits; NULL: the key itself).
-- Returns its id. The one insert of a single key's record, whichever way
-- it queues. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_add_waiter(
    key text, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint, lease_metadata jsonb,
    event_actor text, log_grants boolean, lock_delay_us bigint, channel text, mode text, permits integer,
    ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    id bigint;
BEGIN
    INSERT INTO distributed_lock_waiter AS w
        (lock_key, owner_id, waiting_since, seen_until, ttl, claim_window, metadata, log_grants, actor, lock_delay,
         wake_channel, lock_mode, permits)
    VALUES (key, owner, ts, ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl, distributed_lock_us(ttl_us),
            distributed_lock_us(claim_us), coalesce(lease_metadata, '{}'), log_grants, nullif(event_actor, ''),
            distributed_lock_us(lock_delay_us), channel, mode, permits)
    RETURNING w.waiter_id INTO id;
    RETURN id;
END $$;

-- distributed_lock_take_over_waiter gives owner's live record on key, left
-- by a call whose connection broke before it could leave, the lease now
-- asked for, written as distributed_lock_add_waiter writes a new one (the
-- kind it waits for included), and returns its id: an owner has one place
-- in a key's queue, and keeps it and its id. NULL when owner has no live
-- record there queued by the caller's role (another role's record of the
-- same owner name is not the caller's to take). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_take_over_waiter(
    key text, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint, lease_metadata jsonb,
    event_actor text, log_grants boolean, lock_delay_us bigint, channel text, mode text, permits integer,
    ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    id bigint;
BEGIN
    UPDATE distributed_lock_waiter w SET
        seen_until = ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl, ttl = distributed_lock_us(ttl_us),
        claim_window = distributed_lock_us(claim_us), metadata = coalesce(lease_metadata, '{}'),
        log_grants = distributed_lock_take_over_waiter.log_grants, actor = nullif(event_actor, ''),
        lock_delay = distributed_lock_us(lock_delay_us), wake_channel = channel, lock_mode = mode,
        permits = distributed_lock_take_over_waiter.permits
    WHERE w.waiter_id = (SELECT min(x.waiter_id) FROM distributed_lock_waiter x
                         WHERE x.lock_key = key AND x.owner_id = owner AND x.seen_until > ts
                           AND x.group_id IS NULL AND x.owner_role = session_user)
    RETURNING w.waiter_id INTO id;
    RETURN id;
END $$;

-- distributed_lock_keep_waking keeps releases of key handing off (or
-- NOTIFYing) until well past the seen_until of a waiter refreshed at ts for
-- seen_for_us: wake_until must never run out before a live waiter's record.
-- It writes only when wake_until would run out within seen_for_us, to
-- twice that, so most calls leave the hot row alone. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_keep_waking(key text, ts timestamptz, seen_for_us bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE distributed_lock l SET wake_until = ts + 2 * distributed_lock_us(seen_for_us)
    WHERE l.lock_key = key AND l.slot = 0
      AND (l.wake_until IS NULL OR l.wake_until < ts + distributed_lock_us(seen_for_us));
END $$;

-- distributed_lock_enqueue is a waiting acquirer's first and usually only
-- call, one transaction: it grants key to owner (distributed_lock_acquire)
-- when owner may take it (distributed_lock_may_take); otherwise it queues
-- owner (a waiter row with the lease it wants: ttl_us, claim_us,
-- lease_metadata, log_grants, event_actor, visible for seen_for_us unless
-- refreshed, and the wake_channel its process LISTENs on, NULL for the
-- shared ones; a channel that is not a lower-case identifier of at most 63
-- bytes is refused, 23514, whatever the call would have done), keeps releases of the key handing off (wake_until), and
-- returns the holder's row with outcome 'queued' and the waiter's id
-- (remaining: what is left of the holder's lease, none once it was
-- released: a waiter of a key that is free or lapsed and past its
-- lock-delay, but not handed to it, waits for the queue ahead, not for a
-- time; as in every waiter's answer). A key
-- free or lapsed with live waiters ahead is first handed to the head. It
-- waits for the key's row lock (a release or grant in flight), which orders
-- it with releases: a release either sees the new waiter or has committed
-- before; behind another owner's lease whose releases hand off, it queues
-- beside the other waiters instead, ordered with releases by the key's
-- queue lock (14_queue_beside.sql). An owner's live record on the key
-- (its earlier call could not leave: a broken connection) is taken over
-- rather than joined by a second: same id and place, the lease now asked
-- for; a key found free or
-- lapsed and handed to that record is the caller's at once (claimed,
-- outcome the hand-off's grant kind). db_now is the call's now, or a
-- grant's instant (the client relates a later hand-off's acquired_us to
-- its own clock with it). A queued caller is told its queue_position (1: the
-- head), the queue_length, and delay_until when the key is in its
-- lock-delay; the lease it waits for carries lock_delay_us. outcome
-- 'busy': a first grant of the key by another transaction kept failing;
-- try again. outcome 'deadlock': queueing would close a cycle of waits
-- (09_deadlock.sql) whose youngest record is the caller's: it is not
-- queued, and cycle says who waits for what.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue(
    key text, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint,
    lease_metadata jsonb DEFAULT NULL, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL,
    log_grants boolean DEFAULT false, lock_delay_us bigint DEFAULT 0, wake_channel text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    locked record;
    -- The domain checks it here, before anything is granted or queued.
    channel distributed_lock_channel := distributed_lock_enqueue.wake_channel;
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    FOR attempt IN 1..3 LOOP
        -- Beside the other waiters, without the row lock, if it may
        -- (14_queue_beside.sql).
        SELECT b.lock_key, b.owner_id, b.fence_token, b.expires_at, b.ttl, b.outcome, b.remaining, b.waiter_id,
               b.db_now, b.queue_position, b.queue_length, b.delay_until, b.cycle
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waiter_id,
             db_now, queue_position, queue_length, delay_until, cycle
        FROM distributed_lock_enqueue_beside(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata, event_actor,
                                             log_grants, lock_delay_us, channel) b;
        IF outcome IS NOT NULL THEN
            RETURN;
        END IF;
        SELECT * INTO locked FROM distributed_lock_lock_to_queue(key, owner, seen_for_us, NULL, NULL) t;
        -- Beside after all: the call it waited for made that possible.
        CONTINUE WHEN locked.beside;
        r := locked.r;
        EXIT WHEN r.lock_key IS NOT NULL;
        -- No row yet: a first grant creates it. When another transaction's
        -- first grant wins the insert, its row exists once that commits.
        SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining
        FROM distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                      lock_delay_us) a;
        IF outcome IN ('acquired', 'stolen', 'renewed') THEN
            db_now := expires_at - ttl; -- the grant's instant: acquire's now
            RETURN;
        END IF;
    END LOOP;
    IF r.lock_key IS NULL THEN
        lock_key := key; owner_id := NULL; fence_token := NULL; expires_at := NULL; ttl := NULL;
        remaining := NULL; outcome := 'busy';
        RETURN;
    END IF;
    SELECT * INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waiter_id, db_now,
                  queue_position, queue_length, delay_until, cycle
    FROM distributed_lock_enqueue_locked(r, owner, ttl_us, claim_us, seen_for_us, lease_metadata, event_actor,
                                         event_detail, log_grants, lock_delay_us, channel) q;
END $$;

-- distributed_lock_enqueue_locked decides distributed_lock_enqueue once it
-- holds key's row r for update (same arguments, channel already checked;
-- same answer): a group whose holders all lapsed is ended first; owner
-- takes the key when it may (distributed_lock_may_take), or a key found
-- free or lapsed handed to owner's own record; else owner is queued
-- (its live record taken over, or a new one) and told where it stands
-- (distributed_lock_queued_answer), or refused as a deadlock. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue_locked(
    r distributed_lock, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint, lease_metadata jsonb,
    event_actor text, event_detail jsonb, log_grants boolean, lock_delay_us bigint, channel text)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
               outcome text, remaining interval, waiter_id bigint, db_now timestamptz,
               queue_position integer, queue_length integer, delay_until timestamptz, cycle jsonb)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    key text := r.lock_key;
    ts timestamptz;
BEGIN
    -- After the row lock (the first try beside the others read its own
    -- now before this call waited for it).
    ts := distributed_lock_now();
    IF distributed_lock_is_group(r) AND NOT distributed_lock_open(r, ts) AND distributed_lock_settle(key, ts) THEN
        -- A group whose holders all lapsed (11_shared.sql) is ended here,
        -- under the lock, as acquire and a waiter's check end one, and
        -- passed on: the caller takes it or queues behind the head it was
        -- handed to, rather than behind a group nobody holds.
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    END IF;
    IF distributed_lock_may_take(r, owner, session_user, ts) THEN
        -- The row lock is this transaction's, which SKIP LOCKED does not skip.
        SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining
        FROM distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                      lock_delay_us) a;
        RETURN QUERY SELECT lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, NULL::bigint, ts,
                            NULL::integer, NULL::integer, NULL::timestamptz, NULL::jsonb;
        RETURN;
    END IF;
    waiter_id := distributed_lock_take_over_waiter(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata,
                                                   event_actor, log_grants, lock_delay_us, channel, NULL, NULL, ts);
    IF distributed_lock_open(r, ts) THEN
        IF distributed_lock_hand_off(key, ts) = waiter_id THEN
            -- Handed to the caller's own record: it is here to claim it (a
            -- renewal), and gets it as the grant it is.
            SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining
            INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining
            FROM distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                          lock_delay_us) a;
            SELECT l.grant_kind INTO outcome FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
            RETURN QUERY SELECT lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, NULL::bigint, ts,
                                NULL::integer, NULL::integer, NULL::timestamptz, NULL::jsonb;
            RETURN;
        END IF;
    END IF;
    IF waiter_id IS NULL THEN
        waiter_id := distributed_lock_add_waiter(key, owner, ttl_us, claim_us, seen_for_us, lease_metadata, event_actor,
                                                 log_grants, lock_delay_us, channel, NULL, NULL, ts);
    END IF;
    PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
    -- A statement of its own: the answer reads the queue the refusal left.
    cycle := distributed_lock_refuse_deadlock(owner, ARRAY[waiter_id], ts, true);
    RETURN QUERY SELECT * FROM distributed_lock_queued_answer(key, waiter_id, cycle, ts);
END $$;

-- distributed_lock_queued_answer decides what a call that queued waiter
-- record id for key at ts answers (distributed_lock_enqueue's row): the
-- key's row and outcome 'queued', with the record's place in the queue and
-- the lock-delay it waits out; or, when its wait closed found_cycle,
-- 'deadlock' with that cycle (the record removed: waiter_id NULL).
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_queued_answer(key text, id bigint, found_cycle jsonb, ts timestamptz)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
               outcome text, remaining interval, waiter_id bigint, db_now timestamptz,
               queue_position integer, queue_length integer, delay_until timestamptz, cycle jsonb)
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    -- PL/pgSQL: distributed_lock_lease_end is made after this file.
    RETURN QUERY
    SELECT l.lock_key::text, l.owner_id::text, l.fence_token::bigint, distributed_lock_lease_end(l), l.ttl::interval,
           CASE WHEN found_cycle IS NULL THEN 'queued' ELSE 'deadlock' END,
           least(distributed_lock_lease_end(l), l.released_at) - ts,
           CASE WHEN found_cycle IS NULL THEN id END, ts,
           distributed_lock_queue_position(key, id, ts), distributed_lock_queue_length(key, ts),
           CASE WHEN distributed_lock_delayed(l, ts) THEN distributed_lock_delay_end(l) END, found_cycle
    FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
END $$;

-- distributed_lock_waiter_poll is a queued waiter's check, for when it
-- missed or has no NOTIFY: one row as distributed_lock_enqueue's, outcome
--   'acquired' / 'stolen': the key was handed to waiter id (the lease, with
--            remaining = time left of its claim window; waiter_id = id);
--   'queued': still waiting (the holder's row); its record is refreshed for
--            seen_for_us, and a key found free or lapsed is first handed to
--            the head of the queue, which may be this waiter (not while the
--            key is in its lock-delay: delay_until says until when);
--            queue_position and queue_length say where it stands;
--   'gone':   its record is gone and no grant is its (it lapsed, or its
--            claim window ran out unclaimed): enqueue again;
--   'deadlock': its wait closes a cycle (09_deadlock.sql) of which its
--            record is the youngest: the record is removed, cycle says
--            who waits for what.
-- A check that finds the key held, by its own grant or by another while
-- its record is live and closes no cycle, locks nothing of the key: it
-- reads the row without locking it and refreshes its record. A row lock is
-- held through the commit, and a queue's waiters all check; locking, they
-- would stand in line with the release that hands the key on, each holding
-- it for a commit, and a hand-off delayed by their checks makes them check
-- more (a waiter handed the key while in that line could see its claim
-- window run out). Such a check is ordered before a release in flight, as
-- if it had taken the lock first; it judges with a ts read after its last
-- wait (00_search_path.sql), and a lease it reports as granted was read
-- committed. Every other check takes the row lock first, as everywhere.
-- Only the role that queued record id (its owner_role) is answered about
-- it: to any other the record is 'gone' and its grant unknown, and the
-- record is neither refreshed nor refused.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_poll(
    key text, id bigint, seen_for_us bigint,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    ts timestamptz;
    waiting text;
    unlocked boolean := false;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    ts := distributed_lock_now();
    -- A group's row is always checked under the lock: a group whose
    -- holders all lapsed is ended here, and one with room serves the queue.
    IF r.lock_key IS NOT NULL AND NOT distributed_lock_open(r, ts) AND NOT distributed_lock_is_group(r) THEN
        IF r.handed_to = id AND r.owner_role = session_user THEN
            unlocked := true;
        ELSE
            SELECT w.owner_id INTO waiting FROM distributed_lock_waiter w
            WHERE w.waiter_id = id AND w.lock_key = key AND w.seen_until > ts AND w.owner_role = session_user;
            unlocked := waiting IS NOT NULL
                AND (SELECT c.youngest FROM distributed_lock_wait_cycle(waiting, ts) c) IS DISTINCT FROM id;
        END IF;
    END IF;
    IF unlocked THEN
        IF waiting IS NOT NULL THEN
            -- The key's row before the record, as everywhere: keep_waking
            -- locks it only when it writes.
            PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
            UPDATE distributed_lock_waiter w SET seen_until = ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl
            WHERE w.waiter_id = id AND w.lock_key = key AND w.seen_until > ts AND w.owner_role = session_user;
            -- The update may have waited for a hand-off to this record:
            -- judge the answer with a now read after it.
            ts := distributed_lock_now();
        END IF;
    ELSE
        SELECT c.ts, c.cycle INTO ts, cycle FROM distributed_lock_poll_locked(key, id, seen_for_us) c;
        IF ts IS NULL THEN
            lock_key := key;
            waiter_id := id;
            outcome := 'gone';
            RETURN;
        END IF;
    END IF;
    SELECT * INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waiter_id, db_now,
                  queue_position, queue_length, delay_until, cycle
    FROM distributed_lock_poll_answer(key, id, cycle, ts) a;
END $$;

-- distributed_lock_poll_locked decides a waiter's check that takes key's
-- row for update (distributed_lock_waiter_poll): under the lock, with a
-- now read after the wait for it (ts; NULL when key has no row), a running
-- group serves a head that may join it or, its holders all lapsed, ends;
-- waiter record id, while live and not handed the key, is refreshed for
-- seen_for_us, a key found free or lapsed is handed to the head of its
-- queue, and a record still waiting is refused when its wait closes a
-- cycle (cycle). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_poll_locked(
    key text, id bigint, seen_for_us bigint, OUT ts timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    waiting text;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
    IF r.lock_key IS NULL THEN
        RETURN; -- gone: ts NULL
    END IF;
    -- Judged again, with a now read after the wait for the lock.
    ts := distributed_lock_now();
    IF distributed_lock_is_group(r) AND NOT distributed_lock_open(r, ts)
       AND distributed_lock_hand_off(key, ts) IS NULL THEN
        -- A running group first serves a head that may join it (taking
        -- over a slot whose lease ran out); one whose holders all
        -- lapsed ends here, and is passed on.
        PERFORM distributed_lock_settle(key, ts);
    END IF;
    -- A lapsed record is not revived: its waiter is gone.
    IF r.handed_to IS DISTINCT FROM id THEN
        UPDATE distributed_lock_waiter w SET seen_until = ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl
        WHERE w.waiter_id = id AND w.lock_key = key AND w.seen_until > ts AND w.owner_role = session_user
        RETURNING w.owner_id INTO waiting;
        IF FOUND THEN
            IF distributed_lock_open(r, ts) THEN
                PERFORM distributed_lock_hand_off(key, ts);
            END IF;
            PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
            -- Still waiting: two waits that closed a cycle at the same
            -- time did not see each other at enqueue.
            IF EXISTS (SELECT 1 FROM distributed_lock_waiter w WHERE w.waiter_id = id) THEN
                cycle := distributed_lock_refuse_deadlock(waiting, ARRAY[id], ts, true);
            END IF;
        END IF;
    END IF;
END $$;

-- distributed_lock_poll_answer decides what a waiter's check of record id
-- on key answers at ts (distributed_lock_waiter_poll's row): 'deadlock'
-- (found_cycle), the grant kind of the key or of a group's slot handed to
-- the record, 'queued' with its place while the record is live, else
-- 'gone'. Only the role that queued the record is answered about it.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_poll_answer(
    key text, id bigint, found_cycle jsonb, ts timestamptz,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT waiter_id bigint, OUT db_now timestamptz,
    OUT queue_position integer, OUT queue_length integer, OUT delay_until timestamptz, OUT cycle jsonb)
RETURNS record
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    slot distributed_lock;
BEGIN
    cycle := found_cycle;
    SELECT l.lock_key, l.owner_id, l.fence_token, distributed_lock_lease_end(l), l.ttl,
           CASE WHEN cycle IS NOT NULL THEN 'deadlock'
                WHEN l.handed_to = id AND l.owner_role = session_user AND NOT distributed_lock_open(l, ts)
                    THEN l.grant_kind::text
                WHEN EXISTS (SELECT 1 FROM distributed_lock_waiter w
                             WHERE w.waiter_id = id AND w.seen_until > ts AND w.owner_role = session_user)
                    THEN 'queued'
                ELSE 'gone' END,
           least(distributed_lock_lease_end(l), l.released_at) - ts, id, ts, CASE WHEN distributed_lock_delayed(l, ts) THEN distributed_lock_delay_end(l) END
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waiter_id, db_now, delay_until
    FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    IF outcome = 'gone' THEN
        -- A slot of a shared or semaphore key handed to it (12_shared_queue.sql).
        SELECT * INTO slot FROM distributed_lock s
        WHERE s.lock_key = key AND s.slot > 0 AND s.handed_to = id AND distributed_lock_live(s, ts)
          AND s.owner_role = session_user;
        IF FOUND THEN
            owner_id := slot.owner_id; fence_token := slot.fence_token; expires_at := slot.expires_at;
            ttl := slot.ttl; outcome := slot.grant_kind; remaining := slot.expires_at - ts;
        END IF;
    END IF;
    IF outcome = 'queued' THEN
        queue_position := distributed_lock_queue_position(key, id, ts);
        queue_length := distributed_lock_queue_length(key, ts);
    ELSE
        delay_until := NULL;
    END IF;
END $$;

-- distributed_lock_waiter_claim is a waiter's answer to a hand-off's
-- NOTIFY, which is only a hint (anyone may NOTIFY, 07_wake.sql): it asks
-- the database whether waiter record id, queued by the caller's role, was
-- handed key (its exclusive lease, or a slot of a shared or semaphore key),
-- and if so claims it: renewed to its full TTL (distributed_lock_renew),
-- in the one statement. One row: outcome the grant's kind ('acquired',
-- 'stolen') with the claimed lease, or 'not_handed' (only lock_key set):
-- no running grant to id of the caller's role (a forged, replayed or stale
-- notification, or a claim window that ran out): the waiter waits on, its
-- record untouched. So an honest hand-off costs the waiter the one round
-- trip its claim cost anyway, and a false one no more than that.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_claim(
    key text, id bigint,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    -- The key's own lease (slot 0) or a group holder's: no group's lease
    -- names a waiter.
    SELECT l.owner_id, l.fence_token, l.ttl, l.grant_kind, l.slot INTO g FROM distributed_lock l
    WHERE l.lock_key = key AND l.handed_to = id AND l.owner_role = session_user AND l.released_at IS NULL;
    IF FOUND AND g.slot > 0 THEN
        -- A holder's slot: renewed as distributed_lock_renew would, past
        -- its attempt on the key's own lease, which no slot is.
        SELECT h.lock_key, h.owner_id, h.fence_token, h.expires_at, h.ttl, g.grant_kind
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome
        FROM distributed_lock_renew_holder(key, g.owner_id, g.fence_token, (extract(epoch FROM g.ttl) * 1000000)::bigint) h
        WHERE h.lock_key IS NOT NULL;
    ELSIF FOUND THEN
        SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, g.grant_kind
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome
        FROM distributed_lock_renew(key, g.owner_id, g.fence_token, (extract(epoch FROM g.ttl) * 1000000)::bigint) r
        WHERE r.outcome = 'renewed';
    END IF;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_handed';
    END IF;
END $$;

-- distributed_lock_waiter_heartbeat keeps the waiter records ids visible for
-- another seen_for_us, in one statement for all the waiters of a process
-- (locker.Notifier), and releases of their keys handing off. Returns the
-- ids it did not find live: handed a lease (the waiter may have missed
-- the NOTIFY) or gone (a lapsed record is not revived); and the ids of
-- records that head the queue of a key nobody holds (free or lapsed, past
-- its lock-delay, or a group whose holders all lapsed), which their check
-- takes: no release will hand them that
-- key, and the hand-off that made them head may have gone to a process
-- that died with its waiter (07_wake.sql tells only the next in line). A
-- set's record is left out: a set heading a free key waits for its other
-- keys. Its ts is read first, before any row lock: wake_until
-- (ts + 2 seen_for_us) must stay after every seen_until it writes
-- (ts + seen_for_us), however long it waits; it judges no lease. A record
-- another role queued is not refreshed, and answered as not found.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_heartbeat(ids bigint[], seen_for_us bigint)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    ts timestamptz := distributed_lock_now();
    k text;
BEGIN
    -- Lock rows before waiter rows, in key order, as everywhere.
    FOR k IN SELECT DISTINCT w.lock_key FROM distributed_lock_waiter w
             WHERE w.waiter_id = ANY (ids) AND w.owner_role = session_user ORDER BY 1 LOOP
        PERFORM distributed_lock_keep_waking(k, ts, seen_for_us);
    END LOOP;
    -- The records are locked in key order too, as a release of several
    -- keys locks each key's head record in turn: in another order (their
    -- ids'), a heartbeat and such a release could each wait for a record
    -- the other holds. FOR NO KEY UPDATE, not FOR UPDATE, which says a
    -- release serves the record (distributed_lock_lock_to_serve).
    RETURN QUERY
        WITH seen AS (
            UPDATE distributed_lock_waiter w SET seen_until = ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl
            WHERE w.waiter_id IN (SELECT x.waiter_id FROM distributed_lock_waiter x
                                  WHERE x.waiter_id = ANY (ids) AND x.seen_until > ts
                                    AND x.owner_role = session_user
                                  ORDER BY x.lock_key, x.waiter_id FOR NO KEY UPDATE)
            RETURNING w.waiter_id, w.lock_key, w.group_id
        )
        SELECT i FROM unnest(ids) i WHERE i NOT IN (SELECT s.waiter_id FROM seen s)
        UNION ALL
        SELECT s.waiter_id FROM seen s JOIN distributed_lock l ON l.lock_key = s.lock_key AND l.slot = 0
        WHERE s.group_id IS NULL
          AND (distributed_lock_admits(l, 'exclusive', NULL, s.waiter_id, ts)
               -- A group whose holders all lapsed (11_shared.sql): nobody
               -- holds it either, and the check ends it.
               OR distributed_lock_is_group(l) AND NOT distributed_lock_open(l, ts)
                  AND distributed_lock_live_holders(l.lock_key, ts) = 0
                  AND distributed_lock_queue_position(s.lock_key, s.waiter_id, ts) = 1);
END $$;

-- distributed_lock_log_gave_up logs that waiter record w, taken out of its
-- queue at ts without a grant (its caller gave up), waited: a 'gave_up'
-- event with the wait's length (detail waited_ms, as a hand-off's grant
-- has it) when the record logs grants (log_grants), as its grant would
-- have been logged. The actor is the record's, the role the one that
-- queued it. Only a call that leaves writes it: a grant never does.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_log_gave_up(w distributed_lock_waiter, ts timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    IF w.log_grants THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, actor, caller_role, detail)
        VALUES (ts, w.lock_key, 'gave_up', w.owner_id, coalesce(w.actor, w.owner_id), w.owner_role,
                jsonb_build_object('waited_ms', (extract(epoch FROM ts - w.waiting_since) * 1000)::bigint,
                                   'waiter_id', w.waiter_id));
    END IF;
END $$;

-- distributed_lock_waiter_leave takes waiter id out of key's queue (its
-- Acquire gave up). A record that logs grants logs its wait
-- (distributed_lock_log_gave_up). If the key was handed to it meanwhile
-- and is unclaimed, the lease is released (with log_release, logged as a
-- release by event_actor) and passed on to the next waiter. Returns 'left'
-- (it was queued), 'passed_on' (it had been handed the key), or 'none'
-- (also for a record, or a lease handed to one, that another role queued:
-- only its own role takes a waiter out of the queue, or an operator's
-- prune once it lapsed).
CREATE OR REPLACE FUNCTION distributed_lock_waiter_leave(
    key text, id bigint, log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r distributed_lock;
    ts timestamptz;
    gone distributed_lock_waiter;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = id AND w.lock_key = key AND w.owner_role = session_user
    RETURNING * INTO gone;
    IF FOUND THEN
        PERFORM distributed_lock_log_gave_up(gone, ts);
        RETURN 'left';
    END IF;
    IF r.handed_to = id AND r.released_at IS NULL AND r.renew_count = 0 AND r.owner_role = session_user THEN
        UPDATE distributed_lock l SET released_at = ts WHERE l.lock_key = key AND l.slot = 0;
        IF log_release THEN
            INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
            VALUES (ts, key, 'released', r.owner_id, r.fence_token, coalesce(event_actor, r.owner_id),
                    '{"unclaimed": true}');
        END IF;
        PERFORM distributed_lock_pass_on(key, ts);
        RETURN 'passed_on';
    END IF;
    -- A slot of a shared or semaphore key handed to it and unclaimed.
    IF distributed_lock_leave_slot(key, id, log_release, event_actor, ts) THEN
        RETURN 'passed_on';
    END IF;
    RETURN 'none';
END $$;

-- distributed_lock_leave_slot decides whether waiter record id, leaving
-- the queue of key (its row locked by the caller) at ts, had been handed a
-- holder's slot of key it has not claimed (queued by the caller's role):
-- if so the slot is released (with log_release, logged as released by
-- event_actor, unclaimed) and its room passed on
-- (distributed_lock_holders_ended). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_leave_slot(
    key text, id bigint, log_release boolean, event_actor text, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    holder text;
    token bigint;
BEGIN
    SELECT s.owner_id, s.fence_token INTO holder, token FROM distributed_lock s
    WHERE s.lock_key = key AND s.slot > 0 AND s.handed_to = id AND s.released_at IS NULL AND s.renew_count = 0
      AND s.owner_role = session_user;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM 1 FROM distributed_lock_end_holders(key, holder, token, 'release', ts);
    IF log_release THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
        VALUES (ts, key, 'released', holder, token, coalesce(event_actor, holder), '{"unclaimed": true}');
    END IF;
    PERFORM distributed_lock_holders_ended(key, ts);
    RETURN true;
END $$;
