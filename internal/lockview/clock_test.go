package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// The console reads the protocol's clock: moved past a lease's end, the
// lease reads as expired, held for as long as the clock moved, and the
// next grant, made by the same clock, is a steal.
func TestReadsShareTheProtocolsClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	params := store.GrantParams{Key: "k", Owner: "a", TTL: time.Minute, Actor: "a"}
	if g, _, err := store.TryGrant(ctx, db, params); err != nil || !g.Granted() {
		t.Fatalf("grant: %+v, %v", g, err)
	}
	testdb.Clock(t, db).Advance(2 * time.Minute)
	l, found, err := lockview.Get(ctx, db, "k")
	if err != nil || !found {
		t.Fatalf("read k: %v, %v", found, err)
	}
	if l.State() != lockdb.StateExpired || l.HeldFor < 2*time.Minute {
		t.Errorf("two minutes on, a minute's lease reads as %s, held for %s; want expired, over two minutes",
			l.State(), l.HeldFor)
	}
	params.Owner = "b"
	if g, _, err := store.TryGrant(ctx, db, params); err != nil || g.Outcome != "stolen" {
		t.Errorf("two minutes on, another owner's try: %+v, %v; want stolen", g, err)
	}
}
