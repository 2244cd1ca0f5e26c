package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// TestEndToEndInTmux drives the real binary in a real terminal (tmux)
// against its own PostgreSQL: a lock acquired by `lockctl acquire` appears
// within a refresh; x then y expires it and the event names the actor; a
// key full of escape sequences is drawn escaped and cannot retitle the
// pane; stopping the server shows "reconnecting" and starting it again
// recovers by itself.
func TestEndToEndInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	dsn := srv.DSN("")
	lockctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--dsn", dsn)...).CombinedOutput()
		if err != nil {
			t.Fatalf("lockctl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	lockctl("migrate")
	lockctl("acquire", "evil\x1b]2;owned\x07\x1b[2J", "--owner", "bad\x1b[31mowner", "--ttl", "5m")

	session := fmt.Sprintf("lockctl-e2e-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", session}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "35",
		bin+" --dsn '"+dsn+"' --actor e2e-operator --refresh 500ms")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", session, "kill-server").Run() })
	screen := func() string { return tmux("capture-pane", "-p", "-t", session) }
	waitFor := func(what string, within time.Duration) string {
		t.Helper()
		var s string
		if !testdb.Within(within, func() bool { s = screen(); return strings.Contains(s, what) }) {
			t.Fatalf("no %q on screen within %s:\n%s", what, within, s)
		}
		return s
	}
	title := strings.TrimSpace(tmux("display", "-p", "-t", session, "#{pane_title}"))

	// The escaped key is visible literally; the pane title did not change.
	s := waitFor(`evil\x1b]2;owned\x07`, 10*time.Second)
	if !strings.Contains(s, `bad\x1b[31mowner`) {
		t.Fatalf("owner not shown escaped:\n%s", s)
	}
	if got := strings.TrimSpace(tmux("display", "-p", "-t", session, "#{pane_title}")); got != title || strings.Contains(got, "owned") {
		t.Fatalf("pane title changed from %q to %q", title, got)
	}

	// Its Notifier's probe came back: the header says releases are heard.
	waitFor("wake-ups live", 10*time.Second)

	// A lock taken by the CLI shows up within one refresh (500ms) plus slack.
	lockctl("acquire", "e2e:lock", "--owner", "worker-1", "--ttl", "60s")
	waitFor("e2e:lock", 3*time.Second)

	// Select it with the filter, then x and y.
	tmux("send-keys", "-t", session, "/", "e2e:lock", "Enter")
	waitFor("row 1 of 1", 3*time.Second)
	tmux("send-keys", "-t", session, "x")
	waitFor("Force-expire this lock?", 3*time.Second)
	tmux("send-keys", "-t", session, "y")
	waitFor("✓ force-expired e2e:lock", 5*time.Second)
	waitFor("expired, stealable", 3*time.Second)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := lockview.KeyEvents(ctx, conn, "e2e:lock", 1)
	conn.Close(ctx)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockview.EventForceExpired || evs[0].Actor != "e2e-operator" {
		t.Fatalf("last event %+v, %v", evs, err)
	}

	// The database goes away: the console says so and keeps the data.
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	s = waitFor("reconnecting, attempt", 10*time.Second)
	if !strings.Contains(s, "e2e:lock") || !strings.Contains(s, "last good data") {
		t.Fatalf("snapshot not kept during the outage:\n%s", s)
	}
	// An action during the outage reports the failure and changes nothing.
	tmux("send-keys", "-t", session, "x")
	waitFor("Force-expire this lock?", 3*time.Second)
	tmux("send-keys", "-t", session, "y")
	waitFor("failed, nothing changed", 10*time.Second)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("● live", 15*time.Second)
	tmux("send-keys", "-t", session, "q")
	exited := testdb.Within(5*time.Second, func() bool {
		if exec.Command("tmux", "-L", session, "has-session", "-t", session).Run() != nil {
			return true
		}
		// The session ends with the program, possibly between the two tmux
		// calls: a failed list-panes means it is gone.
		out, err := exec.Command("tmux", "-L", session, "list-panes", "-t", session, "-F", "#{pane_current_command}").Output()
		return err != nil || !strings.Contains(string(out), "lockctl")
	})
	if !exited {
		t.Fatalf("lockctl still running 5s after q:\n%s", screen())
	}
}

// buildBinary compiles lockctl into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(t.TempDir(), "lockctl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
