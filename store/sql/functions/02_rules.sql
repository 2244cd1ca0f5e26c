-- The rules every function shares, each written once. They are LANGUAGE
-- sql functions of one SELECT expression, without SECURITY DEFINER or SET,
-- so PostgreSQL inlines them into the statements that call them (EXPLAIN
-- VERBOSE shows their expressions, not a call; store's TestRulesAreInlined
-- checks): a rule costs nothing at run time. Pass them columns or
-- variables, not volatile expressions such as distributed_lock_now(),
-- which would stop the inlining. ts is the call's now (00_search_path.sql).

-- distributed_lock_now: the protocol's clock, the one place any function,
-- rule or reader reads the time (00_search_path.sql says when a call reads
-- it). Inlined, it costs what clock_timestamp() does. Its owner alone may
-- replace it, and a test does, in its own schema, to move that schema's
-- time instead of sleeping (internal/testdb, Clock); the next migrate
-- puts this one back. No function takes a time from its caller, so a
-- service cannot choose its own. EXECUTE stays with PUBLIC (99_privileges.sql).
CREATE OR REPLACE FUNCTION distributed_lock_now()
RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
    SELECT pg_catalog.clock_timestamp()
$$;

-- distributed_lock_us: a caller's microseconds (ttl_us, lock_delay_us, …)
-- as an interval, never overflowing: past 10^15 µs (about 31 years) either
-- way it is that, so a sum with a time stays in range. What it is stored as
-- refuses what is out of range, by name (distributed_lock_ttl: a
-- millisecond to a year; distributed_lock_delay: up to a minute), rather
-- than "interval out of range" or a lease to the year 287225. STABLE, not
-- IMMUTABLE: a plan with the caller's values in it would call an immutable
-- one to fold it, which for an SQL function means planning its body.
-- int8smaller and int8larger, not least and greatest: a grant converts
-- three values, and the two comparisons cost it 5 K backend instructions
-- this way, 8.5 K the other (of 475 K for a cycle).
CREATE OR REPLACE FUNCTION distributed_lock_us(us bigint)
RETURNS interval LANGUAGE sql STABLE AS $$
    SELECT int8larger(int8smaller(us, 1000000000000000), -1000000000000000) * interval '1 microsecond'
$$;

