package store

// LockColumns selects a lock row, lockdb.LockInfo, from the readers' view
// distributed_lock_state l (sql/functions/15_state.sql): one row per key,
// judged by the protocol's rules at one reading of the database's clock
// (db_now). expires_at is when its lease ends (for a running shared or
// semaphore group, the last of its holders' leases), remaining that minus
// the reading, so it never depends on this machine's clock (zero for a
// free row, whose expires_at is the last lease's), delay_until is set
// only while the key is in its lock-delay, and kept_until only while a
// release keeps it until its hold's at-least point. The read model
// (internal/lockview) selects these and its own columns from the same row.
const LockColumns = `l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
	l.acquired_at, l.renewed_at, l.renew_count, l.released_at, l.metadata, l.remaining,
	l.lock_delay, l.delay_until, l.kept_until, l.db_now, l.lock_mode, coalesce(l.permits, 0) AS permits`
