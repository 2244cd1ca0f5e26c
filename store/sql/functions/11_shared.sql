-- Shared leases and semaphores (docs/design.md, "Shared leases and
-- semaphores"). A key taken shared has any number of holders at once, a
-- semaphore key at most its permits; each holder has a lease of its own,
-- a slot of the key's rows in distributed_lock (slot 1 and up: owner,
-- token, TTL, as any lease), renewed, released,
-- fenced and forced by its token through the same functions as an
-- exclusive lease (04_lease.sql, 06_operator.sql).
--
-- While a key has, or may have, holders, its lock row is the group's:
-- lock_mode 'shared' or 'semaphore', owner '*', its own token, unreleased
-- and expiring only in the far future. Every rule about the lock row
-- therefore sees the key held, and an exclusive grant, a set, a hand-off or
-- prune never reads the slots. The group ends (distributed_lock_settle)
-- once no slot is held: the release or force that ends the last lease ends
-- it, and an exclusive acquire or a waiter's check ends a group whose last
-- holders lapsed. Its row is then free, and keeps lock_mode and permits.
--
-- Lock order: the lock row, then slots. A holder's grant and renewal lock
-- the group's row FOR SHARE, so they run side by side; what changes the
-- group (forming it, a release, a force, ending it) locks it FOR NO KEY
-- UPDATE. A holder's fence locks the row FOR SHARE as well as its slot, so
-- neither an exclusive grant (which must lock the row for update) nor the
-- re-grant of its slot commits before the fenced writes.
--
-- Tokens: every slot's token is drawn from the one sequence while the grant
-- holds the row, and an exclusive grant can take the row only after every
-- transaction that drew one ended, so an exclusive grant's token is above
-- every holder's before it, and a holder's above every exclusive grant's.

-- distributed_lock_group_end: the far-future expiry of a group's row.
-- This rule and the next are STABLE, not IMMUTABLE, though their answers
-- never change: the planner runs an IMMUTABLE function of constants (as a
-- custom plan's parameters are) to fold it, and running an SQL function
-- means planning its body, at every custom plan; a STABLE one it inlines,
-- and the expression folds all the same.
CREATE OR REPLACE FUNCTION distributed_lock_group_end()
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT timestamptz '9999-01-01 00:00:00+00'
$$;

-- distributed_lock_runs_group: key row l is the row of a running group of
-- the kind a lease of n permits asks for (NULL: a shared lease): its mode
-- and permits, unreleased, expiring only when the group ends.
CREATE OR REPLACE FUNCTION distributed_lock_runs_group(l distributed_lock, n integer)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_of_kind(l, n) AND l.released_at IS NULL AND l.expires_at = distributed_lock_group_end()
$$;

-- distributed_lock_live_holders: how many slots of key hold a lease at ts.
CREATE OR REPLACE FUNCTION distributed_lock_live_holders(key text, ts timestamptz)
RETURNS integer LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT count(*) FROM distributed_lock h
            WHERE h.lock_key = key AND h.slot > 0 AND distributed_lock_live(h, ts));
END $$;

