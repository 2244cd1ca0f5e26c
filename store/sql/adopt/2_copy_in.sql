-- Adopting the reference service's table, part 2 of 2 (part 1 says what and
-- why): after migration 1, in its transaction, the rows set aside move into
-- lockctl's table, and the reference table is dropped. expires_at is read in
-- the zone the JVM ran in (lockctl.reference_time_zone, else the session's
-- TimeZone) when it is a local time; the token sequence moves above the
-- largest token. So every held lock keeps its owner, token and expiry
-- instant, and the next grant's token is larger than every old one.
DO $$
DECLARE
    zone    text := coalesce(nullif(current_setting('lockctl.reference_time_zone', true), ''),
                             current_setting('TimeZone'));
    -- Migration 1 runs before the functions exist, the protocol's clock
    -- (distributed_lock_now) among them: the adoption reads the server's.
    adopted timestamptz := clock_timestamp();
    local   boolean;
BEGIN
    IF to_regclass('distributed_lock_adopting') IS NULL THEN
        RETURN;
    END IF;
    local := (SELECT atttypid FROM pg_attribute WHERE attrelid = 'distributed_lock_adopting'::regclass
              AND attname = 'expires_at') = 'timestamp'::regtype;
    -- Through text, so one statement reads either column type: a local
    -- time is placed in zone, an instant is kept as it is.
    -- The reference recorded neither when a lock was taken nor its TTL: a
    -- lock counts as taken at the adoption, with the lease it has left, as
    -- the domain bounds a length (an expired one: a nominal millisecond; one
    -- for longer than a year: a year, its expiry kept).
    INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
    SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at,
           least(greatest(r.expires_at - adopted, interval '1 millisecond'), interval '365 days'), adopted
    FROM (SELECT a.lock_key, a.owner_id, a.fence_token,
                 CASE WHEN local THEN a.expires_at::text::timestamp AT TIME ZONE zone
                      ELSE a.expires_at::text::timestamptz END AS expires_at
          FROM distributed_lock_adopting a) r;
    PERFORM setval('distributed_lock_fence_seq', max(fence_token)) FROM distributed_lock
    HAVING max(fence_token) >= (SELECT last_value FROM distributed_lock_fence_seq);
    DROP TABLE distributed_lock_adopting;
    RAISE NOTICE 'adopted the reference service''s distributed_lock: expires_at read in time zone %', zone;
END $$;
