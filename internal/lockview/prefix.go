package lockview

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// LockFilter narrows a listing of lock rows (`lockctl ls`).
type LockFilter struct {
	// Prefix keeps keys starting with it; "" keeps every key.
	Prefix string
	// States keeps rows in one of these states; nil keeps every state.
	States []lockdb.State
}

// eachLockSQL reads the keys that pass a LockFilter from the readers' view
// (distributed_lock_state), ordered by key, at one reading of the clock,
// so the remaining times and states of all rows are measured at the same
// instant, and the state filtered on is the one shown. $1 is the prefix,
// $2 the states (NULL: all). Both filters run in the server, so rows that do not
// pass are never sent. starts_with needs no escaping of % and _, unlike
// LIKE; with the prefix bound, the planner folds the empty-prefix test away
// and reads the prefix as a range of an index on lock_key where the
// collation allows one (docs/operations.md, "Large tables").
const eachLockSQL = `SELECT ` + lockColumns + `
FROM distributed_lock_state l
WHERE ($1 = '' OR starts_with(l.lock_key, $1))
  AND ($2::text[] IS NULL OR l.state = ANY ($2::text[]))
ORDER BY l.lock_key`

// EachLock calls fn with each lock row that passes f, in key order, as the
// rows arrive from the server: memory does not grow with the number of
// rows, so `lockctl ls` can print a table of millions. An error from fn
// stops the listing and is returned.
func EachLock(ctx context.Context, db store.DBTX, f LockFilter, fn func(Lock) error) error {
	var states []string
	if f.States != nil {
		states = make([]string, len(f.States))
		for i, s := range f.States {
			states[i] = string(s)
		}
	}
	rows, err := db.Query(ctx, eachLockSQL, f.Prefix, states)
	if err != nil {
		return store.Interpret(err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := pgx.RowToStructByName[Lock](rows)
		if err != nil {
			return store.Interpret(err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return store.Interpret(rows.Err())
}

// ListPrefix returns the lock rows whose key starts with prefix, ordered by
// key ("" returns every row), collected: for small tables and tests.
func ListPrefix(ctx context.Context, db store.DBTX, prefix string) ([]Lock, error) {
	locks := []Lock{}
	err := EachLock(ctx, db, LockFilter{Prefix: prefix}, func(l Lock) error {
		locks = append(locks, l)
		return nil
	})
	return locks, err
}
