package store

// LockColumns selects a lock row, locker.LockInfo, from distributed_lock l
// and a clock reading c(ts) (clock_timestamp(), read once per statement).
// remaining is expires_at minus that reading, so it never depends on this
// machine's clock; it is zero for a free (released) row, whose expires_at is
// the last lease's. The read model (internal/lockview) selects these and
// its own columns from the same reading.
const LockColumns = `l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
	l.acquired_at, l.renewed_at, l.renew_count, l.released_at, l.metadata,
	CASE WHEN l.released_at IS NULL THEN l.expires_at - c.ts ELSE interval '0' END AS remaining,
	c.ts AS db_now`
