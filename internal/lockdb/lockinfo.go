package lockdb

import "time"

// LockInfo is a key's lock row as of the database's clock when it was
// read: the one Go definition of the row, which `lockctl ls`, the console
// and the CLI's refusals read (internal/lockview adds its own columns
// around it). The db tags name the columns of distributed_lock
// (schema.sql) it is read from; remaining and db_now are computed when it
// is read.
type LockInfo struct {
	Key   string `db:"lock_key"`
	Owner string `db:"owner_id"`    // the holder, or the last holder of a free key
	Token int64  `db:"fence_token"` // the current (or last) grant's fencing token
	// ExpiresAt is on the database's clock; a free key keeps its last
	// lease's expiry.
	ExpiresAt  time.Time      `db:"expires_at"`
	TTL        time.Duration  `db:"ttl"`
	AcquiredAt time.Time      `db:"acquired_at"` // when the current (or last) grant was made
	RenewedAt  *time.Time     `db:"renewed_at"`  // nil until the grant is renewed
	RenewCount int32          `db:"renew_count"`
	ReleasedAt *time.Time     `db:"released_at"` // nil while the key is held or expired
	Metadata   map[string]any `db:"metadata"`    // what the granting Locker's Config.Metadata said
	// Remaining is ExpiresAt minus the database's clock at read time
	// (negative once expired), zero for a free key.
	Remaining time.Duration `db:"remaining"`
	// LockDelay is the current (or last) grant's lock-delay.
	LockDelay time.Duration `db:"lock_delay"`
	// DelayUntil is when the key's lock-delay ends, set only while it is
	// in one (StateDelayed): nobody is granted it before then.
	DelayUntil *time.Time `db:"delay_until"`
	// KeptUntil is the at-least point of a hold a release keeps the key
	// until, set only while it does (StateKept; DelayUntil is then the
	// same).
	KeptUntil *time.Time `db:"kept_until"`
	// DBNow is the database's clock when the row was read.
	DBNow time.Time `db:"db_now"`
	// Mode is how the key is, or was last, held: ModeExclusive, ModeShared
	// or ModeSemaphore. A shared or semaphore key's row is its holders'
	// group: Owner GroupOwner, ExpiresAt the last of their leases' expiries.
	Mode string `db:"lock_mode"`
	// Permits is a semaphore key's permits (kept while it is free), else 0.
	Permits int32 `db:"permits"`
}

// State classifies the row as of DBNow.
func (i LockInfo) State() State {
	return StateOf(i.ReleasedAt, i.KeptUntil != nil, i.DelayUntil != nil, i.Remaining, i.TTL)
}
