-- Deadlock detection (locker.ErrDeadlock; docs/queue.md, "Deadlocks"). The
-- wait-for graph has owners as nodes. A live waiter record of owner W on
-- key K is an edge from W to K's holder and to the owner of every live
-- record ahead of W's in K's queue, as PostgreSQL's soft edges are. A
-- waiting set's records are one waiter's edges. A set's record on a key
-- its owner holds waits for nobody: the owner may take its own lease again
-- at once (distributed_lock_hand_off_group). Only a new wait can close a cycle,
-- so the search runs from the owner that queues, and from a waiter's check
-- for two waits that raced (neither saw the other's record at enqueue).

-- distributed_lock_waits: waiter record w waits at ts: it is live, and it
-- is not a waiting set's record on a key its owner holds (which waits for
-- nobody). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_waits(w distributed_lock_waiter, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN w.seen_until > ts AND NOT (w.group_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM distributed_lock h
        WHERE h.lock_key = w.lock_key AND h.slot = 0 AND distributed_lock_held(h, w.owner_id, w.owner_role, ts)));
END $$;

-- distributed_lock_awaited: someone waits for owner at ts: another owner's
-- waiting record on a key owner holds (its lease, or a holder's of a shared
-- or semaphore key), or behind a live record of owner's
-- in a queue. A cycle through owner needs such a wait, so without one the
-- search need not run: the common case of a waiter that holds nothing and
-- queues at a queue's tail costs two index probes instead of a walk over
-- the queue. PL/pgSQL, as every helper whose body is a query: its plan is
-- kept, where an SQL function's is made anew at each call. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_awaited(owner text, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN EXISTS (
        -- The records behind each of owner's, read from the queue index in
        -- order: as a plain join the planner scanned every waiter record
        -- and asked distributed_lock_waits of each.
        SELECT 1 FROM distributed_lock_waiter r
        CROSS JOIN LATERAL (
            SELECT 1 FROM distributed_lock_waiter a
            WHERE a.lock_key = r.lock_key AND a.waiter_id > r.waiter_id AND a.owner_id <> owner
              AND distributed_lock_waits(a, ts)
            ORDER BY a.lock_key, a.waiter_id LIMIT 1) behind
        WHERE r.owner_id = owner AND r.seen_until > ts)
    OR EXISTS (
        -- Its lease of the key, held alone or a holder's slot.
        SELECT 1 FROM (SELECT DISTINCT a.lock_key FROM distributed_lock_waiter a
                       WHERE a.seen_until > ts AND a.owner_id <> owner) k
        JOIN distributed_lock l ON l.lock_key = k.lock_key
        WHERE l.owner_id = owner AND distributed_lock_live(l, ts));
END $$;

-- distributed_lock_cycle_back: the cycle a search closed at waiter
-- last_owner (queued for last_key, record last_id), walked back through
-- reached (owner → the step that reached it: its owner, key and record id)
-- to start: its steps from start's, and the youngest record on it.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_cycle_back(
    reached jsonb, start text, last_owner text, last_key text, last_id bigint,
    OUT cycle jsonb, OUT youngest bigint)
RETURNS record
LANGUAGE plpgsql IMMUTABLE SET search_path FROM CURRENT AS $$
DECLARE
    o text := last_owner;
    step jsonb;
BEGIN
    cycle := jsonb_build_array(jsonb_build_object('owner', last_owner, 'key', last_key));
    youngest := last_id;
    WHILE o <> start LOOP
        step := reached -> o;
        cycle := jsonb_build_array(jsonb_build_object('owner', step ->> 'owner', 'key', step ->> 'key')) || cycle;
        youngest := greatest(youngest, (step ->> 'id')::bigint);
        o := step ->> 'owner';
    END LOOP;
END $$;

-- distributed_lock_wait_cycle finds the shortest cycle of waits through
-- start: cycle is a JSON array of steps {"owner", "key"}, the first
-- start's (owner waits for key, which the next step's owner holds or is
-- queued ahead for; the last step's owner waits for start), and youngest
-- the highest waiter id on it; both NULL when there is none. Breadth-first
-- over owners, each visited once; a waiter reaches its key's holder and
-- every live waiter ahead of it in one step. Each part of a key's queue
-- is read once (expanded: key → the waiter id whose waiters ahead were
-- read; a waiter ahead of that one reaches nobody new), so the search
-- costs a statement per hop between keys, not per waiter of a queue. An
-- owner's waits are found by the owner index, a key's holder by its
-- primary key; it never scans the lock table. It first asks whether anyone
-- waits for start at all (distributed_lock_awaited). One statement
-- gathers a level's owners (unseen, each with the step that reached it),
-- the step that closes a cycle, if any, and how far each queue has now
-- been read: per-owner PL/pgSQL work made a long queue's search grow with
-- its square. A wait on a key start holds, which that reading passes over
-- when start waits on the key too (an upgrade), closes a cycle as well
-- (distributed_lock_upgrade_edges, 17_convert.sql). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_wait_cycle(start text, ts timestamptz, OUT cycle jsonb, OUT youngest bigint)
RETURNS record
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
DECLARE
    frontier text[] := ARRAY[start];
    seen text[] := ARRAY[start];
    reached jsonb := '{}';  -- owner → the step that reached it
    expanded jsonb := '{}'; -- key → the waiter id its queue was read up to
    nxt text[];
    e record;
