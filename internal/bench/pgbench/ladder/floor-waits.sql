-- What the function floor pays for (BENCHMARKS.md): its grant as one
-- UPDATE of the key's row, which waits for a row another transaction has
-- locked instead of skipping it (TryAcquire never waits); the rest as
-- floor-functions.sql has it. Throwaway databases only, after
-- floor-functions.sql.
CREATE OR REPLACE FUNCTION bench_fn_take(key text, owner text, ttl_us bigint, OUT token bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE bench_fn_lock l SET owner_id = owner,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = clock_timestamp() + ttl_us * interval '1 microsecond',
        ttl = ttl_us * interval '1 microsecond', acquired_at = clock_timestamp(), released_at = NULL
    WHERE l.lock_key = key
      AND (l.released_at IS NOT NULL OR l.owner_id = owner OR l.expires_at <= clock_timestamp())
    RETURNING l.fence_token INTO token;
    -- Only a key without a row is inserted: an insert that meets a row
    -- another grant is changing waits for that grant's commit. The row is
    -- looked for only after a refusal: a test with a subquery is a query
    -- of its own, set up at every call, granted or not.
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT FROM bench_fn_lock x WHERE x.lock_key = key) THEN
            INSERT INTO bench_fn_lock AS l (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
            VALUES (key, owner, distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
                    clock_timestamp() + ttl_us * interval '1 microsecond', ttl_us * interval '1 microsecond',
                    clock_timestamp())
            ON CONFLICT (lock_key, slot) DO NOTHING
            RETURNING l.fence_token INTO token;
        END IF;
    END IF;
END $$;
