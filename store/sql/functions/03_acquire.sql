-- distributed_lock_admit_owner refuses (23514, as a key or owner outside
-- the name rules is refused) an owner id that is a reserved word
-- (distributed_lock_reserved), where an owner enters the protocol: a grant,
-- a queue's record, a session. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_admit_owner(owner text)
RETURNS void
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    IF distributed_lock_reserved(owner) THEN
        RAISE EXCEPTION 'an owner id may not be a reserved word: %', owner USING ERRCODE = '23514';
    END IF;
END $$;

-- distributed_lock_grant_lease, the one grant write: lease row (key, s)
-- becomes a new lease of mode for owner, taken by role, of ttl until
-- expiry (a hand-off's claim window, a group's end), its token drawn under
-- the row's lock, its kind (acquired or stolen) and previous lease taken
-- from the row, with metadata, lock_delay and handed_to (the waiter a
-- hand-off grants it to). A grant anew (a caller's own attempt) writes
-- only a row that may be granted anew (distributed_lock_admits) to an
-- owner that is no reserved word, and passes over a row another
-- transaction has locked (SKIP LOCKED); a hand-off, a group's formation or
-- a slot's grant writes the row its caller has locked and judged. over is
-- the lease the grant takes the key from when that is not the row's own
-- (NULL: the row's): a group's first holder's slot, the group formed over
-- a lease that ran out unreleased, takes the key from that lease, and the
-- grant's kind (stolen) and previous lease say so, decided here once.
-- Returns the row granted, NULL columns when none was. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_grant_lease(
    key text, s integer, anew boolean, mode text, owner text, role text, lease_ttl interval,
    expiry timestamptz, lease_metadata jsonb, delay interval, handed bigint, ts timestamptz,
    over distributed_lock DEFAULT NULL)
RETURNS distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    g distributed_lock;
BEGIN
    UPDATE distributed_lock l SET
        lock_mode = mode, owner_id = owner, owner_role = role,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = expiry, ttl = lease_ttl, acquired_at = ts, renewed_at = NULL, renew_count = 0,
        released_at = NULL,
        grant_kind = CASE WHEN over.lock_key IS NULL THEN distributed_lock_grant_kind(l, owner, role)
                          ELSE distributed_lock_grant_kind(over, owner, role) END,
        previous_owner = CASE WHEN over.lock_key IS NOT NULL THEN over.owner_id
                              WHEN distributed_lock_ever_held(l) THEN l.owner_id END,
        previous_token = CASE WHEN over.lock_key IS NOT NULL THEN over.fence_token
                              WHEN distributed_lock_ever_held(l) THEN l.fence_token END,
        metadata = coalesce(lease_metadata, '{}'), lock_delay = delay, delay_until = NULL, handed_to = handed
    -- The key under the column's collation: the parameters take the
    -- call's (session_user's is "C"), under which the primary key's index
    -- cannot serve the comparison.
    WHERE l.lock_key = key COLLATE "default"
      AND l.slot = (SELECT x.slot FROM distributed_lock x
                    WHERE x.lock_key = key COLLATE "default" AND x.slot = s
                      AND (NOT anew OR (distributed_lock_admits(x, mode, NULL, NULL, ts) AND NOT distributed_lock_reserved(owner)))
                    FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING l.* INTO g;
    RETURN g;
END $$;

-- distributed_lock_acquire makes one attempt to take key for owner, for
-- ttl_us microseconds from the database's clock. It never waits: a row
-- another transaction has locked is not waited for (SKIP LOCKED), the
-- attempt is refused. One row (distributed_lock_acquire_result), always:
--   outcome  'acquired' (a new or free row), 'stolen' (another owner's
--            expired lease), 'renewed' (owner already held it: same token,
--            later expiry) when granted; 'held' when another owner's lease
--            runs (remaining says how long); 'delayed' when the row is
--            free or lapsed but its last lease's lock-delay still runs
--            (delay_until says until when); 'queued' when the row is free
--            or lapsed but promised to the waiters queued for it (see
--            distributed_lock_enqueue); 'free', 'expired' or 'busy' when
--            another transaction was changing or creating the key's row at
--            that moment (try again shortly; for 'busy' only lock_key is
--            set).
--   lock_key, owner_id, fence_token, expires_at, ttl: the grant, or the
--            row that refused it.
--   queue_length, delay_until: on a refusal only (NULL on a grant), how
--            many live waiters are queued for the key, and when a lock-delay
--            ends ('delayed' only).
-- A new grant carries lock_delay_us: when its lease ends without a release
-- by its holder, nobody is granted the key for that long (02_rules.sql).
-- Steals are logged as events; with log_grants every new grant is.
-- event_actor defaults to owner.
--
-- The grant comes first and alone: the one grant write, anew, of a key
-- that has a row and may be granted anew, its result read straight into
-- the result row. It is distributed_lock_grant_lease's UPDATE, inline:
-- called, that function costs the exclusive cycle about 70 K backend
-- instructions more, a sixth (a second executor and a whole row passed
-- back: BENCHMARKS.md); store's TestOneGrantWrite holds the two to the
-- same columns. Its previous lease is the row's without asking
-- distributed_lock_ever_held (11 K more a cycle): a row made to be
-- granted is granted in the transaction that made it, so every row this
-- statement can see has been held. Only when it
-- granted nothing is the row read again, in a statement of its own that
-- refuses the common case, an exclusive key another owner's lease or a
-- grant in flight keeps, saying why. Otherwise
-- the caller's own running lease becomes a renewal (the two rules together
-- are distributed_lock_may_take), a key without a row its first grant
-- (distributed_lock_first_grant), and a shared or semaphore key's row is
-- judged by its group's leases (11_shared.sql). Only a logged grant writes
-- an event. A grant that also carried its refusal (a CTE and a UNION ALL
-- over the row) cost every grant the setup of the refusal's plan: about an
-- eighth fewer cycles at 32 workers (BENCHMARKS.md).
CREATE OR REPLACE FUNCTION distributed_lock_acquire(
    key text, owner text, ttl_us bigint, lease_metadata jsonb DEFAULT NULL,
    event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL, log_grants boolean DEFAULT false,
    lock_delay_us bigint DEFAULT 0)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := distributed_lock_now();
    res distributed_lock_acquire_result;
BEGIN
    UPDATE distributed_lock l SET
        lock_mode = 'exclusive', owner_id = owner, owner_role = session_user,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = ts + distributed_lock_us(ttl_us), ttl = distributed_lock_us(ttl_us), acquired_at = ts,
        renewed_at = NULL, renew_count = 0, released_at = NULL,
        grant_kind = distributed_lock_grant_kind(l, owner, session_user),
        previous_owner = l.owner_id, previous_token = l.fence_token, -- every row it sees was held
        metadata = coalesce(lease_metadata, '{}'), lock_delay = distributed_lock_us(lock_delay_us),
        delay_until = NULL, handed_to = NULL
    WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                        WHERE x.lock_key = key AND x.slot = 0 AND distributed_lock_admits(x, 'exclusive', NULL, NULL, ts)
                          AND NOT distributed_lock_reserved(owner)
                        FOR NO KEY UPDATE SKIP LOCKED)
      AND l.slot = 0
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.grant_kind, interval '0', NULL, NULL
    INTO res;
    -- Every test on the way out of a grant is one more expression to set
    -- up per call (PL/pgSQL prepares each once per transaction): one here.
    IF FOUND AND res.outcome <> 'stolen' AND NOT log_grants THEN
        RETURN res;
    END IF;
    IF FOUND THEN
        INSERT INTO distributed_lock_event
            (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
        SELECT ts, key, res.outcome, res.owner_id, res.fence_token, coalesce(event_actor, owner),
               l.previous_owner, l.previous_token, coalesce(event_detail, '{}')
        FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
        RETURN res;
    END IF;
    -- Refused, a first grant, a group's key or a renewal: the rare paths,
    -- set up only by calls the grant above did not serve.
    RETURN distributed_lock_acquire_otherwise(key, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                              log_grants, lock_delay_us, ts);
END $$;

-- distributed_lock_acquire_otherwise decides distributed_lock_acquire's
-- attempt when its grant anew, at ts, granted nothing: a refusal of an
-- exclusive key (the common case, one statement), a key's first grant
-- (distributed_lock_first_grant), a shared or semaphore key's row judged
-- by its group's leases (11_shared.sql), or owner's own running lease
-- renewed (distributed_lock_renew_own). Same arguments and answer as
-- acquire. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_acquire_otherwise(
    key text, owner text, ttl_us bigint, lease_metadata jsonb, event_actor text, event_detail jsonb,
    log_grants boolean, lock_delay_us bigint, ts timestamptz)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    res distributed_lock_acquire_result;
    r distributed_lock;
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    -- One statement, not an expression each (each costs its setup in every
    -- transaction). No waiter is live past wake_until (05_queue.sql).
    SELECT l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, distributed_lock_refusal(l, ts),
           l.expires_at - ts,
           CASE WHEN l.wake_until > ts THEN distributed_lock_queue_length(key, ts) ELSE 0 END,
           CASE WHEN distributed_lock_delayed(l, ts) THEN distributed_lock_delay_end(l) END
    INTO res
    FROM distributed_lock l
    WHERE l.lock_key = key AND l.slot = 0 AND NOT distributed_lock_is_group(l)
      AND NOT distributed_lock_held(l, owner, session_user, ts);
    IF FOUND THEN
        RETURN res;
    END IF;
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    IF NOT FOUND THEN
        RETURN distributed_lock_first_grant(key, owner, ttl_us, lease_metadata, lock_delay_us, event_actor,
                                            event_detail, log_grants);
    END IF;
    IF distributed_lock_is_group(r) AND NOT distributed_lock_open(r, ts) THEN
        -- A group's row (11_shared.sql): granted once the group has ended,
        -- here if its last holders lapsed; else refused until its holders'
        -- last expiry.
        IF distributed_lock_end_lapsed_group(key, ts) THEN
            -- Anew, with a now of its own: passing the key on may have
            -- waited (distributed_lock_pass_on) and handed it to a waiter.
            RETURN distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail,
                                            log_grants, lock_delay_us);
        END IF;
        r.expires_at := distributed_lock_lease_end(r);
    END IF;
    res := ROW(r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, NULL, r.expires_at - ts, NULL, NULL);
    IF distributed_lock_held(r, owner, session_user, ts) THEN
        RETURN distributed_lock_renew_own(res, owner, ttl_us, lease_metadata, ts);
    END IF;
    res.outcome := distributed_lock_refusal(r, ts);
    res.queue_length := distributed_lock_queue_length(key, ts);
    IF res.outcome = 'delayed' THEN
        res.delay_until := distributed_lock_delay_end(r);
    END IF;
    RETURN res;
