package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// TestReplicaIsShownAndActionsRefused points the console at a real
// streaming standby: the header says "replica — read-only" and x refuses
// with that message instead of opening the confirmation.
func TestReplicaIsShownAndActionsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	ctx := context.Background()
	primary, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	conn, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	acquire(t, testdb.Pool(t, primary.DSN("")), "billing:nightly", "worker-1", time.Hour)
	standby, err := pgtemp.StartStandby(ctx, primary, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no standby: %v", err)
	}
	t.Cleanup(func() { _ = standby.Close() })
	if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}

	m := dbModel(t, testdb.Pool(t, standby.DSN("")), Options{}, 120, 35)
	if !m.snap.page.InRecovery {
		t.Fatal("the standby was not detected")
	}
	s := screen(m)
	if !strings.Contains(s, "replica — read-only") || !strings.Contains(s, "billing:nightly") {
		t.Fatalf("screen:\n%s", s)
	}
	m, cmd := update(t, m, keyMsg("x"))
	if cmd != nil || m.confirm != nil || !strings.Contains(m.flash.text, "replica — read-only") {
		t.Fatalf("x on a replica: confirm %v, flash %q", m.confirm != nil, m.flash.text)
	}
}
