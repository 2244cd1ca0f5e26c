package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// migrateLockSQL serialises concurrent migrations: CREATE ... IF NOT EXISTS
// run twice at the same moment can still fail on a catalog unique index.
const migrateLockSQL = `SELECT pg_advisory_xact_lock(hashtext('lockctl.migrate'))`

// Migrate applies schema (the text of schema.sql, which is idempotent) in one
// transaction.
func Migrate(ctx context.Context, db TxStarter, schema string) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLockSQL); err != nil {
			return err
		}
		// The simple protocol runs a script of several statements.
		_, err := tx.Exec(ctx, schema, pgx.QueryExecModeSimpleProtocol)
		return err
	})
	return Interpret(err)
}
