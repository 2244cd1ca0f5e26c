package testdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// DBClock is the protocol's clock of one test schema, moved by the test:
// every protocol function, rule and reader of that schema reads the time
// through distributed_lock_now(), so a lease's expiry, a lock-delay, a
// waiter record's life or a session's TTL pass when the test says so
// instead of after a sleep.
type DBClock struct {
	t               testing.TB
	db              store.DBTX
	advance, setSQL string // clockAdvanceSQL, clockSetSQL for the schema
}

// clockShiftTable holds the one row of a moved clock: how far the schema's
// time is ahead of the server's (it may be behind, after Set).
const clockShiftTable = "lockctl_test_clock"

// The moved clock: the server's, plus the schema's shift. %[1]s is the
// quoted schema. Not inlined (a subquery), so each call reads the shift
// as it runs, and a moved clock is seen by the next statement of every
// connection. Readers (viewer, operator and service roles) call it as
// themselves, so the shift is readable by all.
const (
	clockTableSQL = `CREATE TABLE IF NOT EXISTS %[1]s.` + clockShiftTable + ` (shift interval NOT NULL)`
	clockRowSQL   = `INSERT INTO %[1]s.` + clockShiftTable + ` (shift)
SELECT interval '0' WHERE NOT EXISTS (SELECT 1 FROM %[1]s.` + clockShiftTable + `)`
	clockGrantSQL = `GRANT SELECT ON %[1]s.` + clockShiftTable + ` TO PUBLIC`
	clockFuncSQL  = `CREATE OR REPLACE FUNCTION %[1]s.distributed_lock_now()
RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
    SELECT pg_catalog.clock_timestamp() + (SELECT c.shift FROM %[1]s.` + clockShiftTable + ` c)
$$`
	clockAdvanceSQL = `UPDATE %[1]s.` + clockShiftTable + ` SET shift = shift + $1::bigint * interval '1 microsecond'`
	clockSetSQL     = `UPDATE %[1]s.` + clockShiftTable + ` SET shift = $1::timestamptz - pg_catalog.clock_timestamp()`
	clockNowSQL     = `SELECT distributed_lock_now()`
)

// Clock makes the clock of db's schema (its current_schema(): a schema of
// the test's own, as New and DSN make, never one other tests share) one
// the test moves: distributed_lock_now() becomes the server's clock plus
// a shift kept in a table of that schema, zero at first. db must connect
// as the schema's owner (the role that migrated it), the only role that
// may replace the function. Calling it again on the same schema keeps the
// shift. The next migrate of the schema puts the real clock back (the
// functions are re-created on every migrate): a test that migrates again
// calls Clock again.
//
// The database's time moves; this process's does not. A test that also
// drives a Locker's own clock (the locker package's fake clock) moves
// both.
func Clock(t testing.TB, db store.DBTX) *DBClock {
	t.Helper()
	ctx := context.Background()
	var schema string
	if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatalf("the schema whose clock to move: %v", err)
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	for _, tmpl := range []string{clockTableSQL, clockRowSQL, clockGrantSQL, clockFuncSQL} {
		if _, err := db.Exec(ctx, fmt.Sprintf(tmpl, quoted)); err != nil {
			t.Fatalf("make the clock of schema %s movable: %v", schema, err)
		}
	}
	return &DBClock{t: t, db: db,
		advance: fmt.Sprintf(clockAdvanceSQL, quoted), setSQL: fmt.Sprintf(clockSetSQL, quoted)}
}

// Advance moves the schema's time d forward (backward for d < 0).
func (c *DBClock) Advance(d time.Duration) {
	c.t.Helper()
	if _, err := c.db.Exec(context.Background(), c.advance, d.Microseconds()); err != nil {
		c.t.Fatalf("advance the database clock by %s: %v", d, err)
	}
}

// Set moves the schema's time to at, from where it runs on as the
// server's clock does.
func (c *DBClock) Set(at time.Time) {
	c.t.Helper()
	if _, err := c.db.Exec(context.Background(), c.setSQL, at); err != nil {
		c.t.Fatalf("set the database clock to %s: %v", at, err)
	}
}

// Now is the schema's time now, as the protocol reads it.
func (c *DBClock) Now() time.Time {
	c.t.Helper()
	var now time.Time
	if err := c.db.QueryRow(context.Background(), clockNowSQL).Scan(&now); err != nil {
		c.t.Fatalf("read the database clock: %v", err)
	}
	return now
}