END $$;

-- distributed_lock_renew_own decides an acquire by the holder of the key
-- of res (its row as acquire found it, at ts): owner holds the key (as the
-- caller's role: another role's lease of the same owner name is refused
-- as another's), so the lease is renewed, same token, for ttl_us with
-- lease_metadata ('renewed'), unless another transaction has the row
-- locked ('held'); no further than a revoke's deadline. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_renew_own(
    res distributed_lock_acquire_result, owner text, ttl_us bigint, lease_metadata jsonb, ts timestamptz)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    key text := res.lock_key;
BEGIN
    UPDATE distributed_lock l SET
        expires_at = ts + distributed_lock_us(ttl_us),
        ttl = distributed_lock_us(ttl_us),
        renewed_at = ts,
        renew_count = l.renew_count + 1,
        metadata = coalesce(lease_metadata, '{}')
    WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                        WHERE x.lock_key = key AND x.slot = 0 AND distributed_lock_held(x, owner, session_user, ts)
                        FOR NO KEY UPDATE SKIP LOCKED)
      AND l.slot = 0
    RETURNING l.expires_at, l.ttl INTO res.expires_at, res.ttl;
    IF FOUND THEN
        -- No further than a revoke's deadline, as any renewal.
        res.expires_at := distributed_lock_revoke_cap(key, res.fence_token, res.expires_at);
        res.outcome := 'renewed';
        res.remaining := interval '0';
    ELSE
        res.outcome := 'held';
        res.queue_length := distributed_lock_queue_length(key, ts);
    END IF;
    RETURN res;
