package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// A group cannot end under a heartbeat that extends one of its holders:
// the heartbeat takes the key's row before the holder's slot, as a
// holder's renewal does. Here r1's shared lease is kept by its session; a
// heartbeat moves it on, uncommitted, and then time passes its old end.
// An exclusive grant tried meanwhile finds the group's row taken and is
// refused at once: it neither ends the group on the lapse it would see
// (r1's old end) nor waits to grant over the lease the heartbeat extended.
func TestAHeartbeatKeepsItsHoldersGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	g, found, err := store.TryGrantShared(ctx, db, store.GrantParams{Key: "s", Owner: "r1", TTL: time.Minute, Actor: "r1"}, 0)
	if err != nil || !found || !g.Granted() {
		t.Fatalf("shared grant: %+v, %v, %v", g, found, err)
	}
	s, err := store.OpenSession(ctx, db, store.SessionParams{Owner: "r1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ref := store.SessionRef{ID: s.ID, Owner: "r1"}
	if b, err := store.BindSession(ctx, db, ref, []store.LeaseRef{{Key: "s", Owner: "r1", Token: g.Token}}); err != nil || b.Outcome != "bound" {
		t.Fatalf("bind: %+v, %v", b, err)
	}
	clock.Advance(50 * time.Second)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if beat, err := store.SessionHeartbeat(ctx, tx, ref, nil, nil); err != nil || beat.Outcome != "renewed" || beat.Leases != 1 {
		t.Fatalf("heartbeat: %+v, %v", beat, err)
	}
	clock.Advance(20 * time.Second) // past the bound lease's old end, not its new one

	w := store.GrantParams{Key: "s", Owner: "w", TTL: time.Minute, Actor: "w"}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, _, err := store.TryGrant(tctx, db, w)
	if err != nil || got.Granted() {
		t.Fatalf("an exclusive try during the heartbeat: %+v, %v; want refused at once", got, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err := store.TryGrant(ctx, db, w); err != nil || got.Granted() {
		t.Errorf("an exclusive try after the heartbeat: %+v, %v; want refused: r1's lease runs", got, err)
	}
}
