package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// The first steps on a fresh database: migrate an empty database, then
// acquire prints a token. Migrating again changes nothing.
func TestMigrateThenAcquire(t *testing.T) {
	t.Parallel()
	d := db{t: t, dsn: testdb.EmptyDSN(t)}
	r := d.expect(0, "migrate")
	if !strings.Contains(r.stdout, "migrated") {
		t.Fatalf("migrate printed %q; want a confirmation", r.stdout)
	}
	d.expect(0, "migrate")
	got := d.json(0, "acquire", "k", "--owner", "a")
	if got.Outcome != "acquired" || got.Key != "k" || got.Owner != "a" || got.Token <= 0 ||
		got.TTLMs != 30000 || got.State != "held" {
		t.Fatalf("acquire = %+v; want acquired k by a with a token and ttl_ms 30000", got)
	}
	expiresAt(t, got)
}

func TestAcquireOutcomes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	first := d.json(0, "acquire", "k", "--owner", "a")
	if first.Outcome != "acquired" {
		t.Fatalf("first acquire = %+v; want acquired", first)
	}
	again := d.json(0, "acquire", "k", "--owner", "a")
	if again.Outcome != "renewed" || again.Token != first.Token || !expiresAt(t, again).After(expiresAt(t, first)) {
		t.Fatalf("acquire by the holder = %+v; want renewed, token %d, later expiry than %v", again, first.Token, *first.ExpiresAt)
	}

	held := d.json(3, "acquire", "k", "--owner", "b")
	if held.Outcome != "held" || held.Owner != "a" || held.Token != first.Token || held.State != "held" ||
		held.RequestedOwner != "b" || held.RemainingMs == nil || *held.RemainingMs <= 0 || held.TTLMs != 30000 {
		t.Fatalf("acquire by another owner = %+v; want held by a, token %d, with remaining time", held, first.Token)
	}

	short := d.json(0, "acquire", "short", "--owner", "a", "--ttl", "200ms")
	if short.TTLMs != 200 {
		t.Fatalf("--ttl 200ms gave ttl_ms %d", short.TTLMs)
	}
	d.expireLease("short")
	stolen := d.json(0, "acquire", "short", "--owner", "b")
	if stolen.Outcome != "stolen" || stolen.Owner != "b" || stolen.Token <= short.Token {
		t.Fatalf("acquire after expiry = %+v; want stolen by b with a token above %d", stolen, short.Token)
	}
}

// Without --json: one line on stdout for a grant; the refusal on stderr.
func TestAcquireText(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := d.expect(0, "acquire", "billing:nightly", "--owner", "host:1:ab")
	if !regexp.MustCompile(`^acquired billing:nightly token=\d+ owner=host:1:ab expires in 30s\n$`).MatchString(r.stdout) {
		t.Fatalf("acquire printed %q", r.stdout)
	}
	r = d.expect(3, "acquire", "billing:nightly", "--owner", "other")
	if r.stdout != "" || !strings.Contains(r.stderr, "billing:nightly is held by host:1:ab") {
		t.Fatalf("held acquire: %s\nwant the holder named on stderr", r)
	}
}

// Without --owner, acquire makes up an owner id and prints it: the user
// needs it to renew and release.
func TestAcquireDefaultOwner(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	got := d.json(0, "acquire", "k")
	if strings.Count(got.Owner, ":") < 2 {
		t.Fatalf("default owner %q; want host:pid:random", got.Owner)
	}
	d.json(0, "renew", "k", "--owner", got.Owner, "--token", tokenArg(got.Token))

	r := d.expect(0, "acquire", "text")
	m := regexp.MustCompile(`owner=(\S+)`).FindStringSubmatch(r.stdout)
	if m == nil || strings.Count(m[1], ":") < 2 {
		t.Fatalf("acquire without --owner printed %q; want owner=host:pid:random", r.stdout)
	}
}

