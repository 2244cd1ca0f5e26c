package testdb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func grant(t *testing.T, db store.DBTX, key, owner string, ttl time.Duration) store.Grant {
	t.Helper()
	g, _, err := store.TryGrant(context.Background(), db, store.GrantParams{Key: key, Owner: owner, TTL: ttl, Actor: owner})
	if err != nil || !g.Granted() {
		t.Fatalf("grant %q to %q: %+v, %v", key, owner, g, err)
	}
	return g
}

func row(t *testing.T, db store.DBTX, key string) lockdb.LockInfo {
	t.Helper()
	l, found, err := store.Get[lockdb.LockInfo](context.Background(), db, key)
	if err != nil || !found {
		t.Fatalf("read %q: found=%v err=%v", key, found, err)
	}
	return l
}

// AgeLock moves every time of the row back by the same amount: the lease
// has that much less left, and it held for that much longer.
func TestAgeLockMovesTheRowIntoThePast(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	grant(t, db, "k", "a", time.Minute)
	before := row(t, db, "k")
	testdb.AgeLock(t, db, "k", 40*time.Second)
	after := row(t, db, "k")
	if moved := before.ExpiresAt.Sub(after.ExpiresAt); moved != 40*time.Second {
		t.Fatalf("expires_at moved back %s; want 40s", moved)
	}
	if moved := before.AcquiredAt.Sub(after.AcquiredAt); moved != 40*time.Second {
		t.Fatalf("acquired_at moved back %s; want 40s", moved)
	}
	if after.State() != lockdb.StateHeld || after.Remaining > 20*time.Second || after.Remaining < 19*time.Second {
		t.Fatalf("after aging 40s of a 1m lease: %s with %s left; want held with about 20s", after.State(), after.Remaining)
	}
	testdb.AgeLock(t, db, "k", 20*time.Second)
	if got := row(t, db, "k").State(); got != lockdb.StateExpired {
		t.Fatalf("after aging past its TTL the lease is %s; want expired", got)
	}
}

// ExpireLease makes the lease expired on the database clock, so another
// owner's grant is a steal, with no time waited.
func TestExpireLeaseLetsAnotherOwnerSteal(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	first := grant(t, db, "k", "a", time.Hour)
	testdb.ExpireLease(t, db, "k")
	if l := row(t, db, "k"); l.State() != lockdb.StateExpired || l.Remaining < -time.Second {
		t.Fatalf("after ExpireLease: %s, %s left; want just expired", l.State(), l.Remaining)
	}
	stolen := grant(t, db, "k", "b", time.Minute)
	if stolen.Outcome != lockdb.OutcomeStolen || stolen.Token <= first.Token {
		t.Fatalf("grant to b after ExpireLease = %+v; want stolen with a token above %d", stolen, first.Token)
	}
}
