package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// lockSchemaPathSQL makes schema the transaction's first schema, where the
// guard looks.
const lockSchemaPathSQL = `SELECT set_config('search_path', quote_ident($1), true)`

// CheckLockSchema refuses, with lockdb.ErrSchemaOpen naming each role and
// object and what to run, the lock schema schema when roles other than its
// lock tables' owner may create objects in it or own functions or
// operators there, as Migrate does (sql/guard). It sets tx's search_path to
// schema for the rest of the transaction.
func CheckLockSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	if _, err := tx.Exec(ctx, lockSchemaPathSQL, schema); err != nil {
		return Interpret(err)
	}
	return Interpret(execScript(ctx, tx, lockSchemaGuardSQL))
}
