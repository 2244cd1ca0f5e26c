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
	// AdoptSeed lets migrate adopt the reference service's table. Without
	// it such a table makes migrate fail with ErrCannotAdopt: a service
	// that migrates at start-up never takes the table over by itself while
	// the reference service may still write it. `lockctl migrate` sets it.
	AdoptSeed bool
}

// ErrUnknownTimeZone: MigrateOptions.SeedTimeZone names no zone the server
// knows.
var ErrUnknownTimeZone = errors.New("unknown time zone")

// Migrate applies Schema in one transaction. It is idempotent: running it
// on a migrated database changes nothing. It refuses the reference
// service's table (ErrCannotAdopt): MigrateWith adopts it.
func Migrate(ctx context.Context, db TxStarter) error {
	_, err := MigrateWith(ctx, db, MigrateOptions{})
	return err
}

// Adoption is what a migrate did to the reference service's table.
type Adoption struct {
	Adopted bool // false: there was no such table
	// Locks counts the rows kept, Held those not expired at the adoption.
	Locks, Held int64
	// MaxToken is the largest token adopted: every later grant's is above.
	MaxToken int64
	// TimeZone is the zone expires_at was read in.
	TimeZone string
}

// checkZoneSQL fails with invalid_parameter_value (22023) for a zone the
// server does not know.
const checkZoneSQL = `SELECT now() AT TIME ZONE $1`

// seedZoneSQL and adoptSeedSQL hand the options to schema.sql's adoption
// block, for this transaction only.
const (
	seedZoneSQL  = `SELECT set_config('lockctl.seed_time_zone', $1, true)`
	adoptSeedSQL = `SELECT set_config('lockctl.adopt_seed', 'on', true)`
)

// adoptedSQL reads back what the adoption kept, in its transaction.
const adoptedSQL = `
SELECT count(*), count(*) FILTER (WHERE expires_at > clock_timestamp()), coalesce(max(fence_token), 0),
       coalesce(nullif(current_setting('lockctl.seed_time_zone', true), ''), current_setting('TimeZone'))
FROM distributed_lock`

// MigrateWith is Migrate with options; it says whether it adopted the
// reference service's table.
func MigrateWith(ctx context.Context, db TxStarter, opts MigrateOptions) (Adoption, error) {
	var a Adoption
	err := applyScriptWith(ctx, db, Schema, func(tx pgx.Tx) error {
		if opts.SeedTimeZone != "" {
			if _, err := tx.Exec(ctx, checkZoneSQL, opts.SeedTimeZone); err != nil {
				if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "22023" {
					return fmt.Errorf("%w %q: PostgreSQL does not know it (see pg_timezone_names)", ErrUnknownTimeZone, opts.SeedTimeZone)
				}
				return err
			}
			if _, err := tx.Exec(ctx, seedZoneSQL, opts.SeedTimeZone); err != nil {
				return err
			}
		}
		if !opts.AdoptSeed {
			// The script refuses the reference service's table itself, so
			// only an adopting migrate needs to know the shape beforehand.
			return nil
		}
		if _, err := tx.Exec(ctx, adoptSeedSQL); err != nil {
			return err
		}
		shape, err := TableShape(ctx, tx)
		a.Adopted = shape == ShapeSeed
		return err
	}, func(tx pgx.Tx) error {
		if !a.Adopted {
			return nil
		}
		return tx.QueryRow(ctx, adoptedSQL).Scan(&a.Locks, &a.Held, &a.MaxToken, &a.TimeZone)
	})
	if err != nil {
		return Adoption{}, err
	}
	return a, nil
}

// applyScriptWith runs a script of several statements in one transaction,
// serialised with other migrations, with before and after run in that
// transaction around the script (nil: nothing).
func applyScriptWith(ctx context.Context, db TxStarter, script string, before, after func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrateLockSQL); err != nil {
			return err
		}
		if before != nil {
			if err := before(tx); err != nil {
				return err
			}
		}
		// The simple protocol runs a script of several statements.
		if _, err := tx.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		if after != nil {
			return after(tx)
		}
		return nil
	})
	return Interpret(err)
}
