-- A lease's life after its grant: renew, release, fence, stale writes.

-- distributed_lock_renew extends owner's lease of key, granted with token,
-- by ttl_us from the database's now. One row: outcome 'renewed' with the
-- lease, or 'not_held' (only lock_key set) when that grant is no longer the
-- current, unexpired one, or was taken by another database role: every
-- call acting on a lease as its holder (renew, release, fence, a session's
-- bind, and the waiter's calls on its record) acts only on a lease or
-- record its own role (session_user) took, and answers another's as not
-- held. An expired lease is not revived even if nobody
-- took it: its holder may already have been told it was lost. The lease is
-- judged after the row lock is taken (c: the lock, then the clock; OFFSET
-- 0 keeps the clock read once, in c), so a
-- renewal that waited behind a fence or a release judges with the time
-- after the wait. The row updated is found by key, not through c: joined
-- on c's columns, a table without statistics (autovacuum has not analysed
-- it yet) is planned as a scan of every row, c evaluated again for each.
--
-- A renewal also answers with the revoke pending on the grant (the
-- columns of distributed_lock_revoke_pending, all NULL when none, or for a
-- shared or semaphore holder, which no revoke reaches), read in a
-- statement of its own once the row is locked: the update's snapshot was
-- taken before it waited for the lock, so a revoke that committed during
-- that wait is seen only by a later statement. Its deadline bounds the
-- new expiry (distributed_lock_revoke_cap, called only for a lease a
-- revoke with a deadline reached).
CREATE OR REPLACE FUNCTION distributed_lock_renew(
    key text, owner text, token bigint, ttl_us bigint,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT requested_at timestamptz, OUT reason text,
    OUT actor text, OUT caller_role text, OUT force_at timestamptz, OUT remaining interval)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz;
BEGIN
    UPDATE distributed_lock l
    SET expires_at = c.ts + distributed_lock_us(ttl_us),
        ttl = distributed_lock_us(ttl_us),
        renewed_at = c.ts,
        renew_count = l.renew_count + 1
    FROM (SELECT k.r, distributed_lock_now() AS ts
          FROM (SELECT z AS r FROM distributed_lock z
                WHERE z.lock_key = key AND z.slot = 0 AND z.owner_id = owner AND z.fence_token = token
                  AND z.released_at IS NULL AND z.owner_role = session_user AND NOT distributed_lock_is_group(z)
                FOR NO KEY UPDATE) k
          OFFSET 0) c
    WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_held(c.r, owner, session_user, c.ts)
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'renewed', c.ts
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, ts;
    IF FOUND THEN
        SELECT v.requested_at, v.reason, v.actor, v.caller_role, v.force_at
        INTO requested_at, reason, actor, caller_role, force_at
        FROM distributed_lock_revoke v WHERE v.lock_key = key AND v.fence_token = token;
        IF force_at IS NOT NULL THEN
            remaining := greatest(force_at - ts, interval '0');
            expires_at := distributed_lock_revoke_cap(key, token, expires_at);
        END IF;
        RETURN;
    END IF;
    -- A shared or semaphore holder's lease (11_shared.sql)?
    SELECT h.lock_key, h.owner_id, h.fence_token, h.expires_at, h.ttl, 'renewed'
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome
    FROM distributed_lock_renew_holder(key, owner, token, ttl_us) h WHERE h.lock_key IS NOT NULL;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_held';
    END IF;
END $$;

