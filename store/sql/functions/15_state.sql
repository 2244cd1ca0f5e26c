-- What readers see (ls, the console, `lockctl metrics`, the blocking view,
-- completion, locker.Get): distributed_lock_state, one row per key judged
-- by the rules at one reading of the clock, so that no reader restates
-- them. `lockctl grant` gives every kind of role SELECT on the view and
-- EXECUTE on the rules it uses (a view's functions run as its reader).

-- distributed_lock_holders_end: the last expiry of key's holders'
-- unreleased leases (its slots), NULL when it has none. PL/pgSQL, as
-- queue_length: a subquery keeps an SQL function from being inlined.
CREATE OR REPLACE FUNCTION distributed_lock_holders_end(key text)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT max(h.expires_at) FROM distributed_lock h
            WHERE h.lock_key = key AND h.slot > 0 AND h.released_at IS NULL);
END $$;

-- distributed_lock_lease_end: when key row l's lease ends: its expires_at,
-- or, for a running group's own lease, which ends only with the group, the
-- last expiry of its holders' unreleased leases (its start when it has
-- none): never the far future, which no client could take for a time
-- left. Inlined: the holders are read for a running group's row alone.
CREATE OR REPLACE FUNCTION distributed_lock_lease_end(l distributed_lock)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN distributed_lock_is_group(l) AND l.slot = 0 AND l.released_at IS NULL
                THEN coalesce(distributed_lock_holders_end(l.lock_key), l.acquired_at)
                ELSE l.expires_at END
$$;

-- distributed_lock_kept: key row l was released before the at-least point
-- of a hold that asked for one (17_at_least.sql), which has not come at
-- ts: it is in the delay that ends there, and that delay is the hold's
-- (a force-release clears kept_until; a lease that ran out unreleased
-- is delayed by its lock-delay, whatever its hold asked).
CREATE OR REPLACE FUNCTION distributed_lock_kept(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_delayed(l, ts) AND coalesce(l.released_at < l.expires_at AND l.delay_until = l.kept_until, false)
$$;

-- distributed_lock_key_state: what key row l is at ts, as readers show it
-- (locker.State): 'kept' while a release keeps it until its hold's
-- at-least point (distributed_lock_kept), 'delayed' while its lock-delay runs, 'free' when
-- released, 'expired' when its lease (a group's: every holder's) ran out
-- unreleased, 'expiring' with less than a fifth of its TTL and under 10 s
-- left (5 × remaining < ttl: exact in microseconds, where ttl / 5 would
-- round; tested second, so a pass over many keys multiplies only for
-- those under 10 s), else 'held'. Its lease's end is
-- distributed_lock_lease_end's, written out at each use: an argument
-- holding it, used more than once, would keep PostgreSQL from inlining
-- this rule.
CREATE OR REPLACE FUNCTION distributed_lock_key_state(l distributed_lock, ts timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN distributed_lock_kept(l, ts) THEN 'kept'
                WHEN distributed_lock_delayed(l, ts) THEN 'delayed'
                WHEN l.released_at IS NOT NULL THEN 'free'
                WHEN distributed_lock_lease_end(l) <= ts THEN 'expired'
                WHEN distributed_lock_lease_end(l) - ts < interval '10 seconds'
                     AND (distributed_lock_lease_end(l) - ts) * 5 < l.ttl THEN 'expiring'
                ELSE 'held' END
$$;

-- distributed_lock_state: every key (its row at slot 0) as the rules judge
-- it at one reading of the clock (db_now): its lease's columns, expires_at
-- its lease's end (a group's: its holders' last), remaining the time left
-- of it (none once released), delay_until set only while its lock-delay
-- runs, state (distributed_lock_key_state), for a running group how
-- many holders' leases are live (holders; NULL for a key held alone), and
-- kept_until, set only while a release keeps the key until its hold's
-- at-least point (state 'kept'; delay_until is then that point too).
CREATE OR REPLACE VIEW distributed_lock_state AS
SELECT l.lock_key, l.lock_mode, l.permits, l.ttl, l.lock_delay, l.metadata, l.grant_kind, l.owner_id, l.owner_role,
       l.previous_owner, l.previous_token, l.fence_token, l.acquired_at,
       distributed_lock_lease_end(l) AS expires_at, l.renew_count, l.renewed_at, l.released_at,
       CASE WHEN distributed_lock_delayed(l, c.ts) THEN distributed_lock_delay_end(l) END AS delay_until,
       l.handed_to, l.wake_until,
       distributed_lock_key_state(l, c.ts) AS state,
       CASE WHEN l.released_at IS NULL THEN distributed_lock_lease_end(l) - c.ts ELSE interval '0' END AS remaining,
       CASE WHEN distributed_lock_is_group(l) AND NOT distributed_lock_open(l, c.ts)
            THEN distributed_lock_live_holders(l.lock_key, c.ts) END AS holders,
       c.ts AS db_now,
       CASE WHEN distributed_lock_kept(l, c.ts) THEN l.kept_until END AS kept_until
FROM distributed_lock l, (SELECT distributed_lock_now() AS ts) c
WHERE l.slot = 0;
