-- Deadlock detection (locker.ErrDeadlock; docs/queue.md, "Deadlocks"). The
-- wait-for graph has owners as nodes. A live waiter record of owner W on
-- key K is an edge from W to K's holder and one to the owner of the live
-- record just ahead of W's in K's queue, who waits in turn for the one
-- ahead of it: so W reaches every waiter ahead of it and the holder, as
-- PostgreSQL's soft edges do, with at most two edges per record. A waiting
-- set's records are one waiter's edges. A set's record on a key its owner
-- holds waits for nobody: the owner may take its own lease again at once
-- (distributed_lock_hand_off_group). Only a new wait can close a cycle,
-- so the search runs from the owner that queues, and from a waiter's check
-- for two waits that raced (neither saw the other's record at enqueue).

-- distributed_lock_wait_cycle finds the shortest cycle of waits through
-- start: cycle is a JSON array of steps {"owner", "key"}, the first
-- start's (owner waits for key, which the next step's owner holds or is
-- queued ahead for; the last step's owner waits for start), and youngest
-- the highest waiter id on it; both NULL when there is none. Breadth-first
-- over owners, each visited once, so its cost grows with the owners
-- reachable, not with the paths: an owner's waits are found by the owner
-- index, a key's holder by its primary key; it never scans the lock table.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_wait_cycle(start text, ts timestamptz, OUT cycle jsonb, OUT youngest bigint)
RETURNS record
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
DECLARE
    frontier text[] := ARRAY[start];
    seen text[] := ARRAY[start];
    reached jsonb := '{}';  -- owner → the step that reached it
    nxt text[];
    e record;
    o text;
    step jsonb;
BEGIN
    FOR depth IN 1..64 LOOP
        EXIT WHEN cardinality(frontier) = 0;
        nxt := '{}';
        FOR e IN
            SELECT DISTINCT ON (n.next) w.owner_id::text AS waiter, w.lock_key::text AS lock_key, w.waiter_id, n.next
            FROM distributed_lock_waiter w
            CROSS JOIN LATERAL (
                SELECT l.owner_id::text AS next FROM distributed_lock l
                WHERE l.lock_key = w.lock_key AND NOT distributed_lock_open(l, ts)
                UNION ALL
                (SELECT a.owner_id::text FROM distributed_lock_waiter a
                 WHERE a.lock_key = w.lock_key AND a.seen_until > ts AND a.waiter_id < w.waiter_id
                   AND NOT (w.group_id IS NOT NULL AND EXISTS (
                                SELECT 1 FROM distributed_lock h
                                WHERE h.lock_key = w.lock_key AND distributed_lock_held(h, w.owner_id, ts)))
                 ORDER BY a.waiter_id DESC LIMIT 1)) n
            WHERE w.owner_id = ANY (frontier) AND w.seen_until > ts AND n.next <> w.owner_id
            ORDER BY n.next, w.waiter_id DESC
        LOOP
            IF e.next = start THEN
                cycle := jsonb_build_array(jsonb_build_object('owner', e.waiter, 'key', e.lock_key));
                youngest := e.waiter_id;
                o := e.waiter;
                WHILE o <> start LOOP
                    step := reached -> o;
                    cycle := jsonb_build_array(jsonb_build_object('owner', step ->> 'owner', 'key', step ->> 'key')) || cycle;
                    youngest := greatest(youngest, (step ->> 'id')::bigint);
                    o := step ->> 'owner';
                END LOOP;
                RETURN;
            END IF;
            IF NOT e.next = ANY (seen) THEN
                seen := seen || e.next;
                nxt := nxt || e.next;
                reached := reached || jsonb_build_object(e.next,
                    jsonb_build_object('owner', e.waiter, 'key', e.lock_key, 'id', e.waiter_id));
            END IF;
        END LOOP;
        frontier := nxt;
    END LOOP;
END $$;

-- distributed_lock_refuse_deadlock refuses the wait of owner's records ids
-- (one waiter: one record, or a waiting set's) when it closes a cycle and
-- one of them is the youngest record on it, as PostgreSQL's lock manager
-- fails the wait that closes a cycle; the others on the cycle keep
-- waiting. The records are removed, and each of their keys that is free
-- is handed on to its next waiter (the caller holds those keys' rows).
-- Returns the cycle (distributed_lock_wait_cycle), NULL when the wait
-- stands. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_refuse_deadlock(owner text, ids bigint[], ts timestamptz)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    c record;
    k text;
BEGIN
    SELECT * INTO c FROM distributed_lock_wait_cycle(owner, ts);
    IF c.cycle IS NULL OR NOT c.youngest = ANY (ids) THEN
        RETURN NULL;
    END IF;
    FOR k IN WITH gone AS (DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = ANY (ids) RETURNING w.lock_key)
             SELECT g.lock_key FROM gone g ORDER BY 1 LOOP
        IF (SELECT distributed_lock_open(l, ts) FROM distributed_lock l WHERE l.lock_key = k) THEN
            PERFORM distributed_lock_hand_off(k, ts);
        END IF;
    END LOOP;
    RETURN c.cycle;
END $$;
