package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// migrateLockSQL serialises concurrent migrations: each transaction of a
// migrate takes it first and only then reads which versions are recorded,
// so two migrates never apply one version twice. It is an advisory lock,
// which any role may hold, so every lock wait of a migrate's transactions
// is bounded (migrateLockWaitSQL): past the bound migrate fails, naming
// who holds the migrate lock (migrateLockHoldersSQL), and changes nothing.
const (
	migrateLockWaitSQL    = `SELECT pg_catalog.set_config('lock_timeout', $1, true)`
	migrateLockSQL        = `SELECT pg_advisory_xact_lock(hashtext('lockctl.migrate'))`
	migrateTryLockSQL     = `SELECT pg_try_advisory_xact_lock(hashtext('lockctl.migrate'))`
	migrateLockHoldersSQL = `
SELECT coalesce(string_agg(format('pid %s (role %s, application %L)', a.pid, a.usename, a.application_name), ', '
                           ORDER BY a.pid), 'nobody now')
FROM (SELECT hashtext('lockctl.migrate')::bigint AS key) k
JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
 AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
 AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
JOIN pg_stat_activity a ON a.pid = l.pid`
)

// Reading and recording versions. distributed_lock_migration is made by
// migration 1, so a database without it has none applied.
const (
	hasMigrationTableSQL = `SELECT to_regclass('distributed_lock_migration') IS NOT NULL`
	appliedSQL           = `SELECT version FROM distributed_lock_migration ORDER BY version`
	recordSQL            = `INSERT INTO distributed_lock_migration (version, checksum) VALUES ($1, $2)`
)

// newerSQLState is what schema.sql raises on a newer schema (Interpret maps
// it to lockdb.ErrSchemaNewer).
const newerSQLState = "LKA02"

func newerMessage(available int) string {
	return fmt.Sprintf("the lock schema is newer than this schema.sql (which has migrations up to %d): it was migrated by a newer lockctl; nothing was changed", available)
}

// MigrateOptions adjust MigrateWith. The zero value is Migrate's.
type MigrateOptions struct {
	// ReferenceTimeZone is the time zone the reference service's JVM ran in: a
	// table it made holds expires_at as local time (timestamp without time
	// zone), and adopting the table reads it in this zone. A name PostgreSQL
	// knows (pg_timezone_names), e.g. "Europe/Berlin". Defaults to the
	// session's TimeZone. It has no effect on a lockctl table.
	ReferenceTimeZone string
	// AdoptReference lets migrate adopt the reference service's table. Without
	// it such a table makes migrate fail with lockdb.ErrCannotAdopt: a service
	// that migrates at start-up never takes the table over by itself while
	// the reference service may still write it. `lockctl migrate` sets it.
	AdoptReference bool
	// LockWait bounds every lock wait of a migrate: for the migrate lock,
	// which any role may hold (it is an advisory lock), and for the lock
	// tables, which any role may lock ACCESS SHARE by their oid. Past it
	// migrate fails with lockdb.ErrLockTimeout, naming who held the migrate
	// lock, and changes nothing more. Defaults to DefaultMigrateLockWait.
	LockWait time.Duration
}

// DefaultMigrateLockWait is MigrateOptions.LockWait's default, and schema.sql's.
const DefaultMigrateLockWait = time.Minute

// lockTimeout is d as a lock_timeout setting.
func lockTimeout(d time.Duration) string { return fmt.Sprintf("%dms", max(d.Milliseconds(), 1)) }

// ErrUnknownTimeZone: MigrateOptions.ReferenceTimeZone names no zone the server
// knows.
var ErrUnknownTimeZone = errors.New("unknown time zone")

// Migrate applies the migrations db has not recorded, each once and in its
// own transaction, then re-creates the functions. Running it on a migrated
// database changes nothing. It refuses the reference service's table
// (lockdb.ErrCannotAdopt: MigrateWith adopts it), a schema migrated by a newer
// lockctl (lockdb.ErrSchemaNewer), one whose recorded migrations are
// another build's (lockdb.ErrSchemaUnknown) and a lock schema open to other roles
// (lockdb.ErrSchemaOpen).
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

// referenceZoneSQL and adoptReferenceSQL hand the options to the adoption's scripts
// (sql/adopt), for this transaction only.
const (
	referenceZoneSQL  = `SELECT set_config('lockctl.reference_time_zone', $1, true)`
	adoptReferenceSQL = `SELECT set_config('lockctl.adopt_reference', 'on', true)`
)

// adoptedSQL reads back what the adoption kept, in its transaction.
const adoptedSQL = `
SELECT count(*), count(*) FILTER (WHERE expires_at > clock_timestamp()), coalesce(max(fence_token), 0),
       coalesce(nullif(current_setting('lockctl.reference_time_zone', true), ''), current_setting('TimeZone'))
FROM distributed_lock`

// MigrateWith is Migrate with options; it says whether it adopted the
// reference service's table.
func MigrateWith(ctx context.Context, db TxStarter, opts MigrateOptions) (Adoption, error) {
	a, err := migrateWith(ctx, db, opts, migrations)
	return a, Interpret(err)
}

