-- A ladder step (BENCHMARKS.md, "Where a cycle's time goes"): the grant
-- rule as the function floor has it, free or lapsed, without the
-- lock-delay and queue-promise tests. Throwaway databases only.
CREATE OR REPLACE FUNCTION distributed_lock_may_grant(l distributed_lock, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_open(l, ts)
$$;
