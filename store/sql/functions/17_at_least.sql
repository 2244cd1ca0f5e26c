-- Holds that last at least a period (locker.Request.AtLeast, lockctl run
-- --at-least): ShedLock's lockAtLeastFor. A lease that asks for one and is
-- released before acquired_at + that period keeps its key until then, so a
-- job run on every node by its own timer runs once per period even when
-- the nodes' clocks or timers differ (docs/design.md, "At-least holds").
--
-- The hold writes its at-least point into the row twice: kept_until, which
-- says a hold asked for it, and delay_until, which the rules read only
-- after a release made before the lease's expiry (distributed_lock_delay_end,
-- 02_rules.sql). So a release before the point leaves the key in a delay
-- that ends there, which every rule already honours: a grant is refused
-- ('delayed', delay_until the point), the queue keeps its place and its
-- head is handed the key at the point, prune keeps the row, and an
-- operator's end-delay frees it. Readers show it as 'kept'
-- (distributed_lock_kept, 15_state.sql). Nothing else changes: the
-- release itself, its token (the releaser's until the next grant), and
-- what ends a lease without a release: a lease that runs out or is
-- force-expired is followed by its lock-delay from its expiry, not by the
-- at-least point (a job that did not finish keeps nobody out longer than
-- its TTL); a force-release writes its own delay and clears the hold's; a
-- grant clears delay_until. A plain release pays nothing for this.

-- distributed_lock_hold_at_least: owner's running exclusive lease of key,
-- granted with token and taken by the caller's role, is kept at least
-- at_least_us from its grant (acquired_at): a release before then keeps
-- the key until then. Call it once the lease is granted, as its holder.
-- One row: outcome 'at_least' with kept_until, the at-least point, or
-- 'not_held' (only lock_key set) when that grant is not the caller's
-- current, unexpired, unreleased lease, or is a shared or semaphore
-- holder's. A period out of the bounds of a lease's length
-- (distributed_lock_ttl: a millisecond to a year) is refused (23514). A
-- later call replaces the point. The row is locked, then the clock read.
CREATE OR REPLACE FUNCTION distributed_lock_hold_at_least(
    key text, owner text, token bigint, at_least_us bigint,
    OUT lock_key text, OUT owner_id text, OUT fence_token bigint, OUT kept_until timestamptz, OUT outcome text)
RETURNS record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    period distributed_lock_ttl := distributed_lock_us(at_least_us);
    r distributed_lock;
BEGIN
    SELECT * INTO r FROM distributed_lock l
    WHERE l.lock_key = key AND l.slot = 0 AND l.owner_id = owner AND l.fence_token = token
      AND l.owner_role = session_user AND NOT distributed_lock_is_group(l)
    FOR NO KEY UPDATE;
    IF NOT FOUND OR NOT distributed_lock_held(r, owner, session_user, distributed_lock_now()) THEN
        lock_key := key;
        outcome := 'not_held';
        RETURN;
    END IF;
    UPDATE distributed_lock l SET kept_until = r.acquired_at + period, delay_until = r.acquired_at + period
    WHERE l.lock_key = key AND l.slot = 0
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.kept_until, 'at_least'
    INTO lock_key, owner_id, fence_token, kept_until, outcome;
END $$;
