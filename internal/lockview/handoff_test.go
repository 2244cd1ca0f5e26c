package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// A release that hands the key to a queued waiter grants it in the same
// transaction: the hand-off measures near zero. A waiter that retried
// 300ms after the release (the barging loop of old) measures that.
func TestHandOffLatency(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk, err := locker.New(locker.Config{TTL: time.Minute, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := testdb.Try(ctx, lk, pool, "q", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Enqueue(ctx, pool, store.QueueParams{
		GrantParams: store.GrantParams{Key: "q", Owner: "b", TTL: time.Minute, LogGrants: true},
		ClaimWindow: time.Second, SeenFor: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, pool, holder)); err != nil {
		t.Fatal(err)
	}
	h, err := lockview.HandOffLatency(ctx, pool, time.Minute)
	if err != nil || h.Count != 1 || h.Median < 0 || h.Median > 50*time.Millisecond {
		t.Fatalf("hand-off latency = %+v, %v; want one hand-off of about zero", h, err)
	}
	// A retry 300ms after its release, and a steal (no release before it)
	// that is not counted.
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
VALUES (clock_timestamp() - interval '900 milliseconds', 'r', 'released', 'x', 100, 'x', NULL, NULL, '{}'),
       (clock_timestamp() - interval '600 milliseconds', 'r', 'acquired', 'y', 101, 'y', 'x', 100, '{"waited_ms": 700}'),
       (clock_timestamp() - interval '100 milliseconds', 'r', 'stolen', 'z', 102, 'z', 'y', 101, '{"waited_ms": 400}')`); err != nil {
		t.Fatal(err)
	}
	h, err = lockview.HandOffLatency(ctx, pool, time.Minute)
	if err != nil || h.Count != 2 || h.Median < 100*time.Millisecond || h.Median > 200*time.Millisecond {
		t.Fatalf("hand-off latency = %+v, %v; want the median of about 0 and 300ms over 2 hand-offs", h, err)
	}
}
