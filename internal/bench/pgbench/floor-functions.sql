-- The function floor's table and functions (internal/bench/floorfunc.go
-- says what they keep and leave out); lockctl bench creates them in each
-- run's schema, and the pgbench scripts beside this file call them.
-- LIKE copies columns, domains and the key, not storage parameters: the
-- fillfactor that keeps distributed_lock's updates HOT is set again.
CREATE TABLE bench_fn_lock (LIKE distributed_lock INCLUDING ALL) WITH (fillfactor = 80);
CREATE FUNCTION bench_fn_take(key text, owner text, ttl_us bigint, OUT token bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE bench_fn_lock l SET owner_id = owner,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = clock_timestamp() + ttl_us * interval '1 microsecond',
        ttl = ttl_us * interval '1 microsecond', acquired_at = clock_timestamp(), released_at = NULL
    WHERE l.lock_key = (SELECT x.lock_key FROM bench_fn_lock x
                        WHERE x.lock_key = key
                          AND (x.released_at IS NOT NULL OR x.owner_id = owner OR x.expires_at <= clock_timestamp())
                        FOR NO KEY UPDATE SKIP LOCKED)
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
CREATE FUNCTION bench_fn_release(key text, owner text, token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE bench_fn_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token AND l.released_at IS NULL;
    IF FOUND THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    RETURN FOUND;
END $$;
