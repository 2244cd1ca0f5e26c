-- What the function floor pays for (BENCHMARKS.md): a grant's token drawn
-- with nextval alone, without the failover epoch (the floor's and the
-- locker's grants alike). Tokens could go back after a promotion;
-- throwaway databases only.
CREATE OR REPLACE FUNCTION distributed_lock_draw_token(epoch_timeline bigint) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT nextval('distributed_lock_fence_seq')
$$;