// acquire --wait blocks while another owner holds the key and wakes on the
// release (NOTIFY), not at its next recheck.
func TestAcquireWaitWakesOnRelease(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	pool := testdb.Pool(t, d.dsn)
	holder := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waiter := exec.CommandContext(ctx, binary, "acquire", "k", "--owner", "b", "--wait", "20s", "--json", "--dsn", d.dsn)
	waiter.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	waiter.Stdout, waiter.Stderr = &stdout, &stderr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- waiter.Wait() }()

	// The waiter registers itself in distributed_lock_waiter before it sleeps.
	for {
		ws, err := lockview.Waiters(ctx, pool, "k")
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ws[0].Owner == "b" {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("waiter exited before the release: %v\nstdout: %s\nstderr: %s", err, &stdout, &stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	d.json(0, "release", "k", "--owner", "a", "--token", tokenArg(holder.Token))
	released := time.Now()

	// Without the wake-up it would sleep until its 5s recheck.
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("waiter: %v\nstdout: %s\nstderr: %s", err, &stdout, &stderr)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("waiter still waiting 3s after the release\nstderr: %s", &stderr)
	}
	var got jsonResult
	decode(t, result{stdout: stdout.String()}, &got)
	if got.Outcome != "acquired" || got.Owner != "b" || got.Token <= holder.Token {
		t.Fatalf("waiter got %+v; want acquired by b with a token above %d", got, holder.Token)
	}
	t.Logf("waiter acquired %s after the release", time.Since(released).Round(time.Millisecond))
	// The release handed b the lease for the claim window only; the command
	// claimed it for its full TTL before it exited.
	row, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil || row.Token != got.Token || row.ExpiresAt.Sub(row.AcquiredAt) <= 5*time.Second {
		t.Fatalf("row after the waiter exited = %+v, %v; want token %d claimed for its TTL, past the 2s claim window", row, err, got.Token)
	}
}

// A wait that runs out is a held refusal (exit 3) naming the holder.
func TestAcquireWaitTimesOut(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	holder := d.json(0, "acquire", "k", "--owner", "a")
	got := d.json(3, "acquire", "k", "--owner", "b", "--wait", "300ms")
	if got.Outcome != "held" || got.Owner != "a" || got.Token != holder.Token {
		t.Fatalf("wait that ran out = %+v; want held by a", got)
	}
	r := d.expect(3, "acquire", "k", "--owner", "b", "--wait", "100ms")
	if !strings.Contains(r.stderr, "gave up after waiting 100ms") || !strings.Contains(r.stderr, "held by a") {
		t.Fatalf("text wait that ran out: %s", r)
	}
}

// A signal during a wait (acquire --wait, run --wait) ends it with the
// shell's code for that signal (130 for Ctrl-C, 143 for SIGTERM), not the
// 1 of a database error, and removes its waiter record, so the console
// does not show a waiter that is gone. run never starts its command.
func TestWaitInterrupted(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	pool := testdb.Pool(t, d.dsn)
	d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		sig  os.Signal
		want int
	}{
		{"acquire SIGINT", []string{"acquire", "k", "--owner", "b", "--wait", "1m"}, os.Interrupt, 130},
		{"acquire SIGTERM", []string{"acquire", "k", "--owner", "b", "--wait", "1m"}, syscall.SIGTERM, 143},
		{"run SIGINT", []string{"run", "k", "--owner", "b", "--wait", "1m", "--", "touch", dir + "/ran"}, os.Interrupt, 130},
		{"run SIGTERM", []string{"run", "k", "--owner", "b", "--wait", "1m", "--", "touch", dir + "/ran"}, syscall.SIGTERM, 143},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range cases {
		p := d.start(c.args...)
		testdb.Eventually(t, 20*time.Second, "the waiting lockctl's waiter record", func() bool {
			ws, err := lockview.Waiters(ctx, pool, "k")
			if err != nil {
				t.Fatal(err)
			}
			// Registered a while ago: the waiter has its record's id. (A
			// signal while the INSERT's reply is in flight leaves the record
			// to expire on its own: locker.Acquire registers under the
			// caller's context.)
			return len(ws) == 1 && ws[0].Waited > 200*time.Millisecond
		})
		if err := p.cmd.Process.Signal(c.sig); err != nil {
			t.Fatal(err)
		}
		r := p.wait()
		if r.code != c.want || !strings.Contains(r.stderr, "interrupted while waiting for k") {
			t.Fatalf("%s: %s\nwant exit %d, interrupted", c.name, r, c.want)
		}
		if strings.Contains(r.stderr, "\r") || strings.Contains(r.stderr, "waited") {
			t.Fatalf("%s: stderr %q holds a progress line although it is not a terminal", c.name, r.stderr)
		}
		ws, err := lockview.Waiters(ctx, pool, "k")
		if err != nil || len(ws) != 0 {
			t.Fatalf("%s: waiters after the signal = %+v, %v; want none", c.name, ws, err)
		}
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Fatal("run started its command although its wait was interrupted")
	}
}
