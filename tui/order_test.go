package tui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// sortBy presses s until the console sorts by s, running each poll.
func sortBy(t *testing.T, m Model, s lockview.Sort) Model {
	t.Helper()
	for i := 0; m.locks().order != s; i++ {
		if i == len(lockview.Sorts) {
			t.Fatalf("s never sorts by %s", s)
		}
		var cmd tea.Cmd
		if m, cmd = update(t, m, keyMsg("s")); cmd != nil {
			m = runPoll(t, m, cmd)
		}
	}
	return m
}

// Between two ordering reads of a large table (here: a kept order made
// expensive and 8s old) each refresh still shows the window's rows as they
// are now, in the order as it was: a lock that changed hands shows its new
// owner and lease in its old place, a released one shows free, and the
// header says how old the order is. A change of sort orders afresh, and
// coming back to TTL puts the changed rows where they now belong.
func TestKeptOrderShowsLiveRowsAndItsAge(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
SELECT 'k:' || lpad(i::text, 5, '0'), 'w-' || i, nextval('distributed_lock_fence_seq'),
       clock_timestamp() + interval '10 minutes' + i * interval '1 second', interval '1 hour',
       clock_timestamp() - i * interval '1 second'
FROM generate_series(1, 300) i`); err != nil {
		t.Fatal(err)
	}
	m := sortBy(t, dbModel(t, pool, Options{}, 120, 35), lockview.SortTTL)
	first := []string{"k:00001", "k:00002", "k:00003", "k:00004"} // soonest expiry first
	if got := keysOf(m.locks().page.Rows); len(got) < 4 || !slices.Equal(got[:4], first) {
		t.Fatalf("by TTL: rows %q, want %q first", got, first)
	}
	kept := &m.locks().page.Order
	if kept.TakenAt.IsZero() {
		t.Fatal("the TTL page keeps no order")
	}
	if strings.Contains(screen(m), " ago") {
		t.Fatalf("a fresh order is given an age:\n%s", screen(m))
	}
	kept.Took, kept.TakenAt = time.Hour, kept.TakenAt.Add(-8*time.Second)
	keptAt := kept.TakenAt

	op := testdb.Operator(t, actor)
	rows := m.locks().page.Rows
	if _, err := op.ForceExpire(ctx, pool, "k:00002", rows[1].Token); err != nil {
		t.Fatal(err)
	}
	acquire(t, pool, "k:00002", "thief", time.Hour)
	if _, err := op.ForceRelease(ctx, pool, "k:00003", rows[2].Token); err != nil {
		t.Fatal(err)
	}

	m = repoll(t, m)
	if got := keysOf(m.locks().page.Rows); !slices.Equal(got[:4], first) {
		t.Errorf("between ordering reads: rows %q, want the kept order %q", got[:4], first)
	}
	if s := screen(m); !strings.Contains(s, "sort TTL (expired and soonest expiring first, free last) · order 8s ago") {
		t.Errorf("between ordering reads the header does not say how old the order is:\n%s", s)
	}
	if l := rowLine(t, m, "k:00002"); !strings.Contains(l, "thief") || !strings.Contains(l, "59m") {
		t.Errorf("the lock that changed hands shows its old holder: %q", l)
	}
	if l := rowLine(t, m, "k:00003"); !strings.Contains(l, "free") {
		t.Errorf("the released lock does not show free: %q", l)
	}

	m = sortBy(t, m, lockview.SortToken)
	if o := m.locks().page.Order; o.TakenAt.Equal(keptAt) || strings.Contains(screen(m), "order ") {
		t.Errorf("after a sort change: order taken %s (kept %s); want ordered afresh, no age shown:\n%s", o.TakenAt, keptAt, screen(m))
	}
	m = sortBy(t, m, lockview.SortTTL)
	rows = m.locks().page.Rows
	if got := keysOf(rows); slices.Contains(got[:4], "k:00002") || slices.Contains(got[:4], "k:00003") {
		t.Errorf("by TTL again: rows %q; want the renewed and released locks out of the first rows", got[:4])
	}
}

func keysOf(rows []lockview.ListedLock) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}
