package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrateLockSQL serialises concurrent migrations: CREATE ... IF NOT EXISTS
// run twice at the same moment can still fail on a catalog unique index.
const migrateLockSQL = `SELECT pg_advisory_xact_lock(hashtext('lockctl.migrate'))`

// MigrateOptions adjust MigrateWith. The zero value is Migrate's.
type MigrateOptions struct {
	// SeedTimeZone is the time zone the reference service's JVM ran in: a
	// table it made holds expires_at as local time (timestamp without time
	// zone), and adopting the table reads it in this zone. A name PostgreSQL
	// knows (pg_timezone_names), e.g. "Europe/Berlin". Defaults to the
	// session's TimeZone. It has no effect on a lockctl table.
	SeedTimeZone string
}

// ErrUnknownTimeZone: MigrateOptions.SeedTimeZone names no zone the server
// knows.
var ErrUnknownTimeZone = errors.New("unknown time zone")

// Migrate applies Schema in one transaction. It is idempotent: running it
// on a migrated database changes nothing. On the reference service's
// table it adopts the table in place (see schema.sql), reading expires_at
// in the session's TimeZone.
func Migrate(ctx context.Context, db TxStarter) error {
	return MigrateWith(ctx, db, MigrateOptions{})
}

// checkZoneSQL fails with invalid_parameter_value (22023) for a zone the
// server does not know.
const checkZoneSQL = `SELECT now() AT TIME ZONE $1`

// seedZoneSQL hands the zone to schema.sql's adoption block, for this
// transaction only.
const seedZoneSQL = `SELECT set_config('lockctl.seed_time_zone', $1, true)`

// MigrateWith is Migrate with options.
func MigrateWith(ctx context.Context, db TxStarter, opts MigrateOptions) error {
	return applyScriptWith(ctx, db, Schema, func(tx pgx.Tx) error {
		if opts.SeedTimeZone == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, checkZoneSQL, opts.SeedTimeZone); err != nil {
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "22023" {
				return fmt.Errorf("%w %q: PostgreSQL does not know it (see pg_timezone_names)", ErrUnknownTimeZone, opts.SeedTimeZone)
			}
			return err
		}
		_, err := tx.Exec(ctx, seedZoneSQL, opts.SeedTimeZone)
		return err
	})
}

// applyScript runs a script of several statements in one transaction,
// serialised with other migrations.
func applyScript(ctx context.Context, db TxStarter, script string) error {
	return applyScriptWith(ctx, db, script, nil)
}

// applyScriptWith is applyScript with prepare run in the transaction
// before the script.
func applyScriptWith(ctx context.Context, db TxStarter, script string, prepare func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLockSQL); err != nil {
			return err
		}
		if prepare != nil {
			if err := prepare(tx); err != nil {
				return err
			}
		}
		// The simple protocol runs a script of several statements.
		_, err := tx.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
		return err
	})
	return Interpret(err)
}