-- distributed_lock_pass_on wakes the waiters of key, whose row the caller
-- has locked and freed at ts: it hands the lease to the head of the key's
-- queue (distributed_lock_hand_off) or, when it hands nothing off (no live
-- waiter queued, a lock-delay, a set that cannot have all its keys yet),
-- wakes the processes that wait for the key (distributed_lock_wake). Before
-- it wakes them it waits, on the key's queue lock, for the enqueues in
-- flight beside the lease that ended (14_queue_beside.sql), and hands the
-- key to whoever they queued. That wait is bounded, 5 s (any role may hold
-- the queue lock; no enqueue holding it waits for the row the caller
-- holds): past it, a record queued unseen finds the key free at its
-- waiter's next check, when the lease it queued behind would have ended,
-- or sooner. Call
-- it only when the row's wake_until is after ts (someone may wait): a
-- NOTIFY serialises the commits of every notifying transaction in the
-- cluster, a cost releases nobody waits for should not pay, and reading
-- the queue costs a release too. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_pass_on(key text, ts timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    IF distributed_lock_hand_off(key, ts) IS NULL THEN
        PERFORM distributed_lock_queue_lock(key, true, interval '5 seconds');
        -- Handed with a now read after that wait: a record queued while
        -- this waited must not get a claim window counted from before it asked.
        IF distributed_lock_hand_off(key, distributed_lock_now()) IS NULL THEN
            PERFORM distributed_lock_wake(key);
        END IF;
    END IF;
END $$;

-- distributed_lock_lazily lets the caller's transaction commit without
-- waiting for its WAL to reach disk (synchronous_commit off,
-- transaction-local, so it outlives the call) when lazy is true and the
-- server has no synchronous standbys (synchronous_standby_names, read at
-- each call so a reload takes effect): with them the session's setting
-- stands, and what was committed is on a standby before it is
-- acknowledged. A grant made later in the same transaction sets it on
-- again (a hand-off is durable, whatever its caller asked). Returns
-- set_config's answer (NULL when it set nothing), for the caller to
-- discard. A rule (02_rules.sql): one expression, no SET, so PostgreSQL
-- inlines it, and a release pays no call for it.
CREATE OR REPLACE FUNCTION distributed_lock_lazily(lazy boolean)
RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN lazy AND pg_catalog.current_setting('synchronous_standby_names') = ''
                THEN pg_catalog.set_config('synchronous_commit', 'off', true) END
$$;

-- distributed_lock_release frees owner's lease of key granted with token,
-- and keeps the row (see distributed_lock_acquire). One row
-- (distributed_lock_release_result): outcome 'released' with the lease as
-- it was, or 'not_held' (only lock_key set) when that grant is not current
-- or was already released (or was taken by another role). It sets only
-- released_at, which no index covers, so the update can be HOT. A lease
-- released after it ran out keeps its lock-delay (02_rules.sql,
-- distributed_lock_delay_end): the holder that let it lapse may have been
-- paused, and its release says nothing about writes made meanwhile.
--
-- When some may wait (wake_until, set by distributed_lock_enqueue, read
-- under the row lock, so no waiter is missed) it passes the key on
-- (distributed_lock_pass_on) in the same transaction.
--
-- With lazy_commit the transaction commits without waiting for its WAL to
-- reach disk (synchronous_commit off, transaction-local, so it outlives this
-- function): pass it only when the call is a transaction of its own. Safety
-- never rests on a release: one lost in a crash leaves a lease that expires
-- at its TTL, and any grant that saw the release commits durably after it,
-- which flushes the release too (WAL is flushed in order). But a server
-- with synchronous standbys (synchronous_standby_names set, read at each
-- call so a reload takes effect) keeps the session's synchronous_commit:
-- there the release is acknowledged only once a standby has it, so a
-- failover to that standby does not bring the lease back for its TTL; it
-- costs the release a round trip to the standby (docs/operations.md). With
-- log_release a "released" event is written (event_actor, default owner).
CREATE OR REPLACE FUNCTION distributed_lock_release(
    key text, owner text, token bigint, lazy_commit boolean DEFAULT false,
    log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS distributed_lock_release_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    res distributed_lock_release_result;
    ts timestamptz;
    wake timestamptz;
    follow_up boolean;
    lazily text; -- set_config's answer, unused
BEGIN
    -- The lazy commit is set in the statement, before any hand-off below
    -- sets it on again (a PERFORM would be a statement of its own).
    -- follow_up: the release is logged or someone may wait. Every test is an expression PL/pgSQL sets
    -- up once per transaction, so a release nobody waits for makes one.
    UPDATE distributed_lock l SET released_at = distributed_lock_now()
    WHERE l.lock_key = key AND l.slot = 0 AND l.owner_id = owner AND l.fence_token = token AND l.released_at IS NULL
      AND NOT distributed_lock_is_group(l) AND l.owner_role = session_user
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'released', l.wake_until,
              l.released_at, log_release OR coalesce(l.wake_until > l.released_at, false),
              distributed_lock_lazily(lazy_commit)
    INTO res.lock_key, res.owner_id, res.fence_token, res.expires_at, res.ttl, res.outcome, wake, ts,
         follow_up, lazily;
    IF FOUND AND NOT follow_up THEN
        RETURN res;
    END IF;
    IF NOT FOUND THEN
        -- Not an exclusive lease: a shared or semaphore holder's, perhaps.
        RETURN distributed_lock_release_slot(key, owner, token, lazy_commit, log_release, event_actor);
    END IF;
    IF log_release THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
        VALUES (ts, key, 'released', owner, token, coalesce(event_actor, owner));
    END IF;
    IF wake > ts THEN
        PERFORM distributed_lock_pass_on(key, ts);
    END IF;
    RETURN res;
END $$;

-- distributed_lock_release_slot decides distributed_lock_release of a
-- shared or semaphore holder's lease (owner's slot of key granted with
-- token; same arguments and answer): released, logged and its permit
-- handed to a waiter beside the other holders while another keeps the
-- group running (13_shared_release.sql), else ended under the row for
-- update (11_shared.sql), the now read once that lock is held, logged, and
-- passed on (distributed_lock_holders_ended). 'not_held' (only lock_key
-- set) when key has no such slot. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_release_slot(
    key text, owner text, token bigint, lazy_commit boolean, log_release boolean, event_actor text)
RETURNS distributed_lock_release_result
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    res distributed_lock_release_result;
    ts timestamptz;
    lazily text; -- set_config's answer, unused
BEGIN
    -- Before any hand-off below sets it on again: a simple expression.
    lazily := distributed_lock_lazily(lazy_commit);
    -- A key nobody ever waited for (wake_until NULL: its releases hand
    -- nothing off, distributed_lock_release_holder's first test) is ended
    -- under the row at once, without that call's subtransaction.
    IF EXISTS (SELECT 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND l.wake_until IS NOT NULL) THEN
        SELECT h.lock_key, h.owner_id, h.fence_token, h.expires_at, h.ttl, 'released'
        INTO res
        FROM distributed_lock_release_holder(key, owner, token, log_release, event_actor) h
        WHERE h.lock_key IS NOT NULL;
        IF FOUND THEN
            RETURN res;
        END IF;
    END IF;
    PERFORM 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    SELECT h.lock_key, h.owner_id, h.fence_token, h.expires_at, h.ttl, 'released'
    INTO res
    FROM distributed_lock_end_holders(key, owner, token, 'release', ts) h;
    IF NOT FOUND THEN
        res.lock_key := key;
        res.outcome := 'not_held';
        RETURN res;
    END IF;
    IF log_release THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
        VALUES (ts, key, 'released', owner, token, coalesce(event_actor, owner));
    END IF;
    PERFORM distributed_lock_holders_ended(key, ts);
    RETURN res;
END $$;

-- distributed_lock_fence proves, inside the caller's transaction, that
-- owner's grant token of key is still the current, unexpired one, and keeps
-- it so until that transaction ends: the row is locked FOR SHARE (row locks
-- belong to the transaction, not to this function), and every take-over
-- must lock the row for update, so no other owner can be granted the key
-- before the caller's guarded writes commit or roll back. The lease is
-- judged after the lock is taken. Returns whether the grant is current.
-- Call it inside a transaction.
CREATE OR REPLACE FUNCTION distributed_lock_fence(key text, owner text, token bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    held boolean;
BEGIN
    held := coalesce((
        SELECT distributed_lock_held(c.r, owner, session_user, c.ts)
        FROM (SELECT k.r, distributed_lock_now() AS ts
              FROM (SELECT z AS r FROM distributed_lock z
                    WHERE z.lock_key = key AND z.slot = 0 AND z.owner_id = owner AND z.fence_token = token
                      AND z.released_at IS NULL AND z.owner_role = session_user AND NOT distributed_lock_is_group(z)
                    FOR SHARE) k
              OFFSET 0) c), false);
    IF NOT held THEN
        -- A shared or semaphore holder's lease (11_shared.sql).
        held := distributed_lock_fence_holder(key, owner, token);
    END IF;
    RETURN held;
END $$;

-- distributed_lock_report_stale_write records that a write made with
-- owner's token on key was refused (by the fence or by a resource that
-- checks tokens); detail is a JSON object (e.g. {"resource": "ledger"}).
-- Returns the event's id. A key or detail outside the rules of a lock's
-- (1–255 bytes, a JSON object) is refused (23514). Any service may report
-- one, whoever holds the key (the resource that refused the write is often
-- another service's): event_actor is what the caller claims, and the event
-- records beside it the role that called (caller_role).
CREATE OR REPLACE FUNCTION distributed_lock_report_stale_write(
    key text, owner text, token bigint, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    id bigint;
BEGIN
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (distributed_lock_now(), key::distributed_lock_name, 'stale_write_rejected', owner, token,
            coalesce(event_actor, owner),
            coalesce(event_detail, '{}')::distributed_lock_metadata)
    RETURNING event_id INTO id;
    RETURN id;
END $$;
