package testdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// Eventually looks again after firstPoll, then twice as long each time up
// to maxPoll: a state that arrives in milliseconds is seen in
// milliseconds, and a long wait (a screen, a server) does not load a shared
// machine with checks.
const (
	firstPoll = time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// Eventually checks cond until it returns true, and fails the test naming
// what if that has not happened within the given time. It is how a test
// waits for another goroutine or process to reach a point it can observe
// (a database row, a backend waiting for a lock, a screen), instead of
// sleeping for a guessed while.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("%s: not within %s", what, within)
	}
}

// Within is Eventually for a caller that reports the failure itself (with
// the last state it saw, say): it returns whether cond held in time.
func Within(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for poll := firstPoll; !cond(); poll = min(2*poll, maxPoll) {
		if time.Now().After(deadline) {
			return false
		}
		pause(poll)
	}
	return true
}

// pause is the one place the tests' waits let real time pass: every wait
// looks at what it waits for between pauses, and none pauses longer than
// maxPoll, so none waits much beyond the moment its condition holds.
func pause(d time.Duration) { time.Sleep(d) }

// Pace is the one place a simulated client lets real time pass: its
// think time between calls, a hold, a stall past its lease, a workload's
// run (and the fault suite's lag monitor, which measures how late such a
// pause ends). There is nothing to wait for (the pause is what it
// simulates), and no moved clock can stand in for it: the clients share
// their clock with one another, and some with real processes (Patroni,
// etcd, the other languages' clients) that run on clocks of their own.
func Pace(d time.Duration) { time.Sleep(d) }

const lockWaitSQL = `SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`

// WaitUntilBlocked returns once the server backend pid (e.g.
// conn.PgConn().PID()) waits for a lock another transaction holds: a
// statement it sent has reached the point where it queues for a row or a
// table. db is any other connection to the same server.
func WaitUntilBlocked(t testing.TB, db store.DBTX, pid uint32) {
	t.Helper()
	Eventually(t, 10*time.Second, "backend waiting for a lock", func() bool {
		var waiting bool
		if err := db.QueryRow(context.Background(), lockWaitSQL, int32(pid)).Scan(&waiting); err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		return waiting
	})
}

// ExecBlocked runs sql on a connection of its own, in the background, and
// returns once that statement waits for a lock another transaction holds
// (WaitUntilBlocked). The channel yields the statement's error when it
// ends; the connection then goes back to db.
func ExecBlocked(t testing.TB, db *pgxpool.Pool, sql string, args ...any) <-chan error {
	t.Helper()
	conn, err := db.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer conn.Release()
		_, err := conn.Exec(context.Background(), sql, args...)
		done <- err
	}()
	WaitUntilBlocked(t, db, conn.Conn().PgConn().PID())
	return done
}

const dbClockLeftSQL = `SELECT extract(epoch FROM $1 - distributed_lock_now())::float8`

// WaitUntilPast returns once the database clock has passed at (a lease's
// ExpiresAt, say), within a millisecond or two: it pauses for what is left
// on that clock. It is for the rare test where real time must pass on both
// sides, the database's clock and a Locker's (its trust windows, its
// heartbeats), so moving the schema's Clock alone cannot stand in for it.
func WaitUntilPast(t testing.TB, db store.DBTX, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left float64
		if err := db.QueryRow(context.Background(), dbClockLeftSQL, at).Scan(&left); err != nil {
			t.Fatalf("read the database clock: %v", err)
		}
		if left < 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database clock passing %s: not within a minute", at)
		}
		pause(min(time.Duration(left*float64(time.Second))+time.Microsecond, maxPoll))
	}
}

// WaitForWaiter returns owner's waiter record on key once it is visible: a
// waiting Acquire has joined the queue, so what the test does next happens
// while it waits.
func WaitForWaiter(t testing.TB, db store.DBTX, key, owner string) lockview.Waiter {
	t.Helper()
	var found lockview.Waiter
	Eventually(t, 10*time.Second, "waiter record of "+owner+" on "+key, func() bool {
		ws, err := lockview.Waiters(context.Background(), db, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.Owner == owner {
				found = w
				return true
			}
		}
		return false
	})
	return found
}

const waiterSeenUntilSQL = `SELECT w.seen_until FROM distributed_lock_waiter w
WHERE w.lock_key = $1 AND w.owner_id = $2 ORDER BY w.waiter_id LIMIT 1`

// WaitForCheck returns once owner's waiter record on key has been
// refreshed since this first saw it (its seen_until moved on), or is gone:
// its waiter has checked the queue meanwhile (a waiting Acquire checks
// once locker.DeadlockCheck after it queued), or was served. Call it as
// the waiter starts, in place of WaitForWaiter: the record is first read
// as soon as it is visible, long before that first check.
func WaitForCheck(t testing.TB, db store.DBTX, key, owner string) {
	t.Helper()
	seenUntil := func() (time.Time, bool) {
		var at time.Time
		err := db.QueryRow(context.Background(), waiterSeenUntilSQL, key, owner).Scan(&at)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Time{}, false
		}
		if err != nil {
			t.Fatalf("read the waiter record of %s on %s: %v", owner, key, err)
		}
		return at, true
	}
	var first time.Time
	Eventually(t, 10*time.Second, "waiter record of "+owner+" on "+key, func() bool {
		var found bool
		first, found = seenUntil()
		return found
	})
	Eventually(t, time.Minute, "a check by the waiter of "+owner+" on "+key, func() bool {
		at, found := seenUntil()
		return !found || at.After(first)
	})
}

const readSinceSQL = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity
WHERE application_name = $1 AND state = 'idle' AND query_start > $2)`

// ReadAfter runs act (a resize, a key) and returns once a program whose
// connections are named app (application_name, see WithParam) has run a
// statement that it began after act began to its end: a console that
// polls the database has read it afresh since, and draws what it read.
// db is any other connection to the same server, as the same role.
func ReadAfter(t testing.TB, db store.DBTX, app string, act func()) {
	t.Helper()
	since := DBNow(t, db) // the server's clock, as pg_stat_activity's
	act()
	Eventually(t, 10*time.Second, "a read by "+app, func() bool {
		var read bool
		if err := db.QueryRow(context.Background(), readSinceSQL, app, since).Scan(&read); err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		return read
	})
}
