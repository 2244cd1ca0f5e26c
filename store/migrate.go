package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// migrateLockSQL serialises concurrent migrations: CREATE ... IF NOT EXISTS
// run twice at the same moment can still fail on a catalog unique index.
const migrateLockSQL = `SELECT pg_advisory_xact_lock(hashtext('lockctl.migrate'))`

// Migrate applies Schema in one transaction. It is idempotent: running it
// on a migrated database changes nothing.
func Migrate(ctx context.Context, db TxStarter) error {
	return applyScript(ctx, db, Schema)
}

// applyScript runs a script of several statements in one transaction,
// serialised with other migrations.
func applyScript(ctx context.Context, db TxStarter, script string) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLockSQL); err != nil {
			return err
		}
		// The simple protocol runs a script of several statements.
		_, err := tx.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
		return err
	})
	return Interpret(err)
}
