-- A ladder step (BENCHMARKS.md, "Where a cycle's time goes"): the grant
-- rule as the function floor has it, free or lapsed, without the
-- lock-delay and queue-promise tests. Throwaway databases only.
CREATE OR REPLACE FUNCTION distributed_lock_admits(l distributed_lock, mode text, n integer, head bigint, ts timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT distributed_lock_open(l, ts)
$$;
