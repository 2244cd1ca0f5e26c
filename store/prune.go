package store

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// TxStarter is a DBTX that can open a transaction (or a savepoint, for a
// pgx.Tx). Migrate needs one.
type TxStarter = lockdb.TxStarter

// PruneResult counts what Prune deleted.
type PruneResult struct {
	Locks   int64
	Events  int64
	Waiters int64
	// Sessions counts sessions deleted a minute after they lapsed.
	Sessions int64
}

// pruneSQL calls distributed_lock_prune (schema.sql). It first takes the
// gate exclusively, waiting at most $3 ms for grants in flight: deleting a
// key's row is what could otherwise let the key's tokens go backwards (the
// function explains how).
const pruneSQL = `
SELECT p.locks, p.waiters, p.events, p.sessions FROM distributed_lock_prune($1::bigint, $2::bigint, $3::bigint) p`

// Prune deletes lock rows free for longer than freeFor and, when eventsOlder
// is positive, events older than that, and the waiter records of processes
// that died waiting and sessions that lapsed (a minute after either). It
// waits at most gateWait for grants in flight (a grant inside a long caller
// transaction holds the gate until that transaction ends); past that it fails with lockdb.ErrLockTimeout and deletes nothing.
func Prune(ctx context.Context, db DBTX, freeFor, eventsOlder, gateWait time.Duration) (PruneResult, error) {
	var eventsOlderUS *int64 // NULL: keep every event
	if eventsOlder > 0 {
		us := eventsOlder.Microseconds()
		eventsOlderUS = &us
	}
	var res PruneResult
	err := db.QueryRow(ctx, pruneSQL, freeFor.Microseconds(), eventsOlderUS, gateWait.Milliseconds()).
		Scan(&res.Locks, &res.Waiters, &res.Events, &res.Sessions)
	if err != nil {
		return PruneResult{}, Interpret(err)
	}
	return res, nil
}
