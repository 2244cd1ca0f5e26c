package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TxStarter is a DBTX that can open a transaction (or a savepoint, for a
// pgx.Tx). Prune and Migrate need one.
type TxStarter interface {
	DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// PruneResult counts what Prune deleted.
type PruneResult struct {
	Locks   int64
	Events  int64
	Waiters int64
}

// pruneGateSQL waits until no grant statement is between drawing a token
// and writing it (they hold the gate shared, see grantSQL), and keeps new ones
// out until this transaction ends.
//
// Why: deleting a key's row is what could let a token go backwards. A grant
// that drew token t on its insert path (the key had no row) would insert t; if, after
// t was drawn, the key was granted with a larger token, released and pruned,
// the insert would put a smaller token after a larger one. With the gate,
// every grant that drew a token before the delete has finished before it, and
// every grant after it draws a token larger than any the deleted row had.
const pruneGateSQL = `SELECT pg_advisory_xact_lock('distributed_lock'::regclass::oid::int, 0)`

// pruneLocksSQL deletes rows free (released, or expired and never released)
// for longer than the retention.
const pruneLocksSQL = `
DELETE FROM distributed_lock l
WHERE (l.released_at IS NOT NULL AND l.released_at < clock_timestamp() - $1::bigint * interval '1 microsecond')
   OR (l.released_at IS NULL AND l.expires_at < clock_timestamp() - $1::bigint * interval '1 microsecond')`

// pruneWaitersSQL deletes waiter records of processes that died waiting.
const pruneWaitersSQL = `DELETE FROM distributed_lock_waiter w WHERE w.seen_until < clock_timestamp() - interval '1 minute'`

// pruneEventsSQL deletes history older than a retention.
const pruneEventsSQL = `
DELETE FROM distributed_lock_event e
WHERE e.occurred_at < clock_timestamp() - $1::bigint * interval '1 microsecond'`

// Prune deletes lock rows free for longer than freeFor and, when eventsOlder
// is positive, events older than that. It waits at most gateWait for grants in
// flight (a grant inside a long caller transaction holds the gate until that
// transaction ends); past that it fails with ErrLockTimeout and deletes nothing.
func Prune(ctx context.Context, db TxStarter, freeFor, eventsOlder, gateWait time.Duration) (PruneResult, error) {
	var res PruneResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`,
			fmt.Sprintf("%dms", gateWait.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pruneGateSQL); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, pruneLocksSQL, freeFor.Microseconds())
		if err != nil {
			return err
		}
		res.Locks = tag.RowsAffected()
		if tag, err = tx.Exec(ctx, pruneWaitersSQL); err != nil {
			return err
		}
		res.Waiters = tag.RowsAffected()
		if eventsOlder > 0 {
			if tag, err = tx.Exec(ctx, pruneEventsSQL, eventsOlder.Microseconds()); err != nil {
				return err
			}
			res.Events = tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return PruneResult{}, Interpret(err)
	}
	return res, nil
}
