package store

// LockColumns selects a lock row, lockdb.LockInfo, from distributed_lock l
// and a clock reading c(ts) (distributed_lock_now(), the protocol's clock,
// read once per statement).
// remaining is expires_at minus that reading, so it never depends on this
// machine's clock; it is zero for a free (released) row, whose expires_at is
// the last lease's. delay_until is set only while the key is in its
// lock-delay (DelayUntilColumn). The read model (internal/lockview) selects
// these and its own columns from the same reading.
const LockColumns = `l.lock_key, l.owner_id, l.fence_token, ` + ExpiresAtColumn + ` AS expires_at, l.ttl,
	l.acquired_at, l.renewed_at, l.renew_count, l.released_at, l.metadata,
	CASE WHEN l.released_at IS NULL THEN ` + ExpiresAtColumn + ` - c.ts ELSE interval '0' END AS remaining,
	l.lock_delay, ` + DelayUntilColumn + ` AS delay_until,
	c.ts AS db_now, l.lock_mode, coalesce(l.permits, 0) AS permits`

// ExpiresAtColumn is when row l's lease ends: its expires_at, or, for the
// row of a running shared or semaphore group (which expires only in the far
// future, sql/functions/11_shared.sql), the last expiry of its holders'
// unreleased leases (its start when it has none). Only such rows read the
// holders.
const ExpiresAtColumn = `(CASE WHEN l.lock_mode <> 'exclusive' AND l.released_at IS NULL
	THEN coalesce((SELECT max(h.expires_at) FROM distributed_lock_holder h
	               WHERE h.lock_key = l.lock_key AND h.released_at IS NULL), l.acquired_at)
	ELSE l.expires_at END)`

// DelayUntilColumn is when the lock-delay of row l ends, as of c.ts, and
// NULL when l is not in one: distributed_lock_delayed and
// distributed_lock_delay_end (sql/functions/02_rules.sql) written out,
// because a reader (the viewer role) may not execute the rules, which are
// granted to nobody. store/protocol's TestReadDelayIsTheRule holds the two
// together.
const DelayUntilColumn = `CASE WHEN (l.released_at IS NULL OR l.released_at >= l.expires_at) AND l.expires_at <= c.ts
		AND l.expires_at + l.lock_delay > c.ts THEN l.expires_at + l.lock_delay
	WHEN l.released_at < l.expires_at AND l.delay_until > c.ts THEN l.delay_until END`
