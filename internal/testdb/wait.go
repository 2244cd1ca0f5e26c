package testdb

import (
	"context"
	"testing"
	"time"

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
		time.Sleep(poll)
	}
	return true
}

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

const dbClockPastSQL = `SELECT distributed_lock_now() > $1`

// WaitUntilPast returns once the database clock has passed at (a lease's
// ExpiresAt, say). It is for the rare test where real time must pass with
// a row locked, so AgeLock cannot move it; it waits no longer than needed.
func WaitUntilPast(t testing.TB, db store.DBTX, at time.Time) {
	t.Helper()
	Eventually(t, time.Minute, "the database clock passing "+at.String(), func() bool {
		var past bool
		if err := db.QueryRow(context.Background(), dbClockPastSQL, at).Scan(&past); err != nil {
			t.Fatalf("read the database clock: %v", err)
		}
		return past
	})
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
