package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// Every attempt costs one statement (one call of distributed_lock_acquire),
// whether it grants, renews, steals or is refused, and a steal is logged.
func TestTryGrantRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	grant := func(owner string, ttl time.Duration) (store.Grant, int) {
		t.Helper()
		db := &testdb.Statements{DBTX: pool}
		g, _, err := store.TryGrant(ctx, db, store.GrantParams{Key: "k", Owner: owner, TTL: ttl, Actor: owner})
		if err != nil {
			t.Fatal(err)
		}
		return g, db.N
	}
	steps := []struct {
		what, owner string
		ttl         time.Duration
		outcome     string
		statements  int
	}{
		{"first grant", "a", time.Minute, lockdb.OutcomeAcquired, 1},
		{"renewal", "a", time.Minute, lockdb.OutcomeRenewed, 1},
		{"refusal while held", "b", time.Minute, lockdb.OutcomeHeld, 1},
		{"steal after expiry", "b", time.Minute, lockdb.OutcomeStolen, 1},
		{"refusal after the steal", "a", time.Minute, lockdb.OutcomeHeld, 1},
	}
	var tokens []int64
	for _, s := range steps {
		if s.what == "steal after expiry" {
			testdb.ExpireLease(t, pool, "k")
		}
		g, n := grant(s.owner, s.ttl)
		if g.Outcome != s.outcome || n != s.statements {
			t.Fatalf("%s: outcome %q in %d statements; want %q in %d", s.what, g.Outcome, n, s.outcome, s.statements)
		}
		tokens = append(tokens, g.Token)
	}
	if tokens[1] != tokens[0] || tokens[3] <= tokens[0] {
		t.Errorf("tokens %v: a renewal keeps the token, a steal draws a larger one", tokens)
	}
	// Released, the key is granted again, with a new token.
	if _, ok, err := store.Release(ctx, pool, store.ReleaseParams{LeaseRef: store.LeaseRef{Key: "k", Owner: "b", Token: tokens[3]}}); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	if g, n := grant("a", time.Minute); g.Outcome != lockdb.OutcomeAcquired || n != 1 || g.Token <= tokens[3] {
		t.Errorf("grant of the released key: %q, token %d, %d statements; want acquired, > %d, 1", g.Outcome, g.Token, n, tokens[3])
	}
	var steals int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_event WHERE kind = 'stolen' AND fence_token = $1`, tokens[3]).Scan(&steals); err != nil {
		t.Fatal(err)
	}
	if steals != 1 {
		t.Errorf("%d stolen events for token %d; want 1", steals, tokens[3])
	}
}
