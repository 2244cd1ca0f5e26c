CREATE INDEX IF NOT EXISTS distributed_lock_by_expiry   ON distributed_lock ((CASE WHEN released_at IS NULL THEN expires_at ELSE 'infinity'::timestamptz END), lock_key);
CREATE INDEX IF NOT EXISTS distributed_lock_by_token    ON distributed_lock (fence_token);
CREATE INDEX IF NOT EXISTS distributed_lock_by_acquired ON distributed_lock (acquired_at, lock_key);
