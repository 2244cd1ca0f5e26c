package lockview_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// ReadBlocking on prepared rows: a deadlock (a holds x and waits for y, b
// holds y and waits for x), a chain to a root holder (d waits twice for c's
// key and counts once), a wait for a key with no row, one for a lapsed
// lease, and a lapsed waiter record that is not a wait.
func TestReadBlocking(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range [][2]string{{"x", "a"}, {"y", "b"}, {"z", "c"}, {"lapsed", "g"}} {
		if _, err := testdb.Try(ctx, lk, pool, h[0], h[1]); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(key, owner string) {
		t.Helper()
		if _, _, err := store.Enqueue(ctx, pool, store.QueueParams{
			GrantParams: store.GrantParams{Key: key, Owner: owner, TTL: time.Minute},
			ClaimWindow: time.Second, SeenFor: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("y", "a")
	enqueue("z", "d")
	enqueue("z", "d")
	if _, err := pool.Exec(ctx, `
UPDATE distributed_lock SET expires_at = clock_timestamp() - interval '1 second' WHERE lock_key = 'lapsed';
-- b's wait closes the cycle, which the protocol refuses (a waiter whose
-- check has not run yet, or a client that never checks, leaves it).
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until) VALUES
    ('x', 'b', clock_timestamp(), clock_timestamp() + interval '1 minute'),
    ('no-row', 'e', clock_timestamp() - interval '30 seconds', clock_timestamp() + interval '1 minute'),
    ('lapsed', 'h', clock_timestamp() - interval '20 seconds', clock_timestamp() + interval '1 minute'),
    ('z', 'gone-waiter', clock_timestamp() - interval '1 hour', clock_timestamp() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}

	b, err := lockview.ReadBlocking(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		holders string
		state   lockdb.State
	}
	byWaiter := map[string]got{}
	for _, w := range b.Waits {
		if _, dup := byWaiter[w.Waiter+" "+w.Key]; dup {
			t.Errorf("%s waits for %s twice", w.Waiter, w.Key)
		}
		holders, _ := json.Marshal(w.Holders)
		byWaiter[w.Waiter+" "+w.Key] = got{string(holders), w.KeyState}
	}
	want := map[string]got{
		"a y": {`["b"]`, ""}, "b x": {`["a"]`, ""}, "d z": {`["c"]`, ""},
		"e no-row": {`[]`, ""}, "h lapsed": {`[]`, lockdb.StateExpired},
	}
	if len(byWaiter) != len(want) {
		t.Errorf("waits %v, want %v", byWaiter, want)
	}
	for k, w := range want {
		if byWaiter[k] != w {
			t.Errorf("wait %q = %+v, want %+v", k, byWaiter[k], w)
		}
	}
	if b.Waits[0].Waiter != "e" || b.Waits[0].WaitingMS < 30_000 || b.Waits[1].Waiter != "h" {
		t.Errorf("waits not longest first: %+v", b.Waits)
	}
	if len(b.Deadlocks) != 1 || len(b.Deadlocks[0]) != 2 || b.Deadlocks[0][0] != "a" || b.Deadlocks[0][1] != "b" {
		t.Errorf("deadlocks = %q, want [[a b]]", b.Deadlocks)
	}
	if roots := b.Roots(); len(roots) != 1 || roots[0] != "c" {
		t.Errorf("roots = %q, want [c]", roots)
	}
	if b.Truncated || b.DBNow.IsZero() {
		t.Errorf("truncated %v, db now %v", b.Truncated, b.DBNow)
	}
}

// More live waits than the bound: the read keeps the longest-waiting ones
// and says it left some out.
func TestReadBlockingBounded(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until)
SELECT 'k' || i, 'w' || i, clock_timestamp() - i * interval '1 second', clock_timestamp() + interval '1 minute'
FROM generate_series(1, $1::int) i`, lockview.MaxBlockingWaits+3); err != nil {
		t.Fatal(err)
	}
	b, err := lockview.ReadBlocking(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Truncated || len(b.Waits) != lockview.MaxBlockingWaits {
		t.Fatalf("truncated %v with %d waits, want true with %d", b.Truncated, len(b.Waits), lockview.MaxBlockingWaits)
	}
	if first := b.Waits[0].Waiter; first != "w5003" {
		t.Fatalf("longest wait is %q, want w5003", first)
	}
}