BEGIN
    IF NOT distributed_lock_awaited(start, ts) THEN
        RETURN; -- nobody waits for start: no cycle runs through it
    END IF;
    FOR depth IN 1..64 LOOP
        EXIT WHEN cardinality(frontier) = 0;
        WITH src AS (
                SELECT DISTINCT ON (w.lock_key) w.owner_id::text AS waiter, w.lock_key::text AS lock_key, w.waiter_id,
                       coalesce((expanded ->> w.lock_key)::bigint, 0) AS done, w.lock_mode::text AS mode
                FROM distributed_lock_waiter w
                WHERE w.owner_id = ANY (frontier) AND distributed_lock_waits(w, ts)
                ORDER BY w.lock_key, w.waiter_id DESC),
             hop AS (
                SELECT DISTINCT ON (n.next) s.waiter, s.lock_key, s.waiter_id, n.next
                FROM src s
                CROSS JOIN LATERAL (
                    -- Every live lease of the key holds it: its exclusive
                    -- holder's, or each holder's of its group (the group's
                    -- own lease is nobody's), but a shared holder's for a
                    -- shared waiter, which would join it.
                    SELECT l.owner_id::text AS next FROM distributed_lock l
                    WHERE s.done = 0 AND l.lock_key = s.lock_key AND distributed_lock_live(l, ts)
                      AND NOT distributed_lock_reserved(l.owner_id) AND distributed_lock_waits_behind(s.mode, l)
                    UNION ALL
                    SELECT a.owner_id::text FROM distributed_lock_waiter a
                    WHERE a.lock_key = s.lock_key AND a.seen_until > ts
                      AND a.waiter_id < s.waiter_id AND a.waiter_id >= s.done) n
                WHERE s.waiter_id > s.done AND n.next <> s.waiter
                ORDER BY n.next, s.waiter_id DESC)
        SELECT c.waiter, c.lock_key, c.waiter_id, f.nexts, f.steps,
               (SELECT jsonb_object_agg(s.lock_key, greatest(s.waiter_id, s.done)) FROM src s) AS read_up_to
        INTO e
        FROM (SELECT array_agg(h.next) AS nexts,
                     jsonb_object_agg(h.next, jsonb_build_object('owner', h.waiter, 'key', h.lock_key,
                                                                 'id', h.waiter_id)) AS steps
              FROM hop h WHERE h.next <> ALL (seen)) f
        LEFT JOIN (SELECT * FROM hop UNION ALL SELECT * FROM distributed_lock_upgrade_edges(frontier, start, ts)) c ON c.next = start;
        IF e.waiter IS NOT NULL THEN
            SELECT b.cycle, b.youngest INTO cycle, youngest
            FROM distributed_lock_cycle_back(reached, start, e.waiter, e.lock_key, e.waiter_id) b;
            RETURN;
        END IF;
        nxt := coalesce(e.nexts, '{}');
        seen := seen || nxt;
        reached := reached || coalesce(e.steps, '{}');
        expanded := expanded || coalesce(e.read_up_to, '{}');
        frontier := nxt;
    END LOOP;
END $$;

-- distributed_lock_refuse_deadlock refuses the wait of owner's records ids
-- (one waiter: one record, or a waiting set's) when it closes a cycle and
-- one of them is the youngest record on it, as PostgreSQL's lock manager
-- fails the wait that closes a cycle; the others on the cycle keep
-- waiting. The records are removed, each with a 'deadlock_refused' event
-- on its key (actor: the record's, else its owner; detail: the cycle), so
-- the history says why the waiter left the queue; with hand_on, each of
-- their keys that is free is then handed on to its next waiter (the caller
-- holds those keys' rows; a waiter queued beside the others holds none).
-- Returns the cycle (distributed_lock_wait_cycle), NULL when
-- the wait stands. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_refuse_deadlock(owner text, ids bigint[], ts timestamptz, hand_on boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    c record;
    ks text[];
    k text;
BEGIN
    SELECT * INTO c FROM distributed_lock_wait_cycle(owner, ts);
    IF c.cycle IS NULL OR NOT c.youngest = ANY (ids) THEN
        RETURN NULL;
    END IF;
    WITH gone AS (DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = ANY (ids)
                  RETURNING w.lock_key, w.owner_id, w.actor),
         logged AS (
             INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, actor, detail)
             SELECT ts, g.lock_key, 'deadlock_refused', g.owner_id, coalesce(g.actor, g.owner_id),
                    jsonb_build_object('cycle', c.cycle)
             FROM gone g ORDER BY g.lock_key
             RETURNING lock_key)
    SELECT array_agg(x.lock_key::text ORDER BY x.lock_key) INTO ks FROM logged x;
    IF hand_on THEN
        FOREACH k IN ARRAY coalesce(ks, '{}') LOOP
            IF (SELECT distributed_lock_open(l, ts) FROM distributed_lock l WHERE l.lock_key = k AND l.slot = 0) THEN
                PERFORM distributed_lock_hand_off(k, ts);
            END IF;
        END LOOP;
    END IF;
    RETURN c.cycle;
END $$;
