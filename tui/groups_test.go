package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// acquireShared takes key shared for owner (permits 0), or one of its
// permits, with a lease of ttl.
func acquireShared(t *testing.T, pool *pgxpool.Pool, key, owner string, permits int, ttl time.Duration) locker.Lease {
	t.Helper()
	lk, err := locker.New(locker.Config{TTL: ttl, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	var lease locker.Lease
	if permits == 0 {
		lease, err = lk.TryAcquireShared(context.Background(), pool, key, owner)
	} else {
		lease, err = lk.TryAcquirePermit(context.Background(), pool, key, owner, permits)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// screenLine is the first line of the screen that contains what.
func screenLine(m Model, what string) string {
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	return ""
}

// A semaphore's row shows its permits in use, a shared key's its holders,
// never the group's "*".
func TestTableShowsSharedAndSemaphoreRows(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	acquireShared(t, pool, "readers:catalog", "api-1", 0, time.Minute)
	acquireShared(t, pool, "readers:catalog", "bad\x1b[31mreader", 0, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-1", 3, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-2", 3, time.Minute)
	m := dbModel(t, pool, Options{}, 160, 35)
	for key, want := range map[string]string{
		"readers:catalog": "shared · 2 holders", "pool:db": "semaphore · 2/3 permits", "billing:nightly": "worker-1",
	} {
		l := screenLine(m, key)
		if !strings.Contains(l, want) || strings.Contains(l, " * ") {
			t.Errorf("row of %s %q: want %q in OWNER", key, l, want)
		}
	}
}

// Holders cost one statement more per poll, only when a group's row can
// be on screen; with only exclusive keys, or the table off screen, none.
func TestHoldersCostOneStatementOnlyForGroupsOnScreen(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	for _, k := range []string{"a:1", "a:2", "a:3", "a:4", "a:5"} {
		acquire(t, pool, k, "worker-1", time.Minute)
	}
	req := PollRequest{Query: lockview.ListQuery{Sort: lockview.SortKey, Before: 10, After: 10}, HolderRows: 3}
	statements := func(req PollRequest) (int, Snapshot) {
		t.Helper()
		db := &testdb.Statements{DBTX: pool}
		snap, err := readFrom(ctx, db, req)
		if err != nil {
			t.Fatal(err)
		}
		return db.N, snap
	}
	exclusive, snap := statements(req)
	if snap.Holders != nil {
		t.Fatalf("holders read with no group key: %v", snap.Holders)
	}
	// z:shared sorts last, 5 rows from the anchor (the first row): off
	// the 3 rows the table can show.
	acquireShared(t, pool, "z:shared", "reader-1", 0, time.Minute)
	if n, snap := statements(req); n != exclusive || snap.Holders != nil {
		t.Fatalf("a group's row off screen: %d statements (want %d), holders %v", n, exclusive, snap.Holders)
	}
	acquireShared(t, pool, "a:0", "reader-2", 0, time.Minute)
	n, snap := statements(req)
	if n != exclusive+1 || len(snap.Holders) != 1 || len(snap.Holders["a:0"]) != 1 {
		t.Fatalf("a group's row on screen: %d statements (want %d), holders %v", n, exclusive+1, snap.Holders)
	}
	req.HolderRows = 0
	if n, _ := statements(req); n != exclusive {
		t.Fatalf("table off screen: %d statements, want %d", n, exclusive)
	}
	// The detail page's key's holders come in the same one statement.
	req.HolderRows, req.DetailKey = 3, "a:1"
	exclusiveDetail, _ := statements(req)
	req.DetailKey = "z:shared"
	n, snap = statements(req)
	if n != exclusiveDetail || len(snap.Detail.Holders) != 1 || snap.Detail.Holders[0].Owner != "reader-1" || len(snap.Holders) != 1 {
		t.Fatalf("detail of a group: %d statements (want %d), detail %+v, table's holders %v", n, exclusiveDetail, snap.Detail, snap.Holders)
	}

	// The console asks for them only while the table is on screen.
	m := dbModel(t, pool, Options{}, 120, 35)
	if m.pollRequest().HolderRows == 0 {
		t.Fatal("the table does not ask for its groups' holders")
	}
	if m = press(t, m, "e"); m.pollRequest().HolderRows != 0 {
		t.Fatal("holders asked for with the table off screen")
	}
}

// A group's row scrolled onto the screen without its holders read asks
// for a poll, which reads them; with them read, moving polls no more
// than before.
func TestScrollingOntoAGroupReadsItsHolders(t *testing.T) {
	unread := groupSnapshot()
	unread.Page.Anchor, unread.Page.AnchorRank, unread.Holders = 0, 0, nil
	read := unread
	read.Holders = groupSnapshot().Holders
	for _, c := range []struct {
		name string
		snap Snapshot
		poll bool
	}{{"unread", unread, true}, {"read", read, false}} {
		m := withSnapshot(t, testModel(t, Options{}, 120, 7), c.snap) // 1 row of table: billing:nightly
		if m.locks().tableRows != 1 || screenLine(m, "pool:db") != "" {
			t.Fatalf("%s: want pool:db off screen:\n%s", c.name, screen(m))
		}
		m, cmd := update(t, m, keyMsg("down"))
		if polled := cmd != nil && m.inflight; polled != c.poll {
			t.Fatalf("%s: moving onto pool:db polled: %v, want %v", c.name, polled, c.poll)
		}
		want := map[bool]string{true: "semaphore · ?/3", false: "semaphore · 2/3"}[c.poll]
		if l := screenLine(m, "pool:db"); !strings.Contains(l, want) {
			t.Fatalf("%s: row %q, want %q", c.name, l, want)
		}
	}
}
