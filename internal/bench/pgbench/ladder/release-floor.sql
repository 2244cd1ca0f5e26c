-- A ladder step (BENCHMARKS.md, "Where a cycle's time goes"): the release
-- is the function floor's (one UPDATE, then its lazy commit, nothing read
-- back), returned as the locker's result row with the caller's arguments.
-- Throwaway databases only.
CREATE OR REPLACE FUNCTION distributed_lock_release(
    key text, owner text, token bigint, lazy_commit boolean DEFAULT false,
    log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS distributed_lock_release_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token AND l.released_at IS NULL;
    IF FOUND THEN
        PERFORM set_config('synchronous_commit', 'off', true);
        RETURN ROW(key, owner, token, NULL, NULL, 'released')::distributed_lock_release_result;
    END IF;
    RETURN ROW(key, NULL, NULL, NULL, NULL, 'not_held')::distributed_lock_release_result;
END $$;