-- distributed_lock_queued_ahead: l, a running group, admits no new lease
-- of its kind now (distributed_lock_admits: live waiters are queued for
-- it) and owner (as the caller's role) holds none of its slots: a shared
-- lease or a permit granted to owner now would overtake them (a writer waiting for the readers to end,
-- say). A holder's renewal overtakes nobody, as an exclusive holder's does
-- not.
CREATE OR REPLACE FUNCTION distributed_lock_queued_ahead(l distributed_lock, owner text, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- PL/pgSQL, as live_holders: its subquery keeps an SQL body from
    -- being inlined, and every permit waiter's enqueue asks.
    RETURN NOT distributed_lock_admits(l, l.lock_mode, l.permits, NULL, ts)
           AND NOT EXISTS (SELECT 1 FROM distributed_lock x
                           WHERE x.lock_key = l.lock_key AND x.slot > 0
                             AND distributed_lock_held(x, owner, session_user, ts));
END $$;

-- distributed_lock_settle ends key's group when no slot holds a lease at
-- ts: the row is released (keeping lock_mode and permits) and passed on to
-- the head of the queue. The caller holds the row FOR NO KEY UPDATE; the
-- count is a statement of its own, so it sees every holder committed
-- before that lock. Returns whether it ended the group. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_settle(key text, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    wake timestamptz;
BEGIN
    -- An upgrade at the head whose lease is the last live one: that lease
    -- ends here, and the key goes to the upgrade (17_convert.sql).
    IF distributed_lock_live_holders(key, ts) > 0 AND NOT distributed_lock_upgrade_due(key, ts) THEN
        RETURN false;
    END IF;
    UPDATE distributed_lock l SET released_at = ts, expires_at = ts
    WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) AND l.released_at IS NULL
    RETURNING l.wake_until INTO wake;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Leases that ran out end with their group: a later group's grant of
    -- their slots takes them from nobody.
    UPDATE distributed_lock s SET released_at = ts
    WHERE s.lock_key = key AND s.slot > 0 AND s.released_at IS NULL;
    IF wake > ts THEN
        PERFORM distributed_lock_pass_on(key, ts);
    END IF;
    RETURN true;
END $$;

-- distributed_lock_end_lapsed_group ends key's group, whose holders all
-- lapsed, for an exclusive acquire, which takes the row for update only
-- if no other transaction has it (SKIP LOCKED: a lapsed holder's fence
-- keeps the group until its transaction ends). Returns whether it ended it.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_end_lapsed_group(key text, ts timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN distributed_lock_live_holders(key, ts) = 0
        AND EXISTS (SELECT 1 FROM distributed_lock x WHERE x.lock_key = key AND x.slot = 0 FOR NO KEY UPDATE SKIP LOCKED)
        AND distributed_lock_settle(key, ts);
END $$;

-- distributed_lock_form_group makes key's row, which the caller has locked
-- FOR NO KEY UPDATE (or just inserted) and which no lease holds, the row of
-- a group of mode with permits n (NULL for shared): owner '*', a token of
-- its own. A semaphore whose permits change is recorded
-- ('permits_changed', by actor, a claim of actor_role's: the role of the
-- caller, or of the waiter for whom it forms). Returns whether it ended a
-- lease that ran out unreleased (its first holder's grant is then a
-- steal). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_form_group(
    r distributed_lock, mode text, n integer, ts timestamptz, ttl_us bigint, actor text, actor_role text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    -- The key's capacity, then its lease: the group's own, of the role
    -- whose lease the row last carried.
    UPDATE distributed_lock l SET permits = n WHERE l.lock_key = r.lock_key AND l.slot = 0;
    PERFORM distributed_lock_grant_lease(r.lock_key, 0, false, mode, '*', r.owner_role, distributed_lock_us(ttl_us),
                                         distributed_lock_group_end(), NULL, interval '0', NULL, ts);
    IF n IS NOT NULL AND r.permits IS DISTINCT FROM n AND r.permits IS NOT NULL THEN
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, actor, caller_role, detail)
        VALUES (ts, r.lock_key, 'permits_changed', NULL, actor, actor_role,
                jsonb_build_object('permits', n, 'previous_permits', r.permits));
    END IF;
    RETURN r.released_at IS NULL;
END $$;

-- distributed_lock_take_slot grants owner a slot of key's group (whose row
-- the caller holds), a lease of role's (the caller's, or for a hand-off
-- the role that queued the waiter): a slot whose lease was released or ran out, the lowest
-- first (SKIP LOCKED: a slot another transaction has locked, such as its
-- lapsed holder's fence, is passed over), else a new slot if the group has
-- room (n: the permits; NULL: no bound), taking the key from lease over
-- when that is not the slot's own (distributed_lock_grant_lease). Returns
-- the slot's row, or NULL
-- columns when none is free (h.slot NULL) or a concurrent grant created the
-- same new slot (h.slot -1). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_take_slot(
    key text, owner text, role text, ttl_us bigint, n integer, lease_metadata jsonb, ts timestamptz,
    over distributed_lock DEFAULT NULL)
RETURNS distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
    next integer;
BEGIN
    -- The key under the column's collation, as distributed_lock_grant_lease
    -- compares it (a caller's role, session_user, gives the call "C").
    SELECT x.slot INTO next FROM distributed_lock x
    WHERE x.lock_key = key COLLATE "default" AND x.slot > 0 AND (n IS NULL OR x.slot <= n) AND NOT distributed_lock_live(x, ts)
    ORDER BY x.slot LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED;
    -- Else a new slot. Two grants that number the same one: the second
    -- waits for the first to commit (ON CONFLICT does), and numbers the
    -- next in a statement of its own, which sees it.
    FOR attempt IN 1..3 LOOP
        EXIT WHEN next IS NOT NULL;
        next := (SELECT max(x.slot) + 1 FROM distributed_lock x WHERE x.lock_key = key COLLATE "default");
        IF n IS NOT NULL AND next > n THEN
            RETURN h;
        END IF;
        IF NOT distributed_lock_make_row(key, next, ts) THEN
            next := NULL;
        END IF;
    END LOOP;
    IF next IS NULL THEN
        h.slot := -1;
        RETURN h;
    END IF;
    RETURN distributed_lock_grant_lease(key, next, false, distributed_lock_holder_mode(n), owner, role,
                                        distributed_lock_us(ttl_us), ts + distributed_lock_us(ttl_us),
                                        lease_metadata, interval '0', NULL, ts, over);
END $$;

-- distributed_lock_acquire_shared makes one attempt to take key shared
-- (permits NULL) or as one of the permits of a semaphore, for owner, for
-- ttl_us microseconds from the database's clock. One row, always:
--   outcome  'acquired' (a free slot, or a new one), 'stolen' (the slot of
--            another holder whose lease ran out, or a key whose exclusive
--            lease, another owner's, ran out), 'renewed' (owner already held
--            a slot of the key: same token, later expiry, even with waiters
--            queued) when granted;
--            'held' when an exclusive lease runs, or every permit is held
--            (remaining: until the first of them ends); 'delayed' in an
--            exclusive lease's lock-delay; 'queued' when waiters are queued
--            for the key (a queued writer is not overtaken by readers);
--            'conflict' when holders of another mode, or of a semaphore
--            with other permits, hold it (lock_mode and key_permits say
--            which); 'busy' when another transaction was changing the key's
--            row (try again shortly).
--   lock_key, owner_id, fence_token, expires_at, ttl: the holder's lease,
--            or on a refusal the row (or first-ending permit) that refused.
--   lock_mode, key_permits: the key's mode and permits.
--   queue_length, holders: on a refusal (but busy), how many live waiters
--            are queued for the key, and how many leases hold it.
-- A grant is logged (its detail names mode, permits and slot; a steal's,
-- the lease it ended) when it is a steal or with log_grants. Forming the group, or changing a free
-- semaphore's permits, waits for no one: a row another transaction holds
-- is refused as busy. A grant into a running group of the same mode locks
-- the row FOR SHARE, beside the other holders' grants, waiting only for a
-- protocol call that changes the group (a release) to commit.
--
-- A grant that joins a running group of its kind is first tried in one
-- statement (distributed_lock_join_group); forming a group, a new or
-- lapsed slot, a renewal, a refusal or a logged grant take the path below.
CREATE OR REPLACE FUNCTION distributed_lock_acquire_shared(
    key text, owner text, ttl_us bigint, permits integer DEFAULT NULL,
    lease_metadata jsonb DEFAULT NULL, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL,
    log_grants boolean DEFAULT false,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT remaining interval, OUT queue_length integer,
    OUT lock_mode text, OUT key_permits integer, OUT holders integer)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    mode text := distributed_lock_holder_mode(permits);
    n distributed_lock_permits := permits; -- 1-1000 (23514) before the key is read: a conflict's too
    ts timestamptz;
    r distributed_lock;
    joining boolean;
    made record;
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    lock_key := key;
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0;
    joining := r.lock_key IS NOT NULL AND distributed_lock_runs_group(r, n);
    IF r.lock_key IS NULL THEN
        PERFORM distributed_lock_create_free(key, '*', ttl_us);
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE SKIP LOCKED;
    ELSIF joining THEN
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR SHARE;
    ELSE
        SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 FOR NO KEY UPDATE SKIP LOCKED;
    END IF;
    ts := distributed_lock_now();
    IF joining AND NOT log_grants THEN
        SELECT j.owner_id, j.fence_token, j.expires_at, j.ttl, j.grant_kind, interval '0', r.lock_mode, r.permits
        INTO owner_id, fence_token, expires_at, ttl, outcome, remaining, lock_mode, key_permits
        FROM distributed_lock_join_group(r, owner, ttl_us, n, lease_metadata, ts) j WHERE j.lock_key IS NOT NULL;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    IF r.lock_key IS NULL THEN
        outcome := 'busy';
        RETURN;
    END IF;
    lock_mode := r.lock_mode; key_permits := r.permits;
    SELECT * INTO made FROM distributed_lock_make_group(r, joining, n, owner, ttl_us, event_actor, ts) m;
    IF made.outcome IS NOT NULL THEN
        owner_id := made.owner_id; fence_token := made.fence_token; expires_at := made.expires_at; ttl := made.ttl;
        remaining := made.remaining; outcome := made.outcome; queue_length := made.queue_length;
        holders := made.holders;
        RETURN;
    END IF;
    IF made.formed THEN
        lock_mode := mode; key_permits := n;
    END IF;
    SELECT g.owner_id, g.fence_token, g.expires_at, g.ttl, g.outcome, g.remaining, g.holders, g.queue_length
    INTO owner_id, fence_token, expires_at, ttl, outcome, remaining, holders, queue_length
    FROM distributed_lock_grant_slot(key, owner, ttl_us, lock_mode, key_permits, lease_metadata, ts,
                                     CASE WHEN made.stole THEN r END, event_actor, event_detail, log_grants) g;
END $$;

-- distributed_lock_join_group grants owner, as the caller's role, the
-- lowest released slot of the running group whose row r the caller holds
-- FOR SHARE, in one statement, at ts, for ttl_us with lease_metadata: when
-- the group admits a new lease of its kind (distributed_lock_admits: not
-- promised to waiters), owner is no reserved word and holds none of its
-- slots. The one grant write inline (as distributed_lock_acquire's, and
-- for its reason: store's TestOneGrantWrite holds it to
-- distributed_lock_grant_lease's columns). A released slot's lease is no
-- steal, and its row has been held (a slot is made in the transaction
-- that grants it), so its previous lease is the row's. Returns the slot
-- granted, or NULL columns: the caller's rare paths decide. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_join_group(
    r distributed_lock, owner text, ttl_us bigint, n integer, lease_metadata jsonb, ts timestamptz)
RETURNS distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
BEGIN
    UPDATE distributed_lock s SET
        lock_mode = r.lock_mode, owner_id = owner, owner_role = session_user,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = ts + distributed_lock_us(ttl_us), ttl = distributed_lock_us(ttl_us), acquired_at = ts,
        renewed_at = NULL, renew_count = 0, released_at = NULL,
        grant_kind = distributed_lock_grant_kind(s, owner, session_user),
        previous_owner = s.owner_id, previous_token = s.fence_token, -- a released slot was held
        metadata = coalesce(lease_metadata, '{}'), lock_delay = interval '0', delay_until = NULL, handed_to = NULL
    WHERE s.lock_key = r.lock_key
      AND s.slot = (SELECT x.slot FROM distributed_lock x
                    WHERE distributed_lock_runs_group(r, n) AND distributed_lock_admits(r, r.lock_mode, n, NULL, ts) AND NOT distributed_lock_reserved(owner)
                      AND NOT EXISTS (SELECT 1 FROM distributed_lock y
                                      WHERE y.lock_key = r.lock_key AND y.slot > 0
                                        AND distributed_lock_held(y, owner, session_user, ts))
                      AND x.lock_key = r.lock_key AND x.slot > 0 AND (n IS NULL OR x.slot <= n)
                      AND x.released_at IS NOT NULL
                    ORDER BY x.slot LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING s.* INTO h;
    RETURN h;
END $$;

-- distributed_lock_make_group decides whether owner may take a lease of n
-- permits (NULL: shared) of key row r (locked by the caller: FOR SHARE
-- when joining a group seen running) at ts, and makes the row that group
-- when it must: a row no group runs on, which may be granted anew, becomes
-- the group of that kind (formed; stole: over a lease of another owner's
-- that ran out unreleased); so does another kind's group with no holders,
-- queue or share lock in the way. A running group of that kind admits
-- owner unless live waiters are queued ahead of it. outcome NULL: admitted;
-- else the refusal, as distributed_lock_acquire_shared answers it. Forming
-- needs the row for update: a row seen running and found ended, or
-- changing kind, under a share lock is 'busy'. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_make_group(
    r distributed_lock, joining boolean, n integer, owner text, ttl_us bigint, event_actor text, ts timestamptz,
    OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz, OUT ttl interval,
    OUT remaining interval, OUT outcome text, OUT queue_length integer, OUT holders integer,
    OUT formed boolean, OUT stole boolean)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    mode text := distributed_lock_holder_mode(n);
BEGIN
    formed := false;
    stole := false;
    IF NOT distributed_lock_is_group(r) OR distributed_lock_open(r, ts) THEN
        -- No group runs: the row is an exclusive lease, free or held.
        IF NOT distributed_lock_admits(r, mode, n, NULL, ts) THEN
            SELECT a.owner_id, a.fence_token, a.expires_at, a.ttl, a.remaining, a.outcome
            INTO owner_id, fence_token, expires_at, ttl, remaining, outcome
            FROM distributed_lock_refuse(r, ts) a;
            queue_length := distributed_lock_queue_length(r.lock_key, ts);
            holders := CASE WHEN distributed_lock_open(r, ts) THEN 0 ELSE 1 END;
            RETURN;
        END IF;
        IF joining IS NOT DISTINCT FROM true THEN
            -- Seen running, found ended: forming needs the row for update.
            outcome := 'busy';
            RETURN;
        END IF;
        -- A lease of owner's own that ran out is not stolen from it, as
        -- for an exclusive grant (distributed_lock_grant_kind).
        stole := distributed_lock_form_group(r, mode, n, ts, ttl_us, coalesce(event_actor, owner), session_user)
                 AND r.owner_id <> owner;
        formed := true;
    ELSIF NOT distributed_lock_of_kind(r, n) THEN
        -- Another kind of group: refused while it has holders, re-formed
        -- in this mode once it has none (needs the row for update).
        -- A refusal names the row, and the queue, as every refusal does.
        holders := distributed_lock_live_holders(r.lock_key, ts);
        IF holders > 0 OR joining OR distributed_lock_promised(r, ts) THEN
            owner_id := r.owner_id; fence_token := r.fence_token;
            outcome := CASE WHEN holders > 0 THEN 'conflict' WHEN joining THEN 'busy' ELSE 'queued' END;
            queue_length := distributed_lock_queue_length(r.lock_key, ts);
            RETURN;
        END IF;
        PERFORM distributed_lock_form_group(r, mode, n, ts, ttl_us, coalesce(event_actor, owner), session_user);
        formed := true;
        holders := NULL; -- counted for a refusal only
    ELSIF distributed_lock_queued_ahead(r, owner, ts) THEN
        outcome := 'queued';
        owner_id := r.owner_id; fence_token := r.fence_token;
        queue_length := distributed_lock_queue_length(r.lock_key, ts);
        holders := distributed_lock_live_holders(r.lock_key, ts);
    END IF;
END $$;

-- distributed_lock_grant_slot is distributed_lock_acquire_shared's grant,
-- once the key's row is its group's (mode, n permits) and held by the
-- caller: owner's own running slot renewed ('renewed', same token), else a
-- slot taken (distributed_lock_take_slot), logged when it is a steal or
-- with log_grants. over is the lease that ran out unreleased over which the
-- caller formed the group (NULL: none): the first holder's grant took the
-- key from it ('stolen'). With no room: 'held', the lease that ends first,
-- or 'busy'. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_grant_slot(
    key text, owner text, ttl_us bigint, mode text, n integer, lease_metadata jsonb, ts timestamptz,
    over distributed_lock, event_actor text, event_detail jsonb, log_grants boolean,
    OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz, OUT ttl interval,
    OUT outcome text, OUT remaining interval, OUT holders integer, OUT queue_length integer)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
    key_permits integer := n;
    lock_mode text := mode;
BEGIN
    -- owner's own running slot: a renewal, same token.
    UPDATE distributed_lock s SET
        expires_at = ts + distributed_lock_us(ttl_us), ttl = distributed_lock_us(ttl_us),
        renewed_at = ts, renew_count = s.renew_count + 1, metadata = coalesce(lease_metadata, s.metadata)
    WHERE (s.lock_key, s.slot) = (SELECT x.lock_key, x.slot FROM distributed_lock x
                                  WHERE x.lock_key = key AND x.slot > 0 AND distributed_lock_held(x, owner, session_user, ts)
                                  LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING s.* INTO h;
    IF FOUND THEN
        outcome := 'renewed';
    ELSE
        h := distributed_lock_take_slot(key, owner, session_user, ttl_us, key_permits, lease_metadata, ts, over);
        IF h.slot IS NULL OR h.slot < 0 THEN
            -- Every permit held (or a slot created under this grant).
            SELECT x.owner_id, x.fence_token, x.expires_at, x.ttl INTO owner_id, fence_token, expires_at, ttl
            FROM distributed_lock x
            WHERE x.lock_key = key AND x.slot > 0 AND distributed_lock_live(x, ts)
            ORDER BY x.expires_at LIMIT 1;
            outcome := CASE WHEN h.slot IS NULL THEN 'held' ELSE 'busy' END;
            remaining := expires_at - ts;
            holders := distributed_lock_live_holders(key, ts);
            queue_length := distributed_lock_queue_length(key, ts);
            RETURN;
        END IF;
        outcome := h.grant_kind;
        IF outcome = 'stolen' OR log_grants THEN
            INSERT INTO distributed_lock_event
                (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
            VALUES (ts, key, outcome, owner, h.fence_token, coalesce(event_actor, owner),
                    CASE WHEN outcome = 'stolen' THEN h.previous_owner END,
                    CASE WHEN outcome = 'stolen' THEN h.previous_token END,
                    coalesce(event_detail, '{}') || jsonb_strip_nulls(jsonb_build_object(
                        'mode', lock_mode, 'permits', key_permits, 'slot', h.slot)));
        END IF;
    END IF;
    owner_id := h.owner_id; fence_token := h.fence_token; expires_at := h.expires_at; ttl := h.ttl;
    remaining := interval '0';
END $$;

-- distributed_lock_refuse: why a grant of row r (which may not be granted
-- anew at ts) is refused, with the row's lease: what distributed_lock_acquire
-- answers a caller who does not hold it. Internal: its path is pinned as
-- every internal function's is (a record result is never inlined anyway).
CREATE OR REPLACE FUNCTION distributed_lock_refuse(r distributed_lock, ts timestamptz,
    OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz, OUT ttl interval,
    OUT remaining interval, OUT outcome text)
RETURNS record
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT r.owner_id, r.fence_token, r.expires_at, r.ttl, r.expires_at - ts, distributed_lock_refusal(r, ts)
$$;

-- A holder's lease after its grant: distributed_lock_renew, _release,
-- _fence, _force_expire and _force_release call these when the token they
-- were given is not the exclusive lease of key's row. Each takes the row
-- first, then the slot (lock order), and answers as its caller does.

-- distributed_lock_renew_holder extends owner's slot of key granted with
-- token by ttl_us from the database's now (after the locks), while it
-- holds. The row FOR SHARE: renewals run beside the holders' grants.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_renew_holder(key text, owner text, token bigint, ttl_us bigint)
RETURNS distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
BEGIN
    PERFORM 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR SHARE;
    -- The slot locked, then judged with a now read after that lock (the
    -- subquery OFFSET 0 reads it above the lock), in the one statement.
    UPDATE distributed_lock s SET
        expires_at = c.ts + distributed_lock_us(ttl_us), ttl = distributed_lock_us(ttl_us),
        renewed_at = c.ts, renew_count = s.renew_count + 1
    FROM (SELECT k.r, distributed_lock_now() AS ts
          FROM (SELECT z AS r FROM distributed_lock z
                WHERE z.lock_key = key AND z.slot > 0 AND z.fence_token = token AND z.owner_id = owner
                  AND z.owner_role = session_user
                FOR NO KEY UPDATE) k
          OFFSET 0) c
    WHERE s.lock_key = key AND s.slot = (c.r).slot AND distributed_lock_held(c.r, owner, session_user, c.ts)
    RETURNING s.* INTO h;
    RETURN h;
END $$;

-- distributed_lock_end_holders ends the leases of key's slots that match
-- token (every slot holding a lease when token is the group's own, on
-- which an operator acts on all holders) and owner (NULL: any, for an
-- operator; else only owner's slots the caller's role took), as
-- released (how 'release') or ran out (how 'expire') at ts; the caller
-- then logs them and passes the key on (distributed_lock_holders_ended).
-- The row FOR NO KEY UPDATE: a group's end must see every release before
-- it. The caller holds that lock already, and read ts after taking it.
-- Returns the slots it ended as it left them (a forced expiry's end is
-- ts), in slot order. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_end_holders(key text, owner text, token bigint, how text, ts timestamptz)
RETURNS SETOF distributed_lock
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
BEGIN
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH ended AS (
        SELECT s.lock_key, s.slot FROM distributed_lock s
        WHERE s.lock_key = key AND s.slot > 0 AND (owner IS NULL OR s.owner_id = owner AND s.owner_role = session_user)
          AND s.released_at IS NULL
          AND (s.fence_token = token OR (token = r.fence_token AND owner IS NULL AND s.expires_at > ts))
        FOR NO KEY UPDATE
    ), upd AS (
        UPDATE distributed_lock s SET
            released_at = CASE WHEN how = 'release' THEN ts END,
            expires_at = CASE WHEN how = 'expire' THEN least(s.expires_at, ts) ELSE s.expires_at END
        FROM ended e WHERE s.lock_key = e.lock_key AND s.slot = e.slot
          AND (how = 'release' OR s.expires_at > ts)
        RETURNING s.*
    )
    SELECT u.* FROM upd u ORDER BY u.slot;
END $$;

-- distributed_lock_holders_ended passes key on after leases of its holders
-- ended at ts (distributed_lock_end_holders), once the caller has logged
-- their ends: the group ends with its last lease and is passed on
-- (distributed_lock_settle), or, still running, hands the room it has to
-- the waiters queued for it. Called after the ends' events, so that the
-- log never shows a grant of the room before the end that made it.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_holders_ended(key text, ts timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT distributed_lock_settle(key, ts)
       AND EXISTS (SELECT 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND l.wake_until > ts) THEN
        PERFORM distributed_lock_hand_off(key, ts);
    END IF;
END $$;

-- distributed_lock_fence_holder is distributed_lock_fence for a holder:
-- the group's row and the slot FOR SHARE, then whether the slot still holds
-- owner's lease granted with token. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_fence_holder(key text, owner text, token bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR SHARE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    RETURN coalesce((
        SELECT c.expires_at > c.ts
        FROM (SELECT k.expires_at, distributed_lock_now() AS ts
              FROM (SELECT s.expires_at FROM distributed_lock s
                    WHERE s.lock_key = key AND s.slot > 0 AND s.owner_id = owner AND s.fence_token = token
                      AND s.released_at IS NULL AND s.owner_role = session_user
                    FOR SHARE) k
              OFFSET 0) c), false);
END $$;

-- distributed_lock_force_holders is the operator's force (how 'expire' or
-- 'release') on the holder of key granted token, or on every holder when
-- token is the group's own: each lease ended is recorded as an event of
-- its own under event_actor (default: the role that logged in) with
-- reason, and the group ends with its last lease. One row as
-- distributed_lock_force_expire's: the holder's lease after the action,
-- or for every holder the group's row as the force found it (owner '*',
-- its token and TTL), ending with the last of the leases ended; or
-- 'not_held'. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_force_holders(
    key text, token bigint, how text, event_actor text, reason text,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    h distributed_lock;
    r distributed_lock;
    ts timestamptz;
    ended integer := 0;
BEGIN
    lock_key := key;
    outcome := 'not_held';
    -- The group's row before the force (the lock end_holders takes): when
    -- the force ends the group, a hand-off may grant the row to a waiter
    -- before this returns, and that lease is not the one forced.
    SELECT * INTO r FROM distributed_lock l WHERE l.lock_key = key AND l.slot = 0 AND distributed_lock_is_group(l) FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    FOR h IN SELECT * FROM distributed_lock_end_holders(key, NULL, token, how, ts) LOOP
        INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
        VALUES (ts, key, CASE WHEN how = 'expire' THEN 'force_expired' ELSE 'force_released' END,
                h.owner_id, h.fence_token, coalesce(event_actor, session_user),
                jsonb_strip_nulls(jsonb_build_object('reason', reason, 'slot', h.slot)));
        ended := ended + 1;
        owner_id := h.owner_id; fence_token := h.fence_token; ttl := h.ttl;
        expires_at := greatest(expires_at, h.expires_at);
    END LOOP;
    IF ended = 0 THEN
        RETURN;
    END IF;
    PERFORM distributed_lock_holders_ended(key, ts);
    outcome := CASE WHEN how = 'expire' THEN 'force_expired' ELSE 'force_released' END;
    IF token = r.fence_token THEN
        owner_id := r.owner_id; fence_token := r.fence_token; ttl := r.ttl;
    END IF;
END $$;