END $$;

-- distributed_lock_make_row inserts lease row (key, s), which has none,
-- as a row made to be granted (distributed_lock_ever_held: owner '*',
-- released as it is made, token 0), for the caller to grant at once in its
-- transaction (distributed_lock_grant_lease), so that nobody else ever
-- sees it. The one insert of a lease. False when a concurrent insert made
-- the row first (ON CONFLICT waits for its transaction). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_make_row(key text, s integer, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO distributed_lock (lock_key, slot, owner_id, fence_token, ttl, acquired_at, expires_at, released_at)
    VALUES (key, s, '*', 0, interval '1 second', ts, ts, ts)
    ON CONFLICT (lock_key, slot) DO NOTHING;
    RETURN FOUND;
END $$;

-- distributed_lock_first_grant decides distributed_lock_acquire's first
-- grant of key, which has no row: its row made (distributed_lock_make_row)
-- and granted (distributed_lock_grant_lease) under the prune gate (a lock
-- on distributed_lock_prune_gate that first grants share and
-- distributed_lock_prune excludes), so deleting rows can never let a key's
-- tokens go backwards (see there), logged as acquire logs a grant (at the
-- grant's instant: its now is its own). Acquire's answer: 'acquired', or
-- 'busy' (only lock_key set) when a concurrent first grant made the row.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_first_grant(
    key text, owner text, ttl_us bigint, lease_metadata jsonb, lock_delay_us bigint, event_actor text,
    event_detail jsonb, log_grants boolean)
RETURNS distributed_lock_acquire_result
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz;
    res distributed_lock_acquire_result;
BEGIN
    LOCK TABLE distributed_lock_prune_gate IN ROW EXCLUSIVE MODE;
    -- A now of its own, after the gate, which a prune holds while it
    -- deletes: the lease runs its whole TTL from when it is made.
    ts := distributed_lock_now();
    IF NOT distributed_lock_make_row(key, 0, ts) THEN
        -- Another transaction's first grant of the key won the insert.
        res.lock_key := key;
        res.outcome := 'busy';
        RETURN res;
    END IF;
    SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl, 'acquired', interval '0'
    INTO res.lock_key, res.owner_id, res.fence_token, res.expires_at, res.ttl, res.outcome, res.remaining
    FROM distributed_lock_grant_lease(key, 0, false, 'exclusive', owner, session_user, distributed_lock_us(ttl_us),
                                      ts + distributed_lock_us(ttl_us), lease_metadata,
                                      distributed_lock_us(lock_delay_us), NULL, ts) g;
    IF log_grants THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
        VALUES (ts, key, res.outcome, res.owner_id, res.fence_token, coalesce(event_actor, owner),
                coalesce(event_detail, '{}'));
    END IF;
    RETURN res;
END $$;
