package tui

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
)

// TestEndToEndInTmux drives the real binary in a real terminal (tmux)
// against its own PostgreSQL: a lock acquired by `lockctl acquire` appears
// within a refresh; x then y expires it and the event names the actor; a
// key full of escape sequences is drawn escaped and cannot retitle the
// pane; stopping the server shows "reconnecting" and starting it again
// recovers by itself.
func TestEndToEndInTmux(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	dsn := srv.DSN("")
	lockctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(sharedBinary(t), append(args, "--dsn", dsn)...).CombinedOutput()
		if err != nil {
			t.Fatalf("lockctl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	lockctl("acquire", "evil\x1b]2;owned\x07\x1b[2J", "--owner", "bad\x1b[31mowner", "--ttl", "5m")

	p := startPane(t, 120, 35, "--dsn", dsn, "--actor", "e2e-operator", "--refresh", "500ms")
	paneTitle := func() string { return strings.TrimSpace(p.tmux("display", "-p", "-t", p.session, "#{pane_title}")) }
	title := paneTitle()

	// The escaped key is visible literally; the pane title did not change.
	s := p.waitFor(`evil\x1b]2;owned\x07`, 10*time.Second)
	if !strings.Contains(s, `bad\x1b[31mowner`) {
		t.Fatalf("owner not shown escaped:\n%s", s)
	}
	if got := paneTitle(); got != title || strings.Contains(got, "owned") {
		t.Fatalf("pane title changed from %q to %q", title, got)
	}

	// Its Notifier's probe came back: the header says releases are heard.
	p.waitFor("wake-ups live", 10*time.Second)

	// A lock taken by the CLI shows up within one refresh (500ms) plus slack.
	lockctl("acquire", "e2e:lock", "--owner", "worker-1", "--ttl", "60s")
	p.waitFor("e2e:lock", 3*time.Second)

	// Select it with the filter, then x and y.
	p.keys("/", "e2e:lock", "Enter")
	p.waitFor("row 1 of 1", 3*time.Second)
	p.keys("x")
	p.waitFor("Force-expire this lock?", 3*time.Second)
	p.keys("y")
	p.waitFor("✓ force-expired e2e:lock", 5*time.Second)
	p.waitFor("expired, stealable", 3*time.Second)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := lockview.KeyEvents(ctx, conn, "e2e:lock", 1)
	conn.Close(ctx)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceExpired || evs[0].Actor != "e2e-operator" {
		t.Fatalf("last event %+v, %v", evs, err)
	}

	// The database goes away: the console says so and keeps the data.
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	s = p.waitFor("reconnecting, attempt", 10*time.Second)
	if !strings.Contains(s, "e2e:lock") || !strings.Contains(s, "last good data") {
		t.Fatalf("snapshot not kept during the outage:\n%s", s)
	}
	// An action during the outage reports the failure and changes nothing.
	p.keys("x")
	p.waitFor("Force-expire this lock?", 3*time.Second)
	p.keys("y")
	p.waitFor("failed, nothing changed", 10*time.Second)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p.waitFor("● live", 15*time.Second)
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
