package serve

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestSessionsShareOnePoller: three sessions watching the same page cost
// the database what one does. The cost is counted where the database
// keeps it, the transactions pg_stat_database records, over the same
// span with one watcher and then with three (each console polling every
// 200ms on its own would triple it).
func TestSessionsShareOnePoller(t *testing.T) {
	dsn := testdb.DSN(t)
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.MustAcquire(t, lk, db, "shared:watched", "worker-1")
	s := startServe(t, dsn)

	first := s.pane(s.operator)
	first.WaitFor("shared:watched", within)
	one := transactionsOver(t, db, 4*time.Second)

	for range 2 {
		s.pane(s.viewer).WaitFor("shared:watched", within)
	}
	three := transactionsOver(t, db, 4*time.Second)

	t.Logf("transactions in 4s: one session %d, three sessions %d", one, three)
	if one < 10 {
		t.Fatalf("one session polling every 200ms committed %d transactions in 4s: the count does not see its polls", one)
	}
	if float64(three) > 1.5*float64(one) {
		t.Fatalf("three sessions on one page cost %d transactions against one session's %d: they do not share a poller", three, one)
	}
}

// transactionsOver is how many transactions the database committed during
// span. Backends report their counts at most once a second, so both
// readings wait out a report interval first; the two spans of a test are
// measured alike.
func transactionsOver(t *testing.T, db *pgxpool.Pool, span time.Duration) int64 {
	t.Helper()
	read := func() int64 {
		time.Sleep(1500 * time.Millisecond)
		var n int64
		if err := db.QueryRow(context.Background(),
			`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := read()
	time.Sleep(span - 1500*time.Millisecond)
	return read() - start
}
