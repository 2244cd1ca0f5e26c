package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/store"
)

// pollEvery is how often Eventually looks again: often enough that a test
// goes on a few milliseconds after the state it waits for arrives, rarely
// enough not to load a shared machine.
const pollEvery = 5 * time.Millisecond

// Eventually checks cond until it returns true, and fails the test naming
// what if that has not happened within the given time. It is how a test
// waits for another goroutine or process to reach a point it can observe
// (a database row, a backend waiting for a lock, a screen), instead of
// sleeping for a guessed while.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		<-tick.C
	}
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
