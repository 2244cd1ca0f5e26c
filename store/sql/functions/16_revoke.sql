-- Revoke: an operator asks the holder of an exclusive lease to let go,
-- rather than forcing it. The request is a row of distributed_lock_revoke,
-- keyed by the grant (key and token), which the holder's renewals read
-- (distributed_lock_renew answers with it): a holder that keeps its lease alive
-- learns it within one renewal interval, finishes and releases as usual.
-- With force_after the request has a deadline, enforced by the lease's own
-- expiry and no process on the server: the revoke caps expires_at at
-- now + force_after, and every later renewal at the same instant
-- (distributed_lock_revoke_cap, called by every renewal: renew, a holder's
-- acquire again, a session's heartbeat and bind), so a holder that has not
-- released by then loses the lease as if it had stopped renewing: its lock-delay starts and the next acquirer steals it.

-- distributed_lock_revoke asks the holder of key's grant token to let go.
-- It acts only while token is the key's current, unreleased and unexpired
-- exclusive grant. One row: outcome 'revoked' with the lease after it (its
-- expiry capped at force_at) and force_at (NULL: no deadline), or
-- 'not_held' (only lock_key set). A second revoke of the same grant
-- replaces the reason and actor and keeps the earlier deadline. A
-- 'revoked' event records event_actor (default: the role that logged in),
-- the caller's role, reason and force_at. Waiters are woken when the
-- deadline moved the lease's end, so they wait for the new one.
CREATE OR REPLACE FUNCTION distributed_lock_revoke(
    key text, token bigint, force_after_us bigint DEFAULT NULL, event_actor text DEFAULT NULL,
    reason text DEFAULT NULL,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT expires_at timestamptz,
    OUT ttl interval, OUT outcome text, OUT force_at timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r distributed_lock;
    ts timestamptz;
    deadline timestamptz;
BEGIN
    SELECT * INTO r FROM distributed_lock l
    WHERE l.lock_key = key AND l.slot = 0 AND l.fence_token = token AND l.released_at IS NULL
      AND NOT distributed_lock_is_group(l)
    FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF r.lock_key IS NULL OR r.expires_at <= ts THEN
        lock_key := key;
        outcome := 'not_held';
        RETURN;
    END IF;
    IF force_after_us IS NOT NULL THEN
        deadline := ts + distributed_lock_us(greatest(force_after_us, 0));
    END IF;
    DELETE FROM distributed_lock_revoke v WHERE v.lock_key = key AND v.fence_token < token;
    INSERT INTO distributed_lock_revoke AS v (lock_key, fence_token, requested_at, force_at, reason, actor)
    VALUES (key, token, ts, deadline, reason, coalesce(event_actor, session_user))
    ON CONFLICT ON CONSTRAINT distributed_lock_revoke_pkey DO UPDATE
    SET requested_at = excluded.requested_at, reason = excluded.reason, actor = excluded.actor,
        caller_role = excluded.caller_role, force_at = least(v.force_at, excluded.force_at)
    RETURNING v.force_at INTO deadline;
    lock_key := r.lock_key; owner_id := r.owner_id; fence_token := r.fence_token; ttl := r.ttl;
    expires_at := distributed_lock_revoke_cap(key, token, r.expires_at);
    outcome := 'revoked';
    force_at := deadline;
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (ts, key, 'revoked', r.owner_id, token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason, 'force_at', deadline)));
    IF expires_at < r.expires_at AND r.wake_until > ts THEN
        PERFORM distributed_lock_wake(key);
    END IF;
END $$;

-- distributed_lock_revoke_cap is the expiry of key's grant token, ends_at,
-- bounded by the deadline of a revoke of that grant: when ends_at is
-- later, the caller's row (which it has locked) is moved back to it.
-- distributed_lock_renew calls it for a lease a revoke with a deadline
-- reached, acquire for a holder's acquire again, and a session's heartbeat
-- and bind for each revoked lease they keep, so no renewal outlives the
-- deadline. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_revoke_cap(key text, token bigint, ends_at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    deadline timestamptz;
BEGIN
    SELECT v.force_at INTO deadline FROM distributed_lock_revoke v
    WHERE v.lock_key = key AND v.fence_token = token AND v.force_at < ends_at;
    IF deadline IS NULL THEN
        RETURN ends_at;
    END IF;
    UPDATE distributed_lock l SET expires_at = deadline WHERE l.lock_key = key AND l.slot = 0 AND l.fence_token = token;
    RETURN deadline;
END $$;

-- distributed_lock_revoke_pending is the revoke of owner's grant token of
-- key, for its holder, which calls it beside each renewal: one row, all
-- NULL when there is none, or when that grant is not the caller's role's
-- (a role reads only the revokes of its own leases). requested_at, the
-- operator's reason, actor (a claim) and caller_role (the role that
-- revoked), force_at (NULL: no deadline) and remaining, the time left
-- until force_at on the database's clock (NULL with no deadline), which a holder trusts its lease
-- for at most.
CREATE OR REPLACE FUNCTION distributed_lock_revoke_pending(
    key text, owner text, token bigint,
    OUT requested_at timestamptz, OUT reason text, OUT actor text, OUT caller_role text,
    OUT force_at timestamptz, OUT remaining interval)
RETURNS record
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT v.requested_at, v.reason, v.actor, v.caller_role, v.force_at,
           CASE WHEN v.force_at IS NOT NULL THEN greatest(v.force_at - distributed_lock_now(), interval '0') END
    FROM distributed_lock_revoke v JOIN distributed_lock l ON l.lock_key = v.lock_key AND l.fence_token = v.fence_token
    WHERE v.lock_key = key AND v.fence_token = token AND l.owner_id = owner AND l.owner_role = session_user
$$;

-- distributed_lock_session_revokes are the revokes of the leases bound to
-- owner's session, for its heartbeat, which reads them in the same
-- statement: one row per revoked lease, its key and token and the columns
-- of distributed_lock_revoke_pending (remaining in microseconds, as JSON
-- carries it). None for another role's session.
CREATE OR REPLACE FUNCTION distributed_lock_session_revokes(session bigint, owner text)
RETURNS TABLE (lock_key text, fence_token bigint, requested_at timestamptz, reason text, actor text,
               caller_role text, force_at timestamptz, remaining_us bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT v.lock_key, v.fence_token, v.requested_at, v.reason, v.actor, v.caller_role, v.force_at,
           CASE WHEN v.force_at IS NOT NULL
                THEN (extract(epoch FROM greatest(v.force_at - distributed_lock_now(), interval '0')) * 1000000)::bigint END
    FROM distributed_lock_session s
    JOIN distributed_lock_session_lease b ON b.session_id = s.session_id
    JOIN distributed_lock_revoke v ON v.lock_key = b.lock_key AND v.fence_token = b.fence_token
    WHERE s.session_id = session AND s.owner_id = owner AND s.owner_role = session_user
    ORDER BY v.lock_key
$$;
