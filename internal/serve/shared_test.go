package serve

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/tmuxtest"
	"github.com/lockctl/lockctl/locker"
)

// TestSessionsShareOnePoller: three sessions watching the same page cost the
// database what one does, not three times as much. The cost is the scans
// of the test's own tables (pg_stat_user_tables of its schema), counted
// over a server's whole life: its connections are closed before the count
// is read, so every backend has flushed its statistics. Not the
// database's transactions: under TEST_DATABASE_URL other packages' tests
// commit in the same database meanwhile, and backends report their counts
// up to a second late, so a span in the middle of a run miscounts.
func TestSessionsShareOnePoller(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.DSN(t)
	stats := testdb.Pool(t, dsn)
	var schema string
	if err := stats.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	setup := withApp(dsn, "share-setup")
	func() {
		db := testdb.Pool(t, setup)
		defer db.Close()
		lk := testdb.Locker(t, locker.Config{TTL: time.Hour})
		for i := range 5 {
			testdb.MustAcquire(t, lk, db, fmt.Sprintf("ssh:watched-%d", i), "worker")
		}
	}()
	gone(t, stats, "share-setup")
	scans := func() int64 {
		t.Helper()
		var n int64
		if err := stats.QueryRow(ctx, `SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::bigint
FROM pg_stat_user_tables WHERE schemaname = $1`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// What the sessions watch: this many changes, each seen by every
	// session before the next, at least a refresh (200ms) apiece.
	const watch = 20
	cost := func(sessions int) int64 {
		t.Helper()
		app := fmt.Sprintf("share-%d", sessions)
		before := scans()
		s := startServe(t, withApp(dsn, app))
		var panes []*tmuxtest.Pane
		for range sessions {
			panes = append(panes, s.pane(s.viewer))
		}
		for _, p := range panes {
			p.WaitFor("ssh:watched-4", within)
		}
		changesSeen(t, withApp(dsn, app+"-changes"), panes, watch)
		gone(t, stats, app+"-changes")
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-s.exited; err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, s.log)
		}
		s.exited <- nil
		gone(t, stats, app)
		return scans() - before
	}
	one := cost(1)
	three := cost(3)
	t.Logf("table scans while watching %d changes: 1 session %d, 3 sessions %d", watch, one, three)
	if one == 0 {
		t.Fatal("one session read nothing")
	}
	// Each session's first poll is its own (it asks for the table's shape
	// too): a few reads more than one session's, never three times as many.
	if three > one+one/2 {
		t.Fatalf("3 sessions cost %d table scans, 1 session %d: the sessions do not share their polls", three, one)
	}
}

// changesSeen gives the key ssh:changes to n owners in turn, through a
// pool of its own on dsn (closed when it returns), each once every pane
// shows the one before.
func changesSeen(t *testing.T, dsn string, panes []*tmuxtest.Pane, n int) {
	t.Helper()
	db := testdb.Pool(t, dsn)
	defer db.Close()
	lk := testdb.Locker(t, locker.Config{TTL: time.Hour})
	for i := range n {
		owner := fmt.Sprintf("change-%02d", i)
		lease := testdb.MustAcquire(t, lk, db, "ssh:changes", owner)
		for _, p := range panes {
			p.WaitFor(owner, within)
		}
		if _, err := lk.Release(context.Background(), db, lease); err != nil {
			t.Fatal(err)
		}
	}
}

// withApp is dsn with its connections named app in pg_stat_activity.
func withApp(dsn, app string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "application_name=" + app
}

// gone waits until no connection named app is open, so each has flushed
// its statistics.
func gone(t *testing.T, db *pgxpool.Pool, app string) {
	t.Helper()
	testdb.Eventually(t, within, "the connections of "+app+" to close", func() bool {
		var n int
		err := db.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
		return err == nil && n == 0
	})
}
