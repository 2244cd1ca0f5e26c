package tui

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// startServer is a private PostgreSQL with lockctl's tables, for tests that
// stop or freeze it.
func startServer(t *testing.T) *pgtemp.Instance {
	t.Helper()
	srv, err := pgtemp.Start(context.Background(), pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	out, err := exec.Command(sharedBinary(t), "migrate", "--dsn", srv.DSN("")).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	return srv
}

// TestConsoleStartsWhileDatabaseDown: started against a server that is not
// running, the console opens, says it is reconnecting and why, and goes live
// by itself once the server is up; in an 80x24 terminal.
func TestConsoleStartsWhileDatabaseDown(t *testing.T) {
	srv := startServer(t)
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	// The server trusts local connections: the password is there to be hidden.
	dsn := strings.Replace(srv.DSN(""), "postgres@", "postgres:sekrit@", 1)
	p := startPane(t, 80, 24, "--dsn", dsn, "--refresh", "200ms")
	s := p.waitFor("reconnecting, attempt", 10*time.Second)
	if !strings.Contains(s, "connection refused") {
		t.Fatalf("the header does not give the last error:\n%s", s)
	}
	if strings.Contains(s, "sekrit") {
		t.Fatalf("the screen shows the password:\n%s", s)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = p.waitFor("● live", 15*time.Second)
	// At 80 columns the footer still ends with quit.
	if lines := strings.Split(strings.TrimRight(s, "\n"), "\n"); !strings.HasSuffix(strings.TrimSpace(lines[len(lines)-1]), "q quit") {
		t.Fatalf("footer at 80x24 does not offer quit:\n%s", s)
	}
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}

// TestQuitWhileServerFrozen: with the server frozen (SIGSTOP: connections
// open, nothing answers), q ends the program within a second — both while a
// poll is still waiting for its reply and after a poll has timed out (pgx
// then cleans up the connection with a cancel request that never gets an
// answer: closing the pool must not wait for it).
func TestQuitWhileServerFrozen(t *testing.T) {
	srv := startServer(t)
	for _, tc := range []struct {
		name string
		wait string // on screen before q is pressed
	}{
		{"poll in flight", "slow: no reply for"},
		{"after a timed-out poll", "no reply in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPane(t, 120, 35, "--dsn", srv.DSN(""), "--refresh", "200ms")
			p.waitFor("● live", 10*time.Second)
			if err := srv.Freeze(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Thaw() }()
			p.waitFor(tc.wait, 10*time.Second)
			start := time.Now()
			p.keys("q")
			p.waitFor("exit status 0", 5*time.Second)
			// The aim is under a second (about 0.35s here: the pool gets
			// 0.3s to close); the bound leaves room for a loaded CI machine
			// and still catches a close that waits for the frozen server's
			// cancel replies (seconds).
			took := time.Since(start)
			t.Logf("q ended the program in %s", took.Round(time.Millisecond))
			if took > 1500*time.Millisecond {
				t.Fatalf("q took %s to end the program with the server frozen, want under 1s", took)
			}
		})
	}
}

// TestNoTerminalRefusedFirst: without a terminal, the console and the demo
// say so in one line and exit 2 — the demo before it starts a server.
func TestNoTerminalRefusedFirst(t *testing.T) {
	bin := sharedBinary(t)
	for _, args := range [][]string{
		{"--dsn", "postgres://nobody@127.0.0.1:1/none"},
		{"demo"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr // pipes; stdin is /dev/null
		start := time.Now()
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("lockctl %v without a terminal: %v, want exit status 2\n%s", args, err, stderr.String())
		}
		msg := stderr.String()
		if !strings.Contains(msg, "needs an interactive terminal: standard input and standard output are not terminals") {
			t.Errorf("lockctl %v: unclear message:\n%s", args, msg)
		}
		if strings.Contains(msg, "PostgreSQL") || strings.Contains(msg, "TTY") || stdout.Len() > 0 {
			t.Errorf("lockctl %v started something before refusing:\nstdout %q\nstderr %s", args, stdout.String(), msg)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("lockctl %v took %s to refuse", args, took)
		}
	}
}
