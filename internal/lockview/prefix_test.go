package lockview_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// statesSQL leaves one row per case, each well away from its state's
// edges, named after the state Lock.State gives it.
const statesSQL = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT k, 'o', nextval('distributed_lock_fence_seq'), clock_timestamp() + left_for, ttl,
       clock_timestamp() - interval '1 minute', CASE WHEN free THEN clock_timestamp() END
FROM (VALUES
    ('a:held',     interval '1 minute',   interval '2 minutes',  false),
    ('a:held2',    interval '8 seconds',  interval '20 seconds', false), -- under 10 s, but over a fifth of the TTL
    ('a:expiring', interval '5 seconds',  interval '30 seconds', false),
    ('a:expired',  interval '-1 minute',  interval '30 seconds', false),
    ('b:free',     interval '1 minute',   interval '2 minutes',  true),  -- released before its lease ran out
    ('b:expired',  interval '-1 second',  interval '1 hour',     false)
) AS v(k, left_for, ttl, free)`

// EachLock's filters run in the database and agree with Lock.State.
func TestEachLockFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	if _, err := pool.Exec(ctx, statesSQL); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter lockview.LockFilter
		want   string
	}{
		{lockview.LockFilter{}, "a:expired a:expiring a:held a:held2 b:expired b:free"},
		{lockview.LockFilter{Prefix: "b:"}, "b:expired b:free"},
		{lockview.LockFilter{Prefix: "a:h"}, "a:held a:held2"},
		{lockview.LockFilter{States: []lockdb.State{lockdb.StateHeld}}, "a:held a:held2"},
		{lockview.LockFilter{States: []lockdb.State{lockdb.StateExpiring}}, "a:expiring"},
		{lockview.LockFilter{States: []lockdb.State{lockdb.StateExpired}}, "a:expired b:expired"},
		{lockview.LockFilter{States: []lockdb.State{lockdb.StateFree, lockdb.StateExpiring}}, "a:expiring b:free"},
		{lockview.LockFilter{Prefix: "b:", States: []lockdb.State{lockdb.StateExpired}}, "b:expired"},
		{lockview.LockFilter{Prefix: "a:", States: []lockdb.State{lockdb.StateFree}}, ""},
		{lockview.LockFilter{States: []lockdb.State{}}, ""},
	} {
		var keys []string
		err := lockview.EachLock(ctx, pool, c.filter, func(l lockview.Lock) error {
			if c.filter.States != nil && !slices.Contains(c.filter.States, l.State()) {
				t.Errorf("%+v listed %s, whose state is %s", c.filter, l.Key, l.State())
			}
			keys = append(keys, l.Key)
			return nil
		})
		if got := strings.Join(keys, " "); err != nil || got != c.want {
			t.Errorf("EachLock(%+v) = %q, %v; want %q", c.filter, got, err, c.want)
		}
	}
}

// An error from the callback stops the listing and is returned.
func TestEachLockStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	if _, err := pool.Exec(ctx, statesSQL); err != nil {
		t.Fatal(err)
	}
	stop := context.Canceled
	n := 0
	err := lockview.EachLock(ctx, pool, lockview.LockFilter{}, func(lockview.Lock) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Fatalf("EachLock called back %d times and returned %v; want once, and the callback's error", n, err)
	}
}
