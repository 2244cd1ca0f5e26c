-- Operator actions, on the grant the operator saw: they act only if token
-- is still the current, unreleased grant of key, so a lock that changed
-- hands after the operator looked is left alone. One row: outcome
-- 'force_expired' / 'force_released' with the row after the action, or
-- 'not_held' (only lock_key set). An event records event_actor (default:
-- the role that logged in) and reason. Waiters are woken. Either action
-- ends the lease without its holder's release, so the lease's lock-delay
-- starts (02_rules.sql); the event's detail says until when.

-- distributed_lock_force_expire ends the lease now without freeing the row:
-- the next acquirer takes it over as a steal, with a new token, once the
-- lock-delay from the new expires_at has passed. Its now is read once it
-- holds the row (c: the lock, then the clock, and the row found by key, as
-- distributed_lock_renew).
CREATE OR REPLACE FUNCTION distributed_lock_force_expire(
    key text, token bigint, event_actor text DEFAULT NULL, reason text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz;
    wake timestamptz;
    delay interval;
BEGIN
    UPDATE distributed_lock l SET expires_at = least(l.expires_at, c.ts)
    FROM (SELECT k.r, distributed_lock_now() AS ts
          FROM (SELECT z AS r FROM distributed_lock z
                WHERE z.lock_key = key AND z.fence_token = token AND z.released_at IS NULL
                  AND z.slot = 0 AND NOT distributed_lock_is_group(z)
                FOR NO KEY UPDATE) k
          OFFSET 0) c
    WHERE l.lock_key = key AND l.slot = 0
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'force_expired', l.wake_until, l.lock_delay,
              c.ts
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, wake, delay, ts;
    IF NOT FOUND THEN
        SELECT f.lock_key, f.owner_id, f.fence_token, f.expires_at, f.ttl, f.outcome
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome
        FROM distributed_lock_force_holders(key, token, 'expire', event_actor, reason) f;
        RETURN;
    END IF;
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (ts, key, 'force_expired', owner_id, token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason,
                'delay_until', CASE WHEN delay > interval '0' THEN expires_at + delay END)));
    IF wake > expires_at THEN
        PERFORM distributed_lock_wake(key);
    END IF;
END $$;

-- distributed_lock_force_release frees the row as if its holder had
-- released it, but starts the lease's lock-delay (delay_until) from the
-- release, or from its expiry if it had already run out.
CREATE OR REPLACE FUNCTION distributed_lock_force_release(
    key text, token bigint, event_actor text DEFAULT NULL, reason text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz;
    wake timestamptz;
    delay interval;
    delay_end timestamptz;
BEGIN
    -- A hold's at-least point goes (17_at_least.sql): the key is freed.
    UPDATE distributed_lock l SET released_at = distributed_lock_now(), delay_until = NULL, kept_until = NULL
    WHERE l.lock_key = key AND l.slot = 0 AND l.fence_token = token AND l.released_at IS NULL AND NOT distributed_lock_is_group(l)
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'force_released', l.wake_until,
              l.released_at, l.lock_delay
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, wake, ts, delay;
    IF NOT FOUND THEN
        SELECT f.lock_key, f.owner_id, f.fence_token, f.expires_at, f.ttl, f.outcome
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome
        FROM distributed_lock_force_holders(key, token, 'release', event_actor, reason) f;
        RETURN;
    END IF;
    IF delay > interval '0' THEN
        delay_end := least(expires_at, ts) + delay;
        UPDATE distributed_lock l SET delay_until = delay_end WHERE l.lock_key = key AND l.slot = 0;
    END IF;
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (ts, key, 'force_released', owner_id, token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason, 'delay_until', delay_end)));
    IF wake > ts THEN
        PERFORM distributed_lock_pass_on(key, ts);
    END IF;
END $$;