-- distributed_lock_reserved: owner is a reserved word: '*', the owner of a
-- shared or semaphore group's own lease (11_shared.sql), which no caller's
-- lease may carry, so that no lease is ever mistaken for a group's.
CREATE OR REPLACE FUNCTION distributed_lock_reserved(owner text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT owner = '*'
$$;

-- distributed_lock_live, the one liveness rule: lease row l runs at ts:
-- unreleased and not past its expiry. Any lease: a key's (slot 0: an
-- exclusive holder's, or a running group's own, which expires only when
-- the group ends) or a group holder's slot. Every place that asks whether
-- a lease runs asks this, readers too (distributed_lock_state).
CREATE OR REPLACE FUNCTION distributed_lock_live(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.released_at IS NULL AND l.expires_at > ts
$$;

-- distributed_lock_open: nobody holds key row l: its lease is not live.
CREATE OR REPLACE FUNCTION distributed_lock_open(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT distributed_lock_live(l, ts)
$$;

-- distributed_lock_held: l is owner's live lease, taken by database role
-- role: an exclusive holder's (slot 0) or a group holder's (a slot). A
-- group's own lease is nobody's: its owner is reserved
-- (distributed_lock_reserved). A lease belongs to the role that took it
-- (owner_role): an owner id is only a name, which any service may say, so
-- a call acting on a lease as its holder passes session_user, and another
-- role's lease of the same owner is not its own.
CREATE OR REPLACE FUNCTION distributed_lock_held(l distributed_lock, owner text, role text, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.owner_id = owner AND l.owner_role = role AND distributed_lock_live(l, ts)
$$;

-- distributed_lock_is_group: l's lease is a group's or a group holder's
-- (mode shared or semaphore), not one held alone. The modes are compared
-- only in this rule and the five after it.
CREATE OR REPLACE FUNCTION distributed_lock_is_group(l distributed_lock)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.lock_mode <> 'exclusive'
$$;

-- distributed_lock_holder_mode: the mode of a lease of n permits: a
-- semaphore's, or without permits (NULL) a shared lease's.
CREATE OR REPLACE FUNCTION distributed_lock_holder_mode(n integer)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN n IS NULL THEN 'shared' ELSE 'semaphore' END
$$;

-- distributed_lock_of_kind: key row l is of the kind a lease of n permits
-- asks for (NULL: a shared lease): its mode and permits.
CREATE OR REPLACE FUNCTION distributed_lock_of_kind(l distributed_lock, n integer)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.lock_mode = distributed_lock_holder_mode(n) AND l.permits IS NOT DISTINCT FROM n
$$;

-- distributed_lock_waits_for_group: a waiter record's mode (its column
-- lock_mode) asks for a group holder's lease; NULL: the key itself.
CREATE OR REPLACE FUNCTION distributed_lock_waits_for_group(mode text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT mode IS NOT NULL
$$;

-- distributed_lock_asks_for: waiter record w waits for a lease of n
-- permits (NULL: a shared lease).
CREATE OR REPLACE FUNCTION distributed_lock_asks_for(w distributed_lock_waiter, n integer)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT w.lock_mode = distributed_lock_holder_mode(n) AND w.permits IS NOT DISTINCT FROM n
$$;

-- distributed_lock_group_of: key row l is a group of the kind a waiter
-- record asks for, by its mode and permits n (a record waiting for the key
-- itself has no mode, and asks for no group).
CREATE OR REPLACE FUNCTION distributed_lock_group_of(l distributed_lock, mode text, n integer)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT mode IS NOT NULL AND l.lock_mode = mode AND l.permits IS NOT DISTINCT FROM n
$$;

-- distributed_lock_wants_key: a set's mode for one of its keys (NULL or
-- 'exclusive') asks for the key itself, not a group holder's lease.
CREATE OR REPLACE FUNCTION distributed_lock_wants_key(mode text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT mode IS NULL OR mode = 'exclusive'
$$;

-- distributed_lock_waits_behind: a waiter for a lease of mode (a waiter
-- record's: NULL for the key itself) waits for live lease l to end: every
-- lease but a shared holder's, for a shared waiter, which would join it.
CREATE OR REPLACE FUNCTION distributed_lock_waits_behind(mode text, l distributed_lock)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce(mode = 'shared' AND l.lock_mode = 'shared', false)
$$;

-- distributed_lock_queue_live: a live waiter (its record seen until after
-- ts) is queued for key. Not inlined (a subquery), so the rules below read
-- it only when the row says someone may wait (wake_until).
CREATE OR REPLACE FUNCTION distributed_lock_queue_live(key text, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w WHERE w.lock_key = key AND w.seen_until > ts);
END $$;

-- distributed_lock_queue_length: how many live waiters are queued for key.
-- What a refusal says, read only on refusal paths.
CREATE OR REPLACE FUNCTION distributed_lock_queue_length(key text, ts timestamptz)
RETURNS integer LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT count(*) FROM distributed_lock_waiter w WHERE w.lock_key = key AND w.seen_until > ts);
END $$;

-- distributed_lock_queue_position: waiter id's place among the live
-- waiters for key (1: the head), NULL when its record is not live. Read
-- only on refusal paths, as queue_length.
CREATE OR REPLACE FUNCTION distributed_lock_queue_position(key text, id bigint, ts timestamptz)
RETURNS integer LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT count(*) FROM distributed_lock_waiter w
            WHERE w.lock_key = key AND w.waiter_id <= id AND w.seen_until > ts
            HAVING bool_or(w.waiter_id = id));
END $$;

-- distributed_lock_promised: l is kept for the live waiters queued for it,
-- whom only a hand-off may grant it to. wake_until is NULL on a key nobody
-- waited for, and NULL AND x would evaluate x: hence the coalesce.
CREATE OR REPLACE FUNCTION distributed_lock_promised(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(l.wake_until > ts, false) AND distributed_lock_queue_live(l.lock_key, ts)
$$;

-- distributed_lock_delay_end: when the lock-delay of l's last lease ends
-- (NULL: it has none). A lease that ran out or was force-expired is
-- followed by its lock_delay from expires_at, whether or not it was
-- released after it had run out (a late release ends no delay); a
-- force-release writes delay_until; a clean release, before its expiry,
-- writes none, so it starts no delay.
CREATE OR REPLACE FUNCTION distributed_lock_delay_end(l distributed_lock)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN l.released_at IS NULL OR l.released_at >= l.expires_at THEN l.expires_at + l.lock_delay
                ELSE l.delay_until END
$$;

-- distributed_lock_delayed: nobody holds l, but its last lease's lock-delay
-- still runs: a holder that was only slow may still be writing, so nobody
-- is granted the key until then (waiters keep their place).
CREATE OR REPLACE FUNCTION distributed_lock_delayed(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_open(l, ts) AND coalesce(distributed_lock_delay_end(l) > ts, false)
$$;

-- distributed_lock_queued_before: live waiters are queued for key ahead
-- of waiter record head; with head NULL (a caller's own attempt, which
-- every waiter is ahead of), any live waiter. Not inlined (a subquery), so
-- the grant rule reads it only when the row says someone may wait.
CREATE OR REPLACE FUNCTION distributed_lock_queued_before(key text, head bigint, ts timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w
                   WHERE w.lock_key = key AND w.seen_until > ts AND (head IS NULL OR w.waiter_id < head));
END $$;

-- distributed_lock_admits, the one grant rule: a new lease of mode (n
-- permits for a semaphore; NULL: shared or exclusive) may be granted on
-- key row l at ts, to waiter record head (a hand-off; NULL: a caller's own
-- attempt): l is open and past its lock-delay, or runs a group of that
-- mode and capacity (the room a grant needs, a free slot, is the grant
-- write's to find); and no live waiter is queued ahead of head (a key
-- promised to waiters is theirs). Renewing one's own lease is
-- distributed_lock_held's, not this. Every grant asks it: acquire, a set,
-- a shared or permit grant, the hand-offs, a waiter's heartbeat, prune.
-- An exclusive grant passes the mode as a constant, so the planner drops
-- the group's disjunct and the fast path pays for the first alone. "Past
-- its lock-delay" is written as its delay having ended (or having none),
-- not as NOT distributed_lock_delayed, which would test open a second
-- time: each node of an inlined rule is set up again at every execution of
-- the grant.
CREATE OR REPLACE FUNCTION distributed_lock_admits(l distributed_lock, mode text, n integer, head bigint, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT (distributed_lock_open(l, ts) AND coalesce(distributed_lock_delay_end(l) <= ts, true)
            OR mode <> 'exclusive' AND distributed_lock_live(l, ts) AND l.lock_mode = mode
               AND l.permits IS NOT DISTINCT FROM n)
           AND NOT (coalesce(l.wake_until > ts, false) AND distributed_lock_queued_before(l.lock_key, head, ts))
$$;

-- distributed_lock_may_take: owner, calling as role, may take l now: it
-- is their running lease (a renewal), or an exclusive lease may be granted
-- on it (distributed_lock_admits).
CREATE OR REPLACE FUNCTION distributed_lock_may_take(l distributed_lock, owner text, role text, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_held(l, owner, role, ts) OR distributed_lock_admits(l, 'exclusive', NULL, NULL, ts)
$$;

-- distributed_lock_refusal: why an attempt that did not take l was refused:
-- 'delayed' (free or lapsed, in its lock-delay: waiters or not, nobody gets
-- it before the delay ends), 'queued' (free or lapsed, but promised to
-- waiters), 'held' (another's running lease, or the caller's own row locked
-- by its own transaction), or 'free'/'expired' (another transaction had the
-- row locked).
CREATE OR REPLACE FUNCTION distributed_lock_refusal(l distributed_lock, ts timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN distributed_lock_delayed(l, ts) THEN 'delayed'
                WHEN distributed_lock_open(l, ts) AND distributed_lock_promised(l, ts) THEN 'queued'
                WHEN l.released_at IS NOT NULL THEN 'free'
                WHEN l.expires_at <= ts THEN 'expired'
                ELSE 'held' END
$$;

-- distributed_lock_ever_held: lease row l has carried a lease: it is not a
-- row made to be granted (owner the reserved '*', released as it was
-- made), which names no previous lease.
CREATE OR REPLACE FUNCTION distributed_lock_ever_held(l distributed_lock)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT distributed_lock_reserved(l.owner_id) OR l.released_at IS DISTINCT FROM l.acquired_at
$$;

-- distributed_lock_grant_kind: the kind of a new grant of l to owner,
-- taken by role: 'stolen' when it ends another's unreleased lease (another
-- owner's, or another role's), else 'acquired'.
CREATE OR REPLACE FUNCTION distributed_lock_grant_kind(l distributed_lock, owner text, role text)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN l.released_at IS NULL AND (l.owner_id <> owner OR l.owner_role <> role) THEN 'stolen'
                ELSE 'acquired' END
$$;
