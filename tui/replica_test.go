package tui

import (
	"context"
	"strconv"
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
	primary := testdb.Server(t)
	conn, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	acquire(t, testdb.Pool(t, primary.DSN("")), "billing:nightly", "worker-1", time.Hour)
	standby := testdb.Standby(t, primary)
	if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}

	m := dbModel(t, testdb.Pool(t, standby.DSN("")), Options{}, 120, 35)
	if !m.snap.Page.InRecovery {
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

// TestConsoleFollowsAPromotion opens the console on a multi-host DSN
// (primary, standby). The header names the server it reads from; after the
// primary crashes and the standby is promoted, polls fail until the pool
// reaches the promoted server, and then the header names it and says which
// server the console left and why.
func TestConsoleFollowsAPromotion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	ctx := context.Background()
	primary := testdb.Server(t)
	standby := testdb.Standby(t, primary)
	pool := testdb.Pool(t, pgtemp.MultiHostDSN("", primary, standby))
	if err := store.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	acquire(t, pool, "billing:nightly", "worker-1", time.Hour)
	if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	oldAddr := "127.0.0.1:" + strconv.Itoa(primary.Port())
	newAddr := "127.0.0.1:" + strconv.Itoa(standby.Port())
	m := dbModel(t, pool, Options{Server: oldAddr + "," + newAddr + "/postgres"}, 160, 35)
	if s := screen(m); !strings.Contains(s, "on "+oldAddr) || strings.Contains(s, "left ") {
		t.Fatalf("before the promotion, want the header on %s:\n%s", oldAddr, s)
	}

	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	// A poll while no server accepts writes fails, as the console's next
	// poll after a crash does (without this one, the pool's health check
	// could find the promoted server before any poll fails).
	if m = repoll(t, m); m.failures == 0 {
		t.Fatalf("a poll with the primary down and the standby not promoted succeeded")
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	// Each pooled connection to the crashed primary fails one poll; then a
	// new connection reaches the promoted standby.
	if !testdb.Within(10*time.Second, func() bool {
		m = repoll(t, m)
		return m.failures == 0
	}) {
		t.Fatalf("no good poll after the promotion: %v", m.lastErr)
	}
	s := screen(m)
	for _, want := range []string{"on " + newAddr, "left " + oldAddr + ": database unreachable", "billing:nightly", "● live"} {
		if !strings.Contains(s, want) {
			t.Fatalf("after the promotion the screen lacks %q:\n%s", want, s)
		}
	}
}
