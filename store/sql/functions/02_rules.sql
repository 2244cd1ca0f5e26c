-- The rules every function shares, each written once. They are LANGUAGE
-- sql functions of one SELECT expression, without SECURITY DEFINER or SET,
-- so PostgreSQL inlines them into the statements that call them (EXPLAIN
-- VERBOSE shows their expressions, not a call; store's TestRulesAreInlined
-- checks): a rule costs nothing at run time. Pass them columns or
-- variables, not volatile expressions such as clock_timestamp(), which
-- would stop the inlining. ts is the call's now (00_search_path.sql).

-- distributed_lock_held: l is owner's running lease.
CREATE OR REPLACE FUNCTION distributed_lock_held(l distributed_lock, owner text, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > ts
$$;

-- distributed_lock_open: nobody holds l: released, or its lease lapsed.
CREATE OR REPLACE FUNCTION distributed_lock_open(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.released_at IS NOT NULL OR l.expires_at <= ts
$$;

-- distributed_lock_queue_live: a live waiter (its record seen until after
-- ts) is queued for key. Not inlined (a subquery), so the rules below read
-- it only when the row says someone may wait (wake_until).
CREATE OR REPLACE FUNCTION distributed_lock_queue_live(key text, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w WHERE w.lock_key = key AND w.seen_until > ts);
END $$;

-- distributed_lock_promised: l is kept for the live waiters queued for it,
-- whom only a hand-off may grant it to. wake_until is NULL on a key nobody
-- waited for, and NULL AND x would evaluate x: hence the coalesce.
CREATE OR REPLACE FUNCTION distributed_lock_promised(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(l.wake_until > ts, false) AND distributed_lock_queue_live(l.lock_key, ts)
$$;

-- distributed_lock_may_grant: l may be granted anew now: it is free or
-- lapsed and not promised to waiters.
CREATE OR REPLACE FUNCTION distributed_lock_may_grant(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_open(l, ts) AND NOT distributed_lock_promised(l, ts)
$$;

-- distributed_lock_may_take, the grant rule: owner may take l now. It is
-- owner's running lease (a renewal), or it may be granted anew.
CREATE OR REPLACE FUNCTION distributed_lock_may_take(l distributed_lock, owner text, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_held(l, owner, ts) OR distributed_lock_may_grant(l, ts)
$$;

-- distributed_lock_refusal: why an attempt that did not take l was refused:
-- 'queued' (free or lapsed, but promised to waiters), 'held' (another's
-- running lease, or the caller's own row locked by its own transaction),
-- or 'free'/'expired' (another transaction had the row locked).
CREATE OR REPLACE FUNCTION distributed_lock_refusal(l distributed_lock, ts timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN distributed_lock_open(l, ts) AND distributed_lock_promised(l, ts) THEN 'queued'
                WHEN l.released_at IS NOT NULL THEN 'free'
                WHEN l.expires_at <= ts THEN 'expired'
                ELSE 'held' END
$$;

-- distributed_lock_grant_kind: the kind of a new grant of l to owner:
-- 'stolen' when it ends another owner's unreleased lease, else 'acquired'.
CREATE OR REPLACE FUNCTION distributed_lock_grant_kind(l distributed_lock, owner text)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN l.released_at IS NULL AND l.owner_id <> owner THEN 'stolen' ELSE 'acquired' END
$$;
