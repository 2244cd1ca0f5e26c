package deployment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// logRecorder collects what a Notifier logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *logRecorder) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// runNotifier runs n until the test ends.
func runNotifier(t *testing.T, n *locker.Notifier) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestNotifierProvesDelivery: a Notifier listening directly hears the probe
// sent through the pooler and is live, and a waiter through the pooler wakes
// on the release rather than at its recheck; one listening through the
// transaction pooler hears nothing, says so once, and is not live, while its
// waiters still get the key by rechecking.
func TestNotifierProvesDelivery(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 4})
	pool := poolInMode(t, p.DSN, "exec")
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})

	t.Run("direct LISTEN is live", func(t *testing.T) {
		direct, err := pgx.ParseConfig(p.DirectDSN)
		if err != nil {
			t.Fatal(err)
		}
		var logs logRecorder
		n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(direct), Probe: pool, Logf: logs.Logf})
		runNotifier(t, n)
		if !testdb.Within(10*time.Second, n.Live) {
			t.Fatalf("a Notifier listening directly is not live after 10s; logged %q", logs.Lines())
		}
		waiting := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: time.Minute})
		if r := handOff(t, lk, waiting, pool, "live"); r.Err != nil {
			t.Fatalf("waiter with a minute's recheck, woken by NOTIFY: %v", r.Err)
		}
		if len(logs.Lines()) != 0 {
			t.Fatalf("a live Notifier logged %q", logs.Lines())
		}
	})

	t.Run("LISTEN through a session pooler is live", func(t *testing.T) {
		session, err := pgx.ParseConfig(p.SessionDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(session), Probe: pool})
		runNotifier(t, n)
		if !testdb.Within(10*time.Second, n.Live) {
			t.Fatal("a Notifier listening through a session pooler is not live after 10s")
		}
	})

	t.Run("LISTEN through a transaction pooler is not live", func(t *testing.T) {
		pooled, err := pgx.ParseConfig(p.DSN)
		if err != nil {
			t.Fatal(err)
		}
		pooled.DefaultQueryExecMode = pgx.QueryExecModeExec
		var logs logRecorder
		n := locker.NewNotifier(locker.NotifierConfig{
			Connect: lockdb.ConnectWith(pooled), Probe: pool, ProbeTimeout: 300 * time.Millisecond, Logf: logs.Logf})
		runNotifier(t, n)
		if !testdb.Within(10*time.Second, func() bool { return len(logs.Lines()) > 0 }) {
			t.Fatal("no warning 10s after LISTEN through a transaction pooler")
		}
		if lines := logs.Lines(); len(lines) != 1 || !strings.Contains(lines[0], "direct or session-pooled") || n.Live() || n.Checking() {
			t.Fatalf("live %v, checking %v, logged %q; want not live and one warning saying what to connect to", n.Live(), n.Checking(), lines)
		}
		// Timed rechecks still hand the key over.
		waiting := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: 200 * time.Millisecond})
		if r := handOff(t, lk, waiting, pool, "unheard"); r.Err != nil {
			t.Fatalf("waiter rechecking on a timer: %v", r.Err)
		}
	})
}
