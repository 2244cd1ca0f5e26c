-- Sessions (locker.Session; docs/design.md, "Sessions"): one heartbeat for
-- every lease a process keeps. A session is opened once, leases are bound to
-- it (distributed_lock_session_bind), and each heartbeat moves the session's
-- expires_at and every bound lease's expires_at to the same instant, so the
-- leases of a process that stops heartbeating all lapse together, each as
-- an expiry (its lock-delay follows, the next grant is a steal). A bound
-- lease stays an ordinary row of distributed_lock: ls, the console, renew,
-- fence and every grant rule read its expires_at as they read any lease's.
--
-- Any lease may be bound: an exclusive holder's (a key's slot 0) or a
-- group holder's (a slot above 0); a binding names its key and token, and
-- tokens are unique. Lock order: the session's row, then the bound keys'
-- rows (slot 0) in key order, as every function locking several keys does
-- (08_multi.sql), then a holder's slot, as a holder's renewal takes the
-- group's row before its slot (11_shared.sql): so a group cannot end, its
-- holders judged lapsed, while a heartbeat extends one of them.
--
-- A session belongs to the role that opened it (owner_role), as a lease
-- to the role that took it: heartbeat, bind and close answer another
-- role's session as 'gone', and bind only the caller's role's leases.

-- distributed_lock_session_live: s is owner's session and runs at ts.
CREATE OR REPLACE FUNCTION distributed_lock_session_live(s distributed_lock_session, owner text, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT s.owner_id = owner AND s.expires_at > ts
$$;

-- distributed_lock_open_session opens a session for owner that lasts ttl_us
-- from the database's now unless a heartbeat extends it; host, pid and
-- session_metadata (a JSON object) say which process holds it (lockctl
-- sessions). One row: the session's id, expires_at and ttl.
CREATE OR REPLACE FUNCTION distributed_lock_open_session(
    owner text, ttl_us bigint, host text DEFAULT '', pid integer DEFAULT 0, session_metadata jsonb DEFAULT NULL,
    OUT session_id bigint, OUT expires_at timestamptz, OUT ttl interval)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := distributed_lock_now();
BEGIN
    PERFORM distributed_lock_admit_owner(owner);
    INSERT INTO distributed_lock_session AS s (owner_id, host, pid, metadata, ttl, opened_at, expires_at)
    VALUES (owner, coalesce(host, ''), coalesce(pid, 0), coalesce(session_metadata, '{}'),
            distributed_lock_us(ttl_us), ts, ts + distributed_lock_us(ttl_us))
    RETURNING s.session_id, s.expires_at, s.ttl INTO session_id, expires_at, ttl;
END $$;

-- distributed_lock_session_lock locks session's row, then the rows (slot 0)
-- of the keys whose bound lease is still the one granted (a key granted
-- anew since is left alone) in key order, and returns the session as it
-- is then (NULL columns: no such session). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_session_lock(session bigint)
RETURNS distributed_lock_session
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    s distributed_lock_session;
BEGIN
    SELECT * INTO s FROM distributed_lock_session x WHERE x.session_id = session FOR NO KEY UPDATE;
    PERFORM 1 FROM distributed_lock l
    WHERE l.slot = 0
      AND l.lock_key IN (SELECT b.lock_key FROM distributed_lock_session_lease b
                         JOIN distributed_lock h ON h.lock_key = b.lock_key AND h.fence_token = b.fence_token
                         WHERE b.session_id = session)
    ORDER BY l.lock_key
    FOR NO KEY UPDATE OF l;
    RETURN s;
END $$;

-- distributed_lock_session_heartbeat keeps owner's session: expires_at moves
-- to its ttl from the database's now, and every lease bound to it that is
-- still held moves with it (one statement for any number of leases). The
-- bindings named by drop_keys and drop_tokens (leases the caller stopped
-- keeping) are dropped first, and bindings whose lease had ended (released,
-- lapsed, taken, forced) are dropped after. One row:
--   outcome  'renewed'; 'expired' when the session had lapsed (nothing is
--            revived: its leases lapsed with it); 'gone' when there is no
--            such session of owner's (closed, ended by an operator, pruned).
--   expires_at, ttl: the session's, when renewed.
--   leases   how many bound leases it kept.
--   lost     of the leases named by keep_keys and keep_tokens (those the
--            caller counts on this session to keep), each one this
--            heartbeat did not move, as [{"key", "token"}]: its lease had
--            ended, or the session no longer had it bound (dropped, bound
--            to another session). The answer is about this heartbeat
--            alone, so one whose reply was lost hides nothing from the
--            next: what was dropped is never kept again.
CREATE OR REPLACE FUNCTION distributed_lock_session_heartbeat(
    session bigint, owner text, drop_keys text[] DEFAULT NULL, drop_tokens bigint[] DEFAULT NULL,
    keep_keys text[] DEFAULT NULL, keep_tokens bigint[] DEFAULT NULL,
    OUT outcome text, OUT expires_at timestamptz, OUT ttl interval, OUT leases integer, OUT lost jsonb)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    s distributed_lock_session;
    ts timestamptz;
    bound integer;
BEGIN
    leases := 0; lost := '[]';
    s := distributed_lock_session_lock(session);
    ts := distributed_lock_now();
    -- A NULL owner names nobody's session; another role's is not the caller's.
    IF s.session_id IS NULL OR (s.owner_id, s.owner_role) IS DISTINCT FROM (owner, session_user) THEN
        outcome := 'gone';
        RETURN;
    END IF;
    DELETE FROM distributed_lock_session_lease b
    WHERE b.session_id = session
      AND (b.lock_key, b.fence_token) IN (SELECT d.k, d.t FROM unnest(drop_keys, drop_tokens) AS d(k, t));
    IF NOT distributed_lock_session_live(s, owner, ts) THEN
        outcome := 'expired';
        RETURN;
    END IF;
    UPDATE distributed_lock_session x SET expires_at = ts + x.ttl, renewed_at = ts WHERE x.session_id = session
    RETURNING x.expires_at, x.ttl INTO expires_at, ttl;
    WITH moved AS (
        UPDATE distributed_lock l SET
            expires_at = distributed_lock_session_heartbeat.expires_at,
            ttl = distributed_lock_session_heartbeat.ttl,
            renewed_at = ts,
            renew_count = l.renew_count + 1
        FROM distributed_lock_session_lease b
        WHERE b.session_id = session AND l.lock_key = b.lock_key AND l.fence_token = b.fence_token
          AND distributed_lock_live(l, ts)
        RETURNING l.lock_key, l.fence_token)
    SELECT (SELECT count(*) FROM moved),
           (SELECT coalesce(jsonb_agg(jsonb_build_object('key', k.lock_key, 'token', k.fence_token)
                                      ORDER BY k.lock_key), '[]')
            FROM unnest(keep_keys, keep_tokens) AS k(lock_key, fence_token)
            WHERE NOT EXISTS (SELECT 1 FROM moved m WHERE m.lock_key = k.lock_key AND m.fence_token = k.fence_token))
    INTO leases, lost;
    SELECT count(*) INTO bound FROM distributed_lock_session_lease b WHERE b.session_id = session;
    IF bound > leases THEN
        -- Every binding the update did not reach is of a lease that ended.
        DELETE FROM distributed_lock_session_lease b
        WHERE b.session_id = session
          AND NOT EXISTS (SELECT 1 FROM distributed_lock l
                          WHERE l.lock_key = b.lock_key AND l.fence_token = b.fence_token
                            AND distributed_lock_live(l, ts));
    END IF;
    -- A revoke's deadline bounds the leases it moved (16_revoke.sql).
    PERFORM distributed_lock_revoke_cap(v.lock_key, v.fence_token, expires_at)
    FROM distributed_lock_revoke v JOIN distributed_lock_session_lease b USING (lock_key, fence_token)
    WHERE b.session_id = session;
    outcome := 'renewed';
END $$;

-- distributed_lock_session_bind binds lease_owner's leases of keys, granted
-- with tokens (one each, in step; a key's lease or a group holder's), to
-- session_owner's session: each now
-- ends when the session does (its expires_at and ttl become the session's,
-- which may shorten it) and is kept by the session's heartbeats. All or
-- none. It also claims a lease handed off from a queue. One row:
--   outcome   'bound'; 'not_held' when a lease is not lease_owner's current,
--             running grant (not_held names the first such key; nothing is
--             bound); 'expired' or 'gone' for the session, as the heartbeat.
--   expires_at, ttl: the session's, when bound.
CREATE OR REPLACE FUNCTION distributed_lock_session_bind(
    session bigint, session_owner text, lease_owner text, keys text[], tokens bigint[],
    OUT outcome text, OUT expires_at timestamptz, OUT ttl interval, OUT not_held text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    s distributed_lock_session;
    ts timestamptz;
BEGIN
    PERFORM distributed_lock_admit_owner(lease_owner);
    IF cardinality(keys) IS DISTINCT FROM cardinality(tokens) THEN
        RAISE EXCEPTION 'distributed_lock_session_bind: % keys but % tokens', cardinality(keys), cardinality(tokens)
            USING ERRCODE = '22023';
    END IF;
    SELECT * INTO s FROM distributed_lock_session x WHERE x.session_id = session FOR SHARE;
    PERFORM 1 FROM distributed_lock l WHERE l.lock_key = ANY (keys) AND l.slot = 0 ORDER BY l.lock_key FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF s.session_id IS NULL OR (s.owner_id, s.owner_role) IS DISTINCT FROM (session_owner, session_user) THEN
        outcome := 'gone';
        RETURN;
    END IF;
    IF NOT distributed_lock_session_live(s, session_owner, ts) THEN
        outcome := 'expired';
        RETURN;
    END IF;
    SELECT d.k INTO not_held FROM unnest(keys, tokens) AS d(k, t)
    WHERE NOT EXISTS (SELECT 1 FROM distributed_lock l
                      WHERE l.lock_key = d.k AND l.fence_token = d.t
                        AND distributed_lock_held(l, lease_owner, session_user, ts))
    ORDER BY d.k LIMIT 1;
    IF FOUND THEN
        outcome := 'not_held';
        RETURN;
    END IF;
    UPDATE distributed_lock l SET expires_at = s.expires_at, ttl = s.ttl, renewed_at = ts, renew_count = l.renew_count + 1
    FROM unnest(keys, tokens) AS d(k, t)
    WHERE l.lock_key = d.k AND l.fence_token = d.t;
    INSERT INTO distributed_lock_session_lease AS b (lock_key, fence_token, session_id)
    SELECT DISTINCT d.k, d.t, session FROM unnest(keys, tokens) AS d(k, t)
    ON CONFLICT (lock_key, fence_token) DO UPDATE SET session_id = excluded.session_id;
    -- A revoke's deadline bounds the leases it bound (16_revoke.sql).
    PERFORM distributed_lock_revoke_cap(v.lock_key, v.fence_token, s.expires_at)
    FROM distributed_lock_revoke v JOIN unnest(keys, tokens) AS d(k, t) ON v.lock_key = d.k AND v.fence_token = d.t;
    outcome := 'bound';
    expires_at := s.expires_at;
    ttl := s.ttl;
END $$;

-- distributed_lock_close_session ends owner's session as its process does
-- on the way out: every bound lease still running is released, as its
-- holder's distributed_lock_release would (a clean release: no lock-delay;
-- a waiter is handed the key; with log_release a "released" event under
-- event_actor, default the owner), in key order, and the session is
-- deleted. A bound lease that already lapsed (force-expired) is left as it
-- is: a release would end the lock-delay its lapse started. One row:
-- outcome 'closed' with how many leases were released, or 'gone' when
-- owner has no such session.
CREATE OR REPLACE FUNCTION distributed_lock_close_session(
    session bigint, owner text, log_release boolean DEFAULT false, event_actor text DEFAULT NULL,
    OUT outcome text, OUT released integer)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    ts timestamptz;
    s distributed_lock_session;
    b record;
BEGIN
    released := 0;
    s := distributed_lock_session_lock(session);
    IF s.session_id IS NULL OR (s.owner_id, s.owner_role) IS DISTINCT FROM (owner, session_user) THEN
        outcome := 'gone';
        RETURN;
    END IF;
    ts := distributed_lock_now();
    FOR b IN SELECT l.lock_key, l.owner_id, l.fence_token FROM distributed_lock l
                 JOIN distributed_lock_session_lease x ON x.lock_key = l.lock_key AND x.fence_token = l.fence_token
             WHERE x.session_id = session AND distributed_lock_live(l, ts)
             ORDER BY l.lock_key LOOP
        IF (SELECT r.outcome FROM distributed_lock_release(b.lock_key, b.owner_id, b.fence_token,
                                                    log_release => log_release, event_actor => event_actor) r)
           = 'released' THEN
            released := released + 1;
        END IF;
    END LOOP;
    DELETE FROM distributed_lock_session x WHERE x.session_id = session;
    outcome := 'closed';
END $$;

-- distributed_lock_end_session is the operator's end of a session (a
-- process that hangs but heartbeats, or one an operator wants gone now):
-- every bound lease still running is force-expired (distributed_lock_
-- force_expire: its event, its lock-delay, its waiters woken), in key
-- order, the session is deleted, and a 'session_ended' event (no key)
-- records event_actor (default: the role that logged in), reason and what
-- ended. One row: outcome 'ended' with how many leases were expired, or
-- 'gone' when there is no such session.
CREATE OR REPLACE FUNCTION distributed_lock_end_session(
    session bigint, event_actor text DEFAULT NULL, reason text DEFAULT NULL,
    OUT outcome text, OUT expired integer)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    s distributed_lock_session;
    ts timestamptz;
    b record;
    why text;
BEGIN
    expired := 0;
    s := distributed_lock_session_lock(session);
    IF s.session_id IS NULL THEN
        outcome := 'gone';
        RETURN;
    END IF;
    ts := distributed_lock_now();
    why := coalesce(reason, format('session %s ended', session));
    FOR b IN SELECT l.lock_key, l.fence_token FROM distributed_lock l
                 JOIN distributed_lock_session_lease x ON x.lock_key = l.lock_key AND x.fence_token = l.fence_token
             WHERE x.session_id = session AND distributed_lock_live(l, ts)
             ORDER BY l.lock_key LOOP
        PERFORM distributed_lock_force_expire(b.lock_key, b.fence_token, event_actor, why);
        expired := expired + 1;
    END LOOP;
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, actor, detail)
    VALUES (ts, '', 'session_ended', s.owner_id, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('session_id', session, 'host', s.host, 'pid', s.pid,
                                                 'leases', expired, 'reason', reason)));
    DELETE FROM distributed_lock_session x WHERE x.session_id = session;
    outcome := 'ended';
END $$;