-- distributed_lock_end_delay ends key's lock-delay now, as an operator
-- who knows the last holder has stopped writing: the key is passed on to
-- the head of its queue (or its waiters are woken) in the same transaction.
-- One row: outcome 'delay_ended' with the row and the delay_until it cut
-- short, or 'not_delayed' (only lock_key set) when the key is not in a
-- lock-delay. A 'delay_ended' event records event_actor (default: the
-- role that logged in), reason and that delay_until.
CREATE OR REPLACE FUNCTION distributed_lock_end_delay(
    key text, event_actor text DEFAULT NULL, reason text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT delay_until timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    ts timestamptz;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF r.lock_key IS NULL OR NOT distributed_lock_delayed(r, ts) THEN
        lock_key := key;
        outcome := 'not_delayed';
        RETURN;
    END IF;
    UPDATE distributed_lock l SET lock_delay = interval '0', delay_until = NULL WHERE l.lock_key = key AND l.slot = 0;
    lock_key := r.lock_key; owner_id := r.owner_id; fence_token := r.fence_token;
    expires_at := r.expires_at; ttl := r.ttl; outcome := 'delay_ended';
    delay_until := distributed_lock_delay_end(r);
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (ts, key, 'delay_ended', r.owner_id, r.fence_token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason, 'delay_until', distributed_lock_delay_end(r))));
    IF r.wake_until > ts THEN
        PERFORM distributed_lock_pass_on(key, ts);
    END IF;
END $$;

-- distributed_lock_prune deletes lock rows free (released, or expired and
-- never released) for longer than free_for_us, past their lock-delay and
-- not promised to live waiters, waiter records of processes that died
-- waiting and sessions that lapsed (both a minute after), and, unless events_older_us is NULL, events older than that.
-- One row: how many of each it deleted. A promised row stays because a
-- waiting set keeps a key it heads free until it can have its other keys,
-- however long that takes, and a hand-off can grant only a key with a row.
--
-- It skips a free row another transaction has locked (that key is in use,
-- and a later prune gets it): holding the gate, it must never wait for a
-- row, since a waiting key set locks several rows and may then wait for
-- the gate to give another of its keys a row (distributed_lock_lock_set),
-- and each would wait for the other.
--
-- It first takes the gate (distributed_lock_prune_gate SHARE ROW
-- EXCLUSIVE): it waits until no grant is between drawing a token and
-- writing it (a key's first grant holds the gate ROW EXCLUSIVE, see
-- distributed_lock_first_grant), and keeps new ones out until the
-- transaction ends. Deleting a key's row is what could let a token go
-- backwards: a grant that drew token t on its insert path would insert t
-- after the key was granted a larger token, released and pruned. With the
-- gate, every grant that drew a token before the delete has finished
-- before it, and every grant after it draws a larger token than any the
-- deleted row had. It waits at most gate_wait_ms (a grant inside a long
-- transaction holds the gate until that ends, and so may a statement, by
-- a role with USAGE on the schema, naming the gate while it is planned);
-- past that it fails with SQLSTATE 55P03 and deletes nothing. New first
-- grants wait behind it meanwhile. Its now is read after the gate.
CREATE OR REPLACE FUNCTION distributed_lock_prune(
    free_for_us bigint, events_older_us bigint DEFAULT NULL, gate_wait_ms bigint DEFAULT 5000,
    OUT locks bigint, OUT waiters bigint, OUT events bigint, OUT sessions bigint)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    caller_lock_timeout text := current_setting('lock_timeout');
    ts timestamptz;
BEGIN
    PERFORM set_config('lock_timeout', gate_wait_ms || 'ms', true);
    LOCK TABLE distributed_lock_prune_gate IN SHARE ROW EXCLUSIVE MODE;
    ts := distributed_lock_now();
    -- A shared or semaphore key's slots (11_shared.sql) go with its row: a
    -- running group's row is never free, so none of them holds a lease.
    WITH gone AS (
        DELETE FROM distributed_lock l
        WHERE l.lock_key IN (SELECT x.lock_key FROM distributed_lock x
                             WHERE x.slot = 0 AND coalesce(x.released_at, x.expires_at) < ts - distributed_lock_us(free_for_us)
                               AND distributed_lock_admits(x, 'exclusive', NULL, NULL, ts)
                             FOR UPDATE SKIP LOCKED)
        RETURNING l.slot
    )
    SELECT count(*) FILTER (WHERE g.slot = 0) INTO locks FROM gone g;
    DELETE FROM distributed_lock_waiter w WHERE w.seen_until < ts - interval '1 minute';
    GET DIAGNOSTICS waiters = ROW_COUNT;
    DELETE FROM distributed_lock_session s WHERE s.expires_at < ts - interval '1 minute';
    GET DIAGNOSTICS sessions = ROW_COUNT;
    events := 0;
    IF events_older_us IS NOT NULL THEN
        DELETE FROM distributed_lock_event e
        WHERE e.occurred_at < ts - distributed_lock_us(events_older_us);
        GET DIAGNOSTICS events = ROW_COUNT;
    END IF;
    PERFORM set_config('lock_timeout', caller_lock_timeout, true);
END $$;
