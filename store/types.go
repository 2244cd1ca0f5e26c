package store

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Lock is one row of distributed_lock as of the database's clock when it was
// read. Remaining is expires_at minus the database's clock_timestamp() at
// read time, so it never depends on this machine's clock; it is zero for a
// free (released) row, whose ExpiresAt is the last lease's.
type Lock struct {
	Key           string         `db:"lock_key"`
	Owner         string         `db:"owner_id"`
	Token         int64          `db:"fence_token"`
	ExpiresAt     time.Time      `db:"expires_at"`
	TTL           time.Duration  `db:"ttl"`
	AcquiredAt    time.Time      `db:"acquired_at"`
	RenewedAt     *time.Time     `db:"renewed_at"`
	RenewCount    int32          `db:"renew_count"`
	ReleasedAt    *time.Time     `db:"released_at"`
	GrantKind     string         `db:"grant_kind"`
	PreviousOwner *string        `db:"previous_owner"`
	PreviousToken *int64         `db:"previous_token"`
	Metadata      map[string]any `db:"metadata"`
	Remaining     time.Duration  `db:"remaining"`
	HeldFor       time.Duration  `db:"held_for"`
	DBNow         time.Time      `db:"db_now"`
}

// LockColumns selects a Lock from distributed_lock l and a clock reading
// c(ts) (clock_timestamp(), read once per statement): remaining and held_for
// are computed from the same reading so they agree with each other. The
// read model (internal/lockview) selects rows with it too.
const LockColumns = `l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
	l.acquired_at, l.renewed_at, l.renew_count, l.released_at, l.grant_kind,
	l.previous_owner, l.previous_token, l.metadata,
	CASE WHEN l.released_at IS NULL THEN l.expires_at - c.ts ELSE interval '0' END AS remaining,
	c.ts - l.acquired_at AS held_for, c.ts AS db_now`

// State classifies the row as of DBNow (lockdb.StateOf).
func (l Lock) State() lockdb.State {
	return lockdb.StateOf(l.ReleasedAt, l.Remaining, l.TTL)
}
