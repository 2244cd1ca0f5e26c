-- Several keys at once, all or none (locker.TryAcquireAll, AcquireAll;
-- docs/queue.md, "Several keys at once"). Every function here locks a key
-- set's rows in one order, the keys sorted (distributed_lock_key_set), so
-- two callers with overlapping sets never wait for each other's rows in
-- opposite orders. A waiting set has one waiter record per key, all
-- sharing a group_id, and is granted every key at once or none.

-- distributed_lock_key_set: keys sorted, the order every set is locked in.
-- A set that is empty, names a key twice or has more than 128 keys is
-- refused (22023). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_key_set(keys text[])
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE SET search_path FROM CURRENT AS $$
BEGIN
    IF coalesce(cardinality(keys), 0) NOT BETWEEN 1 AND 128
       OR (SELECT count(DISTINCT k) FROM unnest(keys) k) <> cardinality(keys) THEN
        RAISE EXCEPTION 'a key set must name 1 to 128 distinct keys' USING ERRCODE = '22023';
    END IF;
    RETURN ARRAY(SELECT k FROM unnest(keys) k ORDER BY k);
END $$;

-- distributed_lock_grant_set grants owner, in one statement, every key of
-- ks (a sorted key set) whose row may be granted anew now
-- (distributed_lock_admits), in key order, each by the one grant write
-- anew (distributed_lock_grant_lease: SKIP LOCKED, a token drawn under the
-- row's lock); steals (every grant with log_grants) are logged.
-- Returns the rows granted, in key order. What it did not grant (no row,
-- the caller's own lease, refused, locked) is the caller's to handle.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_grant_set(
    ks text[], owner text, ttl_us bigint, lease_metadata jsonb, event_actor text, event_detail jsonb,
    log_grants boolean, lock_delay_us bigint)
RETURNS distributed_lock[]
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := distributed_lock_now();
    granted distributed_lock[];
BEGIN
    SELECT array_agg(g ORDER BY g.lock_key) INTO granted
    FROM unnest(ks) k,
         LATERAL distributed_lock_grant_lease(k, 0, true, 'exclusive', owner, session_user, distributed_lock_us(ttl_us),
                                              ts + distributed_lock_us(ttl_us), lease_metadata,
                                              distributed_lock_us(lock_delay_us), NULL, ts) g
    WHERE g.lock_key IS NOT NULL;
    INSERT INTO distributed_lock_event
        (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    SELECT ts, x.lock_key, x.grant_kind, x.owner_id, x.fence_token, coalesce(event_actor, owner),
           x.previous_owner, x.previous_token, coalesce(event_detail, '{}')
    FROM unnest(granted) x
    WHERE x.grant_kind = 'stolen' OR log_grants;
    RETURN coalesce(granted, '{}');
END $$;

-- distributed_lock_acquire_all makes one attempt to take every key of keys
-- for owner, all or none, never waiting: each key in key order as
-- distributed_lock_acquire takes it, or, when modes names it 'shared' or
-- 'semaphore' (with its permits of permits: the same order as keys), as
-- distributed_lock_acquire_shared does (modes NULL: every key exclusive).
-- Granted: one row per key, in key order, with the outcome for it
-- ('acquired', 'stolen', 'renewed'; a holder's lease for a shared or
-- semaphore key). Refused: one row, the first key that could not be
-- granted, with its refusal (and its queue_length, delay_until); the
-- grants made before it are undone (they ran in a subtransaction), so
-- nothing is held, no row is created and no event written. Every
-- exclusive lease carries lock_delay_us. A set badly named (keys twice,
-- modes or permits not one per key, a mode not exclusive, shared or
-- semaphore, permits without a semaphore or a semaphore without them) is
-- refused (22023, 23514).
--
-- The common case, every key exclusive with a row that may be granted
-- anew, is one statement (distributed_lock_grant_set) rather than a call
-- of acquire per key: a set then costs about what one key does. Only when
-- that grants less than the whole set is it undone and the keys taken one
-- by one (distributed_lock_take_set).
CREATE OR REPLACE FUNCTION distributed_lock_acquire_all(
    keys text[], owner text, ttl_us bigint, lease_metadata jsonb DEFAULT NULL,
    event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL, log_grants boolean DEFAULT false,
    lock_delay_us bigint DEFAULT 0, modes text[] DEFAULT NULL, permits integer[] DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text, remaining interval, queue_length integer, delay_until timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ks text[] := distributed_lock_key_set(keys);
    granted distributed_lock[];
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    IF NOT EXISTS (SELECT 1 FROM distributed_lock_set_wants(keys, modes, permits) w WHERE w.mode IS NOT NULL) THEN
        BEGIN
            granted := distributed_lock_grant_set(ks, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                                  log_grants, lock_delay_us);
            IF cardinality(granted) = cardinality(ks) THEN
                RETURN QUERY SELECT g.lock_key::text, g.owner_id::text, g.fence_token::bigint, g.expires_at,
                                    g.ttl::interval, g.grant_kind::text, interval '0', NULL::integer, NULL::timestamptz
                             FROM unnest(granted) g ORDER BY g.lock_key;
                RETURN;
            END IF;
            RAISE EXCEPTION 'partial' USING ERRCODE = 'LK002';
        EXCEPTION WHEN SQLSTATE 'LK002' THEN
            NULL; -- undone: the keys are taken one by one below
        END;
    END IF;
    RETURN QUERY SELECT * FROM distributed_lock_take_set(keys, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                                         log_grants, lock_delay_us, modes, permits);
END $$;

-- distributed_lock_set_wants decides what a set asks for on each of its
-- keys: keys sorted (distributed_lock_key_set), each with the mode a
-- waiter record for it has (NULL: the key itself, an exclusive lease;
-- 'shared'; 'semaphore' with n permits), from modes and permits, which
-- name keys' in the same order (NULL arrays: every key exclusive; a NULL
-- mode: exclusive). Refused (22023): modes or permits not one per key, a
-- semaphore without permits or permits without a semaphore; a mode not
-- exclusive, shared or semaphore, or permits outside 1-1000 (23514).
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_set_wants(keys text[], modes text[], permits integer[])
RETURNS TABLE (k text, mode text, n integer)
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM distributed_lock_key_set(keys);
    IF cardinality(modes) IS DISTINCT FROM cardinality(keys) AND modes IS NOT NULL
       OR cardinality(permits) IS DISTINCT FROM cardinality(keys) AND permits IS NOT NULL THEN
        RAISE EXCEPTION 'one mode and one permits per key' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT x.k, CASE WHEN distributed_lock_wants_key(x.m) THEN NULL ELSE distributed_lock_holder_mode(x.n) END, x.n
        FROM (SELECT u.k::text AS k, u.m::distributed_lock_mode::text AS m, u.n::distributed_lock_permits::integer AS n
              FROM unnest(keys, coalesce(modes, array_fill(NULL::text, ARRAY[cardinality(keys)])),
                          coalesce(permits, array_fill(NULL::integer, ARRAY[cardinality(keys)]))) u(k, m, n)) x
        ORDER BY x.k;
    IF EXISTS (SELECT 1 FROM unnest(keys, modes, permits) u(k, m, n)
               WHERE NOT distributed_lock_wants_key(u.m) AND distributed_lock_holder_mode(u.n) IS DISTINCT FROM u.m
                  OR distributed_lock_wants_key(u.m) AND u.n IS NOT NULL) THEN
        RAISE EXCEPTION 'permits go with a semaphore, and a semaphore with its permits' USING ERRCODE = '22023';
    END IF;
END $$;

-- distributed_lock_take_set takes the keys of a set one by one, in key
-- order, each as distributed_lock_acquire takes an exclusive key or
-- distributed_lock_acquire_shared a shared or semaphore one (modes and
-- permits as distributed_lock_acquire_all's): all in a subtransaction,
-- undone at the first refusal. Returns acquire_all's rows: one per key, or
-- the refusal alone. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_take_set(
    keys text[], owner text, ttl_us bigint, lease_metadata jsonb, event_actor text, event_detail jsonb,
    log_grants boolean, lock_delay_us bigint, modes text[], permits integer[])
RETURNS SETOF distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    w record;
    a distributed_lock_acquire_result;
    taken distributed_lock_acquire_result[] := '{}';
BEGIN
    BEGIN
        FOR w IN SELECT * FROM distributed_lock_set_wants(keys, modes, permits) LOOP
            IF w.mode IS NULL THEN
                a := distributed_lock_acquire(w.k, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                              lock_delay_us);
            ELSE
                SELECT x.lock_key, x.owner_id, x.fence_token, x.expires_at, x.ttl, x.outcome, x.remaining,
                       x.queue_length, NULL INTO a
                FROM distributed_lock_acquire_shared(w.k, owner, ttl_us, w.n, lease_metadata, event_actor,
                                                     event_detail, log_grants) x;
            END IF;
            IF a.outcome NOT IN ('acquired', 'stolen', 'renewed') THEN
                RAISE EXCEPTION 'refused' USING ERRCODE = 'LK001';
            END IF;
            taken := taken || a;
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'LK001' THEN
        -- a keeps the refusal: variables are not rolled back.
        RETURN NEXT a;
        RETURN;
    END;
    RETURN QUERY SELECT * FROM unnest(taken);
END $$;


-- distributed_lock_create_free gives key, which has no row, a free one
-- (released as it is created; owner_id the waiter that needs it, which never
-- held it; its token drawn under the prune gate, as a first grant draws
-- one), so a waiting set can queue on the key and keep it promised. A
-- concurrent insert wins quietly. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_create_free(key text, owner text, ttl_us bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    ts timestamptz;
BEGIN
    LOCK TABLE distributed_lock_prune_gate IN ROW EXCLUSIVE MODE;
    -- A now of its own, after the gate: the row is made before its
    -- caller's now, which that reads once it holds every row it waits for.
    ts := distributed_lock_now();
    INSERT INTO distributed_lock AS l (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
    VALUES (key, owner, distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
            ts, distributed_lock_us(ttl_us), ts, ts)
    ON CONFLICT (lock_key, slot) DO NOTHING;
END $$;

-- distributed_lock_lock_set locks the rows of ks (a sorted key set) in
-- that order, waiting for each; a key without a row gets a free one
-- first. Returns the first key whose row it could not lock (pruned again
-- at every try), NULL when it locked them all. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_lock_set(ks text[], owner text, ttl_us bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    k text;
    locked boolean;
BEGIN
    FOREACH k IN ARRAY ks LOOP
        locked := false;
        FOR attempt IN 1..3 LOOP
            PERFORM 1 FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0 FOR NO KEY UPDATE;
            locked := FOUND;
            EXIT WHEN locked;
            PERFORM distributed_lock_create_free(k, owner, ttl_us);
        END LOOP;
        IF NOT locked THEN
            RETURN k;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- distributed_lock_settle_set ends, at ts, the groups of ks (a sorted key
-- set whose rows the caller holds for update) whose holders all lapsed
-- (distributed_lock_settle, 11_shared.sql), and passes them on, as a
-- single key's enqueue or check ends one: nobody else might, while a set
-- waits for them. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_settle_set(ks text[], ts timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    k text;
BEGIN
    FOR k IN SELECT l.lock_key FROM distributed_lock l
             WHERE l.lock_key = ANY (ks) AND l.slot = 0 AND distributed_lock_is_group(l) AND NOT distributed_lock_open(l, ts)
             ORDER BY l.lock_key LOOP
        PERFORM distributed_lock_settle(k, ts);
    END LOOP;
END $$;

-- distributed_lock_hand_off_set hands each key of ks (a sorted key set
-- whose rows the caller holds for update) found free or lapsed at ts to
-- the head of its queue (distributed_lock_hand_off), in key order.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_hand_off_set(ks text[], ts timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    k text;
BEGIN
    FOREACH k IN ARRAY ks LOOP
        IF (SELECT distributed_lock_open(l, ts) FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0) THEN
            PERFORM distributed_lock_hand_off(k, ts);
        END IF;
    END LOOP;
END $$;

-- distributed_lock_enqueue_all is a waiting set's first call, one
-- transaction. It locks every key's row in key order (a key without one
-- gets a free row) and, when owner may take every key now
-- (distributed_lock_may_take), grants them all (distributed_lock_acquire_all:
-- one row per key, waiter_id NULL). Otherwise it hands the keys found free
-- or lapsed to their queues' heads (as distributed_lock_enqueue does),
-- queues one waiter record per key, sharing a new group_id, with the lease
-- asked for (lock_delay_us too) and wake_channel (as for one key: NULL, the
-- shared channels; a bad name refused, 23514), keeps releases of every key handing off,
-- and returns one row per key in key order: the key's row, outcome 'queued', and that key's
-- record as waiter_id. modes and permits name a lease per key as for
-- distributed_lock_acquire_all: each record waits for its key's mode. A queued set holds nothing: a key it heads the
-- queue of stays free, promised to it, until it can have every key
-- (distributed_lock_hand_off_group). 'deadlock': its wait would close a
-- cycle (09_deadlock.sql): no record is left, and cycle says who waits for
-- what. 'busy' (one row): a key's row could not be locked; try again.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue_all(
    keys text[], owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint,
    lease_metadata jsonb DEFAULT NULL, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL,
    log_grants boolean DEFAULT false, lock_delay_us bigint DEFAULT 0, wake_channel text DEFAULT NULL,
    modes text[] DEFAULT NULL, permits integer[] DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
               outcome text, remaining interval, waiter_id bigint, db_now timestamptz,
               queue_position integer, queue_length integer, delay_until timestamptz, cycle jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    -- The domain checks it here, before anything is granted or queued.
    channel distributed_lock_channel := distributed_lock_enqueue_all.wake_channel;
    ks text[] := distributed_lock_key_set(keys);
    k text;
    ts timestamptz;
    g bigint;
    ids bigint[];
    found_cycle jsonb;
    taken distributed_lock_acquire_result[];
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    k := distributed_lock_lock_set(ks, owner, ttl_us);
    IF k IS NOT NULL THEN
        RETURN QUERY SELECT k, NULL::text, NULL::bigint, NULL::timestamptz, NULL::interval, 'busy'::text, NULL::interval,
                            NULL::bigint, distributed_lock_now(), NULL::integer, NULL::integer, NULL::timestamptz, NULL::jsonb;
        RETURN;
    END IF;
    ts := distributed_lock_now();
    -- Groups whose holders all lapsed end here, under the rows' locks.
    PERFORM distributed_lock_settle_set(ks, ts);
    taken := distributed_lock_take_all_now(keys, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                           lock_delay_us, modes, permits, ts);
    IF taken IS NOT NULL THEN
        RETURN QUERY SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining,
                            NULL::bigint, ts, NULL::integer, a.queue_length, a.delay_until, NULL::jsonb
        FROM unnest(taken) a;
        RETURN;
    END IF;
    PERFORM distributed_lock_hand_off_set(ks, ts);
    g := nextval(pg_get_serial_sequence('distributed_lock_waiter', 'waiter_id'));
    WITH added AS (
        INSERT INTO distributed_lock_waiter AS w
            (lock_key, owner_id, waiting_since, seen_until, ttl, claim_window, metadata, log_grants, actor, lock_delay,
             group_id, wake_channel, lock_mode, permits)
        SELECT s.k, owner, ts, ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl, distributed_lock_us(ttl_us),
               distributed_lock_us(claim_us), coalesce(lease_metadata, '{}'),
               distributed_lock_enqueue_all.log_grants, nullif(event_actor, ''),
               distributed_lock_us(lock_delay_us), g, channel, s.mode, s.n
        FROM distributed_lock_set_wants(keys, modes, permits) s
        RETURNING w.waiter_id)
    SELECT array_agg(a.waiter_id) INTO ids FROM added a;
    PERFORM distributed_lock_keep_waking(s.k, ts, seen_for_us) FROM unnest(ks) s(k);
    found_cycle := distributed_lock_refuse_deadlock(owner, ids, ts, true);
    RETURN QUERY
        SELECT a.* FROM unnest(ks) WITH ORDINALITY s(k, n)
        LEFT JOIN distributed_lock_waiter w ON w.lock_key = s.k AND w.group_id = g,
        LATERAL distributed_lock_queued_answer(s.k, w.waiter_id, found_cycle, ts) a
        ORDER BY s.n;
END $$;

-- distributed_lock_take_all_now decides whether a waiting set, its keys'
-- rows locked by the caller at ts, is granted at once: when owner may
-- take every key (an exclusive one: distributed_lock_may_take; a shared or
-- semaphore one: distributed_lock_admits, or a group of its kind in which
-- owner holds a slot, overtaking nobody), distributed_lock_acquire_all
-- takes them (the rows are this transaction's, which SKIP LOCKED does not
-- skip). Its rows when it granted them all; NULL otherwise (refused: a
-- semaphore without room, say), and nothing is held. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_take_all_now(
    keys text[], owner text, ttl_us bigint, lease_metadata jsonb, event_actor text, event_detail jsonb,
    log_grants boolean, lock_delay_us bigint, modes text[], permits integer[], ts timestamptz)
RETURNS distributed_lock_acquire_result[]
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    taken distributed_lock_acquire_result[];
BEGIN
    IF NOT (SELECT bool_and(CASE WHEN w.mode IS NULL THEN distributed_lock_may_take(l, owner, session_user, ts)
                                 ELSE distributed_lock_admits(l, w.mode, w.n, NULL, ts)
                                      OR distributed_lock_live(l, ts) AND distributed_lock_of_kind(l, w.n)
                                         AND NOT distributed_lock_queued_ahead(l, owner, ts) END)
            FROM distributed_lock_set_wants(keys, modes, permits) w
            JOIN distributed_lock l ON l.lock_key = w.k AND l.slot = 0) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(ROW(a.*)::distributed_lock_acquire_result) INTO taken
    FROM distributed_lock_acquire_all(keys, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants,
                                      lock_delay_us, modes, permits) a;
    IF taken[1].outcome IN ('acquired', 'stolen', 'renewed') THEN
        RETURN taken;
    END IF;
    RETURN NULL;
END $$;

-- distributed_lock_hand_off_group is the hand-off of key (its row locked by
-- the caller, free or lapsed) whose queue's head is head, one record of a
-- waiting set. The set gets every key at once or none: each of its
-- records live, and every key either the set's owner's own running
-- exclusive lease (which it may take again whoever is queued, as acquire
-- renews it) or one that admits the lease its record asks for, of its
-- mode (distributed_lock_admits: free or lapsed past its lock-delay, or a
-- running group of its kind), with the set's record at the head of its
-- queue, and a semaphore with room. The other rows and
-- records are locked SKIP LOCKED: the caller holds key's row, and waiting
-- for a row out of key order could deadlock. When it can, every key is
-- granted to its record (distributed_lock_grant_waiter; the set's waiter
-- claims them together) and head's id is returned. Otherwise NULL: key
-- stays free and promised to the set, whose turn comes with the hand-off
-- of the key it lacks; when only a locked row or record stood in the way,
-- a wake-up of key on the set's channel wakes its waiter to check (its
-- check locks the rows in key order and waits for them). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_hand_off_group(key text, head distributed_lock_waiter, ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    rec distributed_lock_waiter;
    r distributed_lock;
    n integer := 0;
    wake boolean := false;
BEGIN
    -- The check runs in a subtransaction that a refusal rolls back, which
    -- lets go of the rows and records it locked: kept to the end of a
    -- caller that passes on more keys (release_all), they could deadlock
    -- it with another caller passing keys on in another order.
    BEGIN
        FOR rec IN SELECT * FROM distributed_lock_waiter x WHERE x.group_id = head.group_id
                   ORDER BY x.waiter_id FOR UPDATE SKIP LOCKED LOOP
            n := n + 1;
            IF rec.seen_until <= ts THEN
                RAISE EXCEPTION 'not now' USING ERRCODE = 'LK003';
            END IF;
            SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = rec.lock_key AND l.slot = 0 FOR NO KEY UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                wake := true;
                RAISE EXCEPTION 'not now' USING ERRCODE = 'LK003';
            END IF;
            -- The owner's own running lease it may take again at once, as
            -- acquire renews it, whoever is queued for it: they wait for the
            -- owner, and making the set wait for them would deadlock it.
            CONTINUE WHEN distributed_lock_wants_key(rec.lock_mode) AND distributed_lock_held(r, rec.owner_id, rec.owner_role, ts);
            IF NOT distributed_lock_admits(r, coalesce(rec.lock_mode, 'exclusive'), rec.permits, rec.waiter_id, ts) THEN
                RAISE EXCEPTION 'not now' USING ERRCODE = 'LK003';
            END IF;
        END LOOP;
        IF n <> (SELECT count(*) FROM distributed_lock_waiter x WHERE x.group_id = head.group_id) THEN
            wake := true;
            RAISE EXCEPTION 'not now' USING ERRCODE = 'LK003';
        END IF;
        FOR rec IN SELECT * FROM distributed_lock_waiter x WHERE x.group_id = head.group_id ORDER BY x.lock_key LOOP
            IF NOT distributed_lock_serve_set_record(rec, ts) THEN
                RAISE EXCEPTION 'no room' USING ERRCODE = 'LK003'; -- a holder's release serves it
            END IF;
        END LOOP;
        RETURN head.waiter_id;
    EXCEPTION WHEN SQLSTATE 'LK003' THEN
        -- A NOTIFY in a rolled-back subtransaction is not sent: it goes here.
        IF wake THEN
            PERFORM distributed_lock_wake_channel(head.wake_channel, key);
        END IF;
        RETURN NULL;
    END;
END $$;

-- distributed_lock_serve_set_record grants waiter record rec of a set
-- being handed its keys (its key's row locked by the caller) the lease it
-- asks for at ts: the key itself (distributed_lock_grant_waiter), or a
-- holder's slot (distributed_lock_grant_holder_waiter), the key made the
-- group of its kind first when it is free. False when a semaphore has no
-- room for it. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_serve_set_record(rec distributed_lock_waiter, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    r distributed_lock;
    stole boolean := false;
BEGIN
    IF distributed_lock_wants_key(rec.lock_mode) THEN
        PERFORM distributed_lock_grant_waiter(rec, ts);
        RETURN true;
    END IF;
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = rec.lock_key AND l.slot = 0;
    IF distributed_lock_open(r, ts) THEN
        stole := distributed_lock_form_group(r, rec.lock_mode, rec.permits, ts,
                                             (extract(epoch FROM rec.ttl) * 1000000)::bigint,
                                             coalesce(rec.actor, rec.owner_id), rec.owner_role);
    END IF;
    RETURN distributed_lock_grant_holder_waiter(rec, ts, stole);
END $$;

-- distributed_lock_set_handed: every key of keys was handed to its record
-- of ids (the same order), queued by the caller's role: the key's lease,
-- or a holder's slot of it, and the grant still runs. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_set_handed(keys text[], ids bigint[], ts timestamptz)
RETURNS boolean
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT bool_and(EXISTS (SELECT 1 FROM distributed_lock l
                            WHERE l.lock_key = s.k AND l.handed_to = s.id AND l.owner_role = session_user
                              AND distributed_lock_live(l, ts)))
    FROM unnest(keys, ids) s(k, id)
$$;

-- distributed_lock_waiter_poll_all is a waiting set's check, for when it
-- missed or has no NOTIFY: ids are its records, one per key of keys (the
-- same order), as distributed_lock_enqueue_all returned them. It locks the
-- rows in key order and returns one row per key, in key order, as
-- distributed_lock_waiter_poll does for one: each key's grant kind when
-- the set was handed every key (remaining: what is left of the claim
-- window); 'queued' while its records are live (refreshed for seen_for_us;
-- keys found free or lapsed are first handed to their queues' heads, which
-- may grant the set); 'gone' when its records are gone with no grant;
-- 'deadlock' when its wait closes a cycle of which it is the youngest (its
-- records removed; cycle says who waits for what). Records another role
-- queued are answered as gone, as distributed_lock_waiter_poll answers.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_poll_all(keys text[], ids bigint[], seen_for_us bigint)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
               outcome text, remaining interval, waiter_id bigint, db_now timestamptz,
               queue_position integer, queue_length integer, delay_until timestamptz, cycle jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ks text[] := distributed_lock_key_set(keys);
    k text;
    ts timestamptz;
    waiting text;
    live integer;
    found_cycle jsonb;
BEGIN
    IF cardinality(ids) IS DISTINCT FROM cardinality(keys) THEN
        RAISE EXCEPTION 'one waiter id per key' USING ERRCODE = '22023';
    END IF;
    FOREACH k IN ARRAY ks LOOP
        PERFORM 1 FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0 FOR NO KEY UPDATE;
    END LOOP;
    ts := distributed_lock_now();
    -- Groups whose holders all lapsed end here, under the rows' locks.
    PERFORM distributed_lock_settle_set(ks, ts);
    IF NOT distributed_lock_set_handed(keys, ids, ts) THEN
        WITH seen AS (
            UPDATE distributed_lock_waiter w SET seen_until = ts + distributed_lock_us(seen_for_us)::distributed_lock_ttl
            WHERE w.waiter_id = ANY (ids) AND w.seen_until > ts AND w.owner_role = session_user
            RETURNING w.owner_id)
        SELECT min(s.owner_id), count(*) INTO waiting, live FROM seen s;
        IF live = cardinality(ids) THEN
            PERFORM distributed_lock_hand_off_set(ks, ts);
            PERFORM distributed_lock_keep_waking(s.k, ts, seen_for_us) FROM unnest(ks) s(k);
            IF EXISTS (SELECT 1 FROM distributed_lock_waiter w WHERE w.waiter_id = ANY (ids)) THEN
                found_cycle := distributed_lock_refuse_deadlock(waiting, ids, ts, true);
            END IF;
        END IF;
    END IF;
    RETURN QUERY
        SELECT x.k, x.owner_id, x.fence_token, x.expires_at, x.ttl, x.outcome, x.remaining, x.id, ts,
               CASE WHEN x.outcome = 'queued' THEN distributed_lock_queue_position(x.k, x.id, ts) END,
               CASE WHEN x.outcome = 'queued' THEN distributed_lock_queue_length(x.k, ts) END,
               CASE WHEN x.outcome = 'queued' THEN x.delay_end END, found_cycle
        FROM (SELECT s.k, s.id, l.owner_id::text, l.fence_token::bigint, l.expires_at, l.ttl::interval,
                     CASE WHEN found_cycle IS NOT NULL THEN 'deadlock'
                          WHEN distributed_lock_set_handed(keys, ids, ts) THEN l.grant_kind::text
                          WHEN w.seen_until > ts THEN 'queued'
                          ELSE 'gone' END AS outcome,
                     least(distributed_lock_lease_end(l), l.released_at) - ts AS remaining,
                     CASE WHEN distributed_lock_delayed(l, ts) THEN distributed_lock_delay_end(l) END AS delay_end
              FROM unnest(keys, ids) s(k, id)
              -- The lease handed to the record (a holder's slot, say), else the key's row.
              LEFT JOIN LATERAL (SELECT x.* FROM distributed_lock x
                                 WHERE x.lock_key = s.k AND (x.slot = 0 OR x.handed_to = s.id)
                                 ORDER BY x.handed_to IS NOT DISTINCT FROM s.id DESC, x.slot LIMIT 1) l ON true
              LEFT JOIN distributed_lock_waiter w ON w.waiter_id = s.id AND w.owner_role = session_user) x
        ORDER BY x.k;
END $$;

-- distributed_lock_waiter_leave_all takes a waiting set out of its queues
-- (its AcquireAll gave up): its records ids (one per key of keys) go, each
-- logging its wait as distributed_lock_waiter_leave's does, keys
-- handed to it and unclaimed are released (with log_release, logged as
-- released by event_actor), and every key left free with waiters is
-- passed on, once all the set's records are gone, so a set queued behind
-- it can have them all. Returns 'passed_on' (it had been handed its keys),
-- 'left' (it was queued) or 'none'. Only records (and leases handed to
-- them) the caller's role queued are touched.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_leave_all(
    keys text[], ids bigint[], log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    ks text[] := distributed_lock_key_set(keys);
    k text;
    ts timestamptz;
    r distributed_lock;
    s record;
    gone distributed_lock_waiter;
    left_queue boolean;
    passed boolean := false;
BEGIN
    FOREACH k IN ARRAY ks LOOP
        PERFORM 1 FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0 FOR NO KEY UPDATE;
    END LOOP;
    ts := distributed_lock_now();
    left_queue := false;
    FOR gone IN DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = ANY (ids) AND w.owner_role = session_user
                RETURNING * LOOP
        PERFORM distributed_lock_log_gave_up(gone, ts);
        left_queue := true;
    END LOOP;
    FOR s IN SELECT x.k, x.id FROM unnest(keys, ids) x(k, id) ORDER BY x.k LOOP
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = s.k AND l.slot = 0;
        IF r.handed_to = s.id AND r.released_at IS NULL AND r.renew_count = 0 AND r.owner_role = session_user THEN
            UPDATE distributed_lock l SET released_at = ts WHERE l.lock_key = s.k AND l.slot = 0;
            IF log_release THEN
                INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
                VALUES (ts, s.k, 'released', r.owner_id, r.fence_token, coalesce(event_actor, r.owner_id),
                        '{"unclaimed": true}');
            END IF;
            passed := true;
        END IF;
        -- A holder's slot handed to it and unclaimed: released, its room
        -- passed on (distributed_lock_holders_ended).
        passed := distributed_lock_leave_slot(s.k, s.id, log_release, event_actor, ts) OR passed;
    END LOOP;
    FOREACH k IN ARRAY ks LOOP
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0;
        IF FOUND AND distributed_lock_open(r, ts) AND r.wake_until > ts THEN
            PERFORM distributed_lock_pass_on(k, ts);
        END IF;
    END LOOP;
    RETURN CASE WHEN passed THEN 'passed_on' WHEN left_queue THEN 'left' ELSE 'none' END;
END $$;

-- distributed_lock_renew_all renews owner's leases of keys, granted with
-- tokens (the same order), each as distributed_lock_renew does, in key
-- order: one statement for a set's keepalive. One row per key, in key
-- order: 'renewed', or 'not_held' for a lease no longer current (the
-- others are renewed all the same).
CREATE OR REPLACE FUNCTION distributed_lock_renew_all(keys text[], owner text, tokens bigint[], ttl_us bigint)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    s record;
BEGIN
    PERFORM distributed_lock_key_set(keys);
    IF cardinality(tokens) IS DISTINCT FROM cardinality(keys) THEN
        RAISE EXCEPTION 'one token per key' USING ERRCODE = '22023';
    END IF;
    FOR s IN SELECT x.k, x.t FROM unnest(keys, tokens) x(k, t) ORDER BY x.k LOOP
        RETURN QUERY SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, r.outcome
                     FROM distributed_lock_renew(s.k, owner, s.t, ttl_us) r;
    END LOOP;
END $$;

-- distributed_lock_release_all releases owner's leases of keys, granted
-- with tokens (the same order), each as distributed_lock_release does, in
-- key order, in one call; a key someone may wait for is then passed on
-- (distributed_lock_pass_on). One row per key, in key order: 'released'
-- or 'not_held'. lazy_commit as for one release; a hand-off among them
-- still commits durably (it is asked for after the lazy setting).
CREATE OR REPLACE FUNCTION distributed_lock_release_all(
    keys text[], owner text, tokens bigint[], lazy_commit boolean DEFAULT false,
    log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ks text[] := distributed_lock_key_set(keys);
    freed distributed_lock[] := '{}';
    slots distributed_lock[] := '{}';
    r distributed_lock;
    s record;
BEGIN
    IF cardinality(tokens) IS DISTINCT FROM cardinality(keys) THEN
        RAISE EXCEPTION 'one token per key' USING ERRCODE = '22023';
    END IF;
    -- One UPDATE per key, in key order: a statement over the whole set
    -- would take its row locks in whatever order its plan reads the rows,
    -- or need a locking read first, whose lock is a WAL record per row.
    -- An exclusive lease's only: a shared or semaphore group's row (owner
    -- '*', 11_shared.sql) is released by its last holder, never by its
    -- token, or an exclusive grant could follow while holders still hold.
    FOR s IN SELECT x.k, x.t FROM unnest(keys, tokens) x(k, t) ORDER BY x.k LOOP
        -- Each key's release with a now of its own, read as it takes that
        -- key's row: the keys before it may have waited for theirs.
        UPDATE distributed_lock l SET released_at = distributed_lock_now()
        WHERE l.lock_key = s.k AND l.slot = 0 AND l.owner_id = owner AND l.fence_token = s.t AND l.released_at IS NULL
          AND NOT distributed_lock_is_group(l) AND l.owner_role = session_user
        RETURNING l.* INTO r;
        IF FOUND THEN
            freed := freed || r;
        ELSE
            -- A holder's lease, as distributed_lock_release takes it: passed
            -- on below, once its end is logged.
            PERFORM 1 FROM distributed_lock l WHERE l.lock_key = s.k AND l.slot = 0 AND distributed_lock_is_group(l) FOR NO KEY UPDATE;
            slots := slots || ARRAY(SELECT h FROM distributed_lock_end_holders(s.k, owner, s.t, 'release',
                                                                              distributed_lock_now()) h);
        END IF;
    END LOOP;
    PERFORM distributed_lock_lazily(lazy_commit);
    IF log_release THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
        SELECT x.released_at, x.lock_key, 'released', owner, x.fence_token, coalesce(event_actor, owner)
        FROM unnest(freed || slots) x;
    END IF;
    FOREACH r IN ARRAY freed LOOP
        IF r.wake_until > r.released_at THEN
            PERFORM distributed_lock_pass_on(r.lock_key, r.released_at);
        END IF;
    END LOOP;
    FOR s IN SELECT DISTINCT y.lock_key AS k, y.released_at AS t FROM unnest(slots) y ORDER BY 1 LOOP
        PERFORM distributed_lock_holders_ended(s.k, s.t);
    END LOOP;
    RETURN QUERY
        SELECT k.k::text, coalesce(x.owner_id, y.owner_id)::text, coalesce(x.fence_token, y.fence_token)::bigint,
               coalesce(x.expires_at, y.expires_at), coalesce(x.ttl, y.ttl)::interval,
               CASE WHEN x.lock_key IS NULL AND y.lock_key IS NULL THEN 'not_held' ELSE 'released' END
        FROM unnest(ks) k(k) LEFT JOIN unnest(freed) x ON x.lock_key = k.k LEFT JOIN unnest(slots) y ON y.lock_key = k.k
        ORDER BY k.k;
END $$;
