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
	// EndDelay: end a key's lock-delay early (audited).
	EndDelay bool `db:"end_delay"`
	// EndSession: end anyone's session, force-expiring its leases (audited).
	EndSession bool `db:"end_session"`
	// Revoke: ask anyone's holder to let go (audited).
	Revoke bool `db:"revoke"`
	// Prune: delete rows that stayed free.
	Prune bool `db:"prune"`
}

// capabilitiesSQL asks the server whether the role may execute the
// protocol functions (schema.sql) each operation calls: every write goes
// through them, as the grant sets of internal/roles give them. Unqualified
// names resolve through search_path, like every other statement here; a
// database without the functions fails with lockdb.ErrNotMigrated.
const capabilitiesSQL = `
SELECT has_function_privilege('distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean, bigint)', 'EXECUTE')
       AND has_function_privilege('distributed_lock_renew(text, text, bigint, bigint)', 'EXECUTE')
       AND has_function_privilege('distributed_lock_release(text, text, bigint, boolean, boolean, text)', 'EXECUTE') AS hold,
       has_function_privilege('distributed_lock_force_expire(text, bigint, text, text)', 'EXECUTE')
       AND has_function_privilege('distributed_lock_force_release(text, bigint, text, text)', 'EXECUTE') AS force,
       has_function_privilege('distributed_lock_end_delay(text, text, text)', 'EXECUTE') AS end_delay,
       has_function_privilege('distributed_lock_end_session(bigint, text, text)', 'EXECUTE') AS end_session,
       has_function_privilege('distributed_lock_revoke(text, bigint, bigint, text, text)', 'EXECUTE') AS revoke,
       has_function_privilege('distributed_lock_prune(bigint, bigint, bigint)', 'EXECUTE') AS prune`

// Capabilities reports what the role connected through db may do. It does
// not take a replica's read-only state into account
// (lockview.Page.InRecovery says that).
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
