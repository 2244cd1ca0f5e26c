package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// Every write of a lease (grant, renewal, steal, release, operator
// force-expire) must be a HOT update of the key's row: no index entry is
// written. An index on any lease column (owner, token, expiry, grant time)
// breaks this, and each grant then writes into every index of the table
// (what that costs: BENCHMARKS.md). The counts are
// this transaction's own, read synchronously.
func TestLeaseWritesAreHOTUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	// The key's row exists: a first grant is an insert.
	if g, _, err := store.TryGrant(ctx, pool, store.GrantParams{Key: "k", Owner: "a", TTL: time.Minute, Actor: "a"}); err != nil || !g.Granted() {
		t.Fatalf("first grant: %+v, %v", g, err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		grant := func(owner string, ttl time.Duration) store.LeaseRef {
			t.Helper()
			g, _, err := store.TryGrant(ctx, tx, store.GrantParams{Key: "k", Owner: owner, TTL: ttl, Actor: owner})
			if err != nil || !g.Granted() {
				t.Fatalf("grant to %s: %+v, %v", owner, g, err)
			}
			return store.LeaseRef{Key: "k", Owner: owner, Token: g.Token}
		}
		ref := grant("a", time.Minute) // a renewal by TryGrant
		if _, _, ok, err := store.Renew(ctx, tx, ref, time.Minute); err != nil || !ok {
			t.Fatalf("renew: %v, %v", ok, err)
		}
		if _, ok, err := store.Release(ctx, tx, store.ReleaseParams{LeaseRef: ref}); err != nil || !ok {
			t.Fatalf("release: %v, %v", ok, err)
		}
		grant("b", time.Minute)
		testdb.ExpireLease(t, tx, "k") // one more update of the row
		ref = grant("c", time.Minute)  // a steal
		if _, ok, err := store.ForceExpire(ctx, tx, store.ForceParams{Key: "k", Token: ref.Token, Actor: "op"}); err != nil || !ok {
			t.Fatalf("force-expire: %v, %v", ok, err)
		}
		var updated, hot int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('distributed_lock'::regclass),
			pg_stat_get_xact_tuples_hot_updated('distributed_lock'::regclass)`).Scan(&updated, &hot); err != nil {
			return err
		}
		if updated < 7 || hot != updated {
			t.Errorf("%d updates of the lock row, %d of them HOT; want every one HOT", updated, hot)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
