package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RoleCapabilities is what the connected role may do to locks, so the
// console offers only actions that can succeed. Reading is assumed: a role
// that cannot read sees an error on every poll instead.
type RoleCapabilities struct {
	// Hold: acquire, renew and release its own leases.
	Hold bool `db:"hold"`
	// Force: force-expire and force-release anyone's lease (audited).
	Force bool `db:"force"`
	// Prune: delete rows that stayed free.
	Prune bool `db:"prune"`
}

// capabilitiesSQL asks the server about the privileges each operation
// uses, as the grant sets of internal/roles give them: a grant inserts or
// updates the lock row, draws a token and logs an event; force updates
// two columns and logs an event; prune deletes rows. Unqualified names
// resolve through search_path, like every other statement here.
const capabilitiesSQL = `
SELECT has_table_privilege('distributed_lock', 'INSERT')
       AND has_table_privilege('distributed_lock', 'UPDATE')
       AND has_sequence_privilege('distributed_lock_fence_seq', 'USAGE')
       AND has_table_privilege('distributed_lock_event', 'INSERT') AS hold,
       has_column_privilege('distributed_lock', 'expires_at', 'UPDATE')
       AND has_column_privilege('distributed_lock', 'released_at', 'UPDATE')
       AND has_table_privilege('distributed_lock_event', 'INSERT') AS force,
       has_table_privilege('distributed_lock', 'DELETE') AS prune`

// Capabilities reports what the role connected through db may do. It does
// not take a replica's read-only state into account (Page.InRecovery says
// that).
func Capabilities(ctx context.Context, db DBTX) (RoleCapabilities, error) {
	rows, err := db.Query(ctx, capabilitiesSQL)
	if err != nil {
		return RoleCapabilities{}, fmt.Errorf("store: capabilities: %w", Interpret(err))
	}
	c, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RoleCapabilities])
	if err != nil {
		return RoleCapabilities{}, fmt.Errorf("store: capabilities: %w", Interpret(err))
	}
	return c, nil
}
