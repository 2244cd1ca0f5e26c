package testdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// Moving a schema's clock moves what the protocol judges: a lease of a
// minute lapses when the clock is two minutes on, and the steal that
// follows is stamped with the moved time. Readers (store.Get, as a
// service reads a lock) see the same clock.
func TestClockMovesTheProtocolsTime(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	before := clock.Now()
	g := grant(t, db, "k", "a", time.Minute)
	if g.ExpiresAt.Sub(before) < time.Minute || g.ExpiresAt.Sub(before) > time.Minute+10*time.Second {
		t.Fatalf("a minute's lease expires at %s, the clock read %s", g.ExpiresAt, before)
	}
	refused, _, err := store.TryGrant(context.Background(), db, store.GrantParams{Key: "k", Owner: "b", TTL: time.Minute, Actor: "b"})
	if err != nil || refused.Outcome != lockdb.OutcomeHeld {
		t.Fatalf("another owner's try on the running lease: %+v, %v; want held", refused, err)
	}

	clock.Advance(2 * time.Minute)
	if l := row(t, db, "k"); l.State() != "expired" {
		t.Fatalf("two minutes on, the lease reads as %s; want expired", l.State())
	}
	stolen := grant(t, db, "k", "b", time.Minute)
	if stolen.Outcome != lockdb.OutcomeStolen {
		t.Fatalf("two minutes on, another owner's try: %s; want stolen", stolen.Outcome)
	}
	if lead := stolen.ExpiresAt.Sub(testdb.DBNow(t, db)); lead < 2*time.Minute {
		t.Fatalf("the steal's lease ends %s after the server's own clock; want over two minutes (the moved time plus its TTL)", lead)
	}
}

// Set puts the schema's time at a given instant, from where it runs on.
func TestClockSetPutsTheTimeAtAnInstant(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock.Set(at)
	if now := clock.Now(); now.Before(at) || now.After(at.Add(10*time.Second)) {
		t.Fatalf("after Set(%s) the clock reads %s", at, now)
	}
	if g := grant(t, db, "k", "a", time.Hour); g.ExpiresAt.Before(at.Add(time.Hour)) || g.ExpiresAt.After(at.Add(time.Hour+10*time.Second)) {
		t.Fatalf("an hour's lease granted at %s expires at %s", at, g.ExpiresAt)
	}
}

// The next migrate puts the real clock back; a second Clock keeps the
// shift the first one made.
func TestClockIsUndoneByMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	clock.Advance(time.Hour)
	if again := testdb.Clock(t, db); again.Now().Sub(testdb.DBNow(t, db)) < 59*time.Minute {
		t.Fatal("a second Clock on the schema lost the hour the first one moved it")
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if lead := clock.Now().Sub(testdb.DBNow(t, db)); lead > time.Minute {
		t.Fatalf("after a migrate the schema's clock is still %s ahead of the server's", lead)
	}
}
