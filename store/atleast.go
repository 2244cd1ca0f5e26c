package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// holdAtLeastSQL calls distributed_lock_hold_at_least (schema.sql). A
// grant that is not the caller's current, running exclusive lease reads
// as no row.
const holdAtLeastSQL = `
SELECT h.kept_until FROM distributed_lock_hold_at_least($1, $2, $3, $4::bigint) h
WHERE h.outcome = '` + lockdb.OutcomeAtLeast + `'`

// HoldAtLeast keeps ref's key at least period from its grant: a release
// before then leaves the key kept until then (the at-least point, which it
// returns). ok is false when ref is not the caller's current, running
// exclusive lease.
func HoldAtLeast(ctx context.Context, db DBTX, ref LeaseRef, period time.Duration) (keptUntil time.Time, ok bool, err error) {
	err = db.QueryRow(ctx, holdAtLeastSQL, ref.Key, ref.Owner, ref.Token, period.Microseconds()).Scan(&keptUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, Interpret(err)
	}
	return keptUntil, true, nil
}
