package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

func TestGrantRatesBuckets(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	// Events 2s, 7s and 70s ago: the last one is outside the minute.
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
VALUES (clock_timestamp() - interval '2 seconds', 'k', 'acquired', 'o', 1, 'a', '{"waited_ms": 40}'),
       (clock_timestamp() - interval '2 seconds', 'k', 'stolen',   'o', 2, 'a', '{}'),
       (clock_timestamp() - interval '2 seconds', 'k', 'released', 'o', 2, 'a', '{}'),
       (clock_timestamp() - interval '7 seconds', 'k', 'acquired', 'o', 3, 'a', '{}'),
       (clock_timestamp() - interval '70 seconds', 'k', 'acquired', 'o', 4, 'a', '{}')`); err != nil {
		t.Fatal(err)
	}
	r, err := lockview.GrantRates(ctx, pool, time.Minute, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Grants) != 12 {
		t.Fatalf("%d buckets", len(r.Grants))
	}
	if r.Grants[11] != 2 || r.Steals[11] != 1 || r.Handoffs[11] != 1 || r.Grants[10] != 1 {
		t.Fatalf("newest buckets: grants %v steals %v handoffs %v", r.Grants, r.Steals, r.Handoffs)
	}
	if lockview.Sum(r.Grants) != 3 {
		t.Fatalf("grants in the minute = %d, want 3 (released is not a grant, 70s ago is outside)", lockview.Sum(r.Grants))
	}
	if _, err := lockview.GrantRates(ctx, pool, time.Minute, 7*time.Second); err == nil {
		t.Fatal("a span that is not a multiple of the bucket was accepted")
	}
}
