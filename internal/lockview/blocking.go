package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Wait is one waiting owner: the key it waits for and who holds that key.
// It marshals to the `lockctl blocking --json` shape.
type Wait struct {
	Waiter string `json:"waiter"`
	Key    string `json:"key"`
	// Holders are the key's current owners while its lease is held; empty
	// when nobody holds it (free, lapsed or no row: the head of the queue
	// takes it next).
	Holders   []string `json:"holders"`
	WaitingMS int64    `json:"waiting_ms"`
	// Waited is WaitingMS at full precision, for countdowns.
	Waited time.Duration `json:"-"`
	// KeyState is the key's state when Holders is empty: free, expired,
	// or "" when the key has no row.
	KeyState lockdb.State `json:"-"`
}

// Blocking is who waits for whom across keys: every live wait and the
// deadlocks among them. It marshals to exactly
// {"waits": [...], "deadlocks": [[owners...]]}.
type Blocking struct {
	// Waits, longest waiting first.
	Waits []Wait `json:"waits"`
	// Deadlocks are the cycles of owners that wait for one another, each
	// in wait order (each owner waits for a key the next one holds; the
	// last waits for the first), starting at the smallest name.
	Deadlocks [][]string `json:"deadlocks"`
	// Truncated: there were more live waits than MaxBlockingWaits; Waits
	// holds the longest-waiting ones, so roots and cycles among the rest
	// are not seen.
	Truncated bool `json:"-"`
	// DBNow is the database clock of the read.
	DBNow time.Time `json:"-"`
}

// MaxBlockingWaits bounds one ReadBlocking: the waits it reads, longest
// waiting first.
const MaxBlockingWaits = 5000

// blockingRow is one (waiter, key) pair with the key's row, if any.
type blockingRow struct {
	Waiter     string        `db:"waiter"`
	Key        string        `db:"lock_key"`
	Waited     time.Duration `db:"waited"`
	Owner      *string       `db:"owner_id"`
	State      *string       `db:"state"` // distributed_lock_state's
	DBNow      time.Time     `db:"db_now"`
	HasLockRow bool          `db:"has_row"`
}

// blockingSQL reads the live waits (an owner waiting twice for one key
// counts once, from its first arrival), longest waiting first, with the
// lease of the key each waits for, from one clock reading. $1 is the bound
// plus one, to tell a truncated read.
const blockingSQL = `
WITH c AS (SELECT distributed_lock_now() AS ts),
w AS (
    SELECT w.owner_id AS waiter, w.lock_key, min(w.waiting_since) AS since
    FROM distributed_lock_waiter w, c
    WHERE w.seen_until > c.ts
    GROUP BY w.owner_id, w.lock_key
    ORDER BY since, w.owner_id, w.lock_key
    LIMIT $1)
SELECT w.waiter, w.lock_key, c.ts - w.since AS waited, l.owner_id, l.state, c.ts AS db_now,
       l.lock_key IS NOT NULL AS has_row
FROM w CROSS JOIN c
LEFT JOIN distributed_lock_state l ON l.lock_key = w.lock_key
ORDER BY w.since, w.waiter, w.lock_key`

// ReadBlocking reads every live wait (up to MaxBlockingWaits) in one
// statement and works out, in Go, who blocks whom (AnalyzeBlocking).
func ReadBlocking(ctx context.Context, db store.DBTX) (Blocking, error) {
	rows, err := collect[blockingRow](db.Query(ctx, blockingSQL, MaxBlockingWaits+1))
	if err != nil {
		return Blocking{}, err
	}
	truncated := len(rows) > MaxBlockingWaits
	if truncated {
		rows = rows[:MaxBlockingWaits]
	}
	waits := make([]Wait, len(rows))
	var dbNow time.Time
	for i, r := range rows {
		waits[i] = r.wait()
		dbNow = r.DBNow
	}
	b := AnalyzeBlocking(waits)
	b.Truncated, b.DBNow = truncated, dbNow
	return b, nil
}

// wait says who holds the row's key: its owner while the key is held (the
// readers' view decides, as everywhere else).
func (r blockingRow) wait() Wait {
	w := Wait{Waiter: r.Waiter, Key: r.Key, Waited: r.Waited, WaitingMS: r.Waited.Milliseconds(), Holders: []string{}}
	if !r.HasLockRow || r.Owner == nil || r.State == nil {
		return w
	}
	switch st := lockdb.State(*r.State); st {
	case lockdb.StateHeld, lockdb.StateExpiring:
		w.Holders = []string{*r.Owner}
	default:
		w.KeyState = st
	}
	return w
}