// migrateWith applies ms (the package's migrations, or a test's).
func migrateWith(ctx context.Context, db TxStarter, opts MigrateOptions, ms []Migration) (Adoption, error) {
	var a Adoption
	if opts.ReferenceTimeZone != "" {
		if err := checkZone(ctx, db, opts.ReferenceTimeZone); err != nil {
			return a, err
		}
	}
	for _, m := range ms {
		if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			applied, err := lockAndReadApplied(ctx, tx, ms, opts.LockWait)
			if err != nil || slices.Contains(applied, m.Version) {
				return err
			}
			if m.Version == adoptVersion {
				if a, err = adoptAround(ctx, tx, opts, func() error { return execScript(ctx, tx, m.SQL) }); err != nil {
					return err
				}
			} else if err := execScript(ctx, tx, m.SQL); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, recordSQL, m.Version, m.Checksum())
			return err
		}); err != nil {
			return Adoption{}, fmt.Errorf("migration %03d %s: %w", m.Version, m.Name, err)
		}
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := lockAndReadApplied(ctx, tx, ms, opts.LockWait); err != nil {
			return err
		}
		return execScript(ctx, tx, functionsSQL)
	})
	if err != nil {
		return Adoption{}, fmt.Errorf("functions: %w", err)
	}
	return a, nil
}

// checkZone refuses a zone the server does not know, before anything runs.
func checkZone(ctx context.Context, db TxStarter, zone string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, checkZoneSQL, zone); err != nil {
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "22023" {
				return fmt.Errorf("%w %q: PostgreSQL does not know it (see pg_timezone_names)", ErrUnknownTimeZone, zone)
			}
			return err
		}
		return nil
	})
}

// adoptAround runs apply (the migration that makes distributed_lock)
// between the two parts of the adoption, with opts handed to them; on a
// database without the reference table both parts do nothing.
func adoptAround(ctx context.Context, tx pgx.Tx, opts MigrateOptions, apply func() error) (Adoption, error) {
	var a Adoption
	if opts.ReferenceTimeZone != "" {
		if _, err := tx.Exec(ctx, referenceZoneSQL, opts.ReferenceTimeZone); err != nil {
			return a, err
		}
	}
	if opts.AdoptReference {
		if _, err := tx.Exec(ctx, adoptReferenceSQL); err != nil {
			return a, err
		}
		shape, err := TableShape(ctx, tx)
		if err != nil {
			return a, err
		}
		a.Adopted = shape == ShapeReference
	}
	if err := execScript(ctx, tx, adoptSQL[0]); err != nil {
		return a, err
	}
	if err := apply(); err != nil {
		return a, err
	}
	if err := execScript(ctx, tx, adoptSQL[1]); err != nil {
		return a, err
	}
	if a.Adopted {
		return a, tx.QueryRow(ctx, adoptedSQL).Scan(&a.Locks, &a.Held, &a.MaxToken, &a.TimeZone)
	}
	return a, nil
}

// lockAndReadApplied bounds tx's lock waits by wait, refuses a lock schema open to
// other roles (lockSchemaGuardSQL: before anything else runs on the
// caller's path), takes the migrate lock, refuses a schema whose recorded
// migrations are not ms (checksumGuardSQL), then reads the recorded
// versions, refusing a schema newer than ms.
func lockAndReadApplied(ctx context.Context, tx pgx.Tx, ms []Migration, wait time.Duration) ([]int, error) {
	if wait <= 0 {
		wait = DefaultMigrateLockWait
	}
	if _, err := tx.Exec(ctx, migrateLockWaitSQL, lockTimeout(wait)); err != nil {
		return nil, err
	}
	if err := execScript(ctx, tx, lockSchemaGuardSQL); err != nil {
		return nil, err
	}
	if err := takeMigrateLock(ctx, tx); err != nil {
		return nil, err
	}
	if err := execScript(ctx, tx, checksumGuardSQL(ms)); err != nil {
		return nil, err
	}
	applied, err := readApplied(ctx, tx)
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 && applied[len(applied)-1] > ms[len(ms)-1].Version {
		return nil, fmt.Errorf("%w (it records migration %d; this one has up to %d)",
			lockdb.ErrSchemaNewer, applied[len(applied)-1], ms[len(ms)-1].Version)
	}
	return applied, nil
}

// takeMigrateLock takes the migrate lock in tx, waiting for it at most as
// long as migrateLockWaitSQL says; past that it names who held it (as
// seen before the wait).
func takeMigrateLock(ctx context.Context, tx pgx.Tx) error {
	var free bool
	if err := tx.QueryRow(ctx, migrateTryLockSQL).Scan(&free); err != nil || free {
		return err
	}
	var holders string
	if err := tx.QueryRow(ctx, migrateLockHoldersSQL).Scan(&holders); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, migrateLockSQL); err != nil {
		return fmt.Errorf("waiting for lockctl's migrate lock (an advisory lock, which any role may take), held by %s: %w",
			holders, Interpret(err))
	}
	return nil
}

// readApplied is the recorded versions, ascending (none without the table).
func readApplied(ctx context.Context, db DBTX) ([]int, error) {
	var exists bool
	if err := db.QueryRow(ctx, hasMigrationTableSQL).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := db.Query(ctx, appliedSQL)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// execScript runs a script of several statements (the simple protocol
// allows that).
func execScript(ctx context.Context, tx pgx.Tx, script string) error {
	_, err := tx.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
	return err
}
