package cli_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A lockctl run holding a hundred keys is SIGKILLed with its command: it
// can neither release them nor close its session. Every key then stays
// held by it until the session's expires_at as the database had it at the
// kill (a try is refused, naming that expiry), and is grantable at once
// after it to another owner, as a steal with a larger token: the keys
// lapse together, at the session's TTL, with no heartbeat of their own.
func TestKilledRunsKeysLapseTogetherAtItsSessionsExpiry(t *testing.T) {
	t.Parallel()
	// Its own application_name, so the test can see when every backend of
	// the killed lockctl is gone (a statement in flight at the kill still
	// runs to its commit).
	app := fmt.Sprintf("killed-run-%d", time.Now().UnixNano())
	d := db{t: t, dsn: testdb.WithParam(testdb.DSN(t), "application_name", app)}
	pool := testdb.Pool(t, d.dsn)
	dir := t.TempDir()
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("batch-%03d", i)
	}
	args := append(append([]string{"run"}, keys...), "--owner", "runner", "--ttl", "2s", "--")
	p := d.start(append(args, script(dir, `echo $$ > $DIR/pid.tmp; mv $DIR/pid.tmp $DIR/pid; exec sleep 1000`)...)...)
	p.waitForFile(filepath.Join(dir, "pid"))
	child, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "pid"))))
	if err != nil {
		t.Fatal(err)
	}
	// The command starts while the session binds the keys: wait until it
	// keeps all of them.
	var session int64
	p.until("keeping its 100 keys in one session", func() bool {
		n := 0
		err := pool.QueryRow(context.Background(), `
SELECT b.session_id, count(*) FROM distributed_lock_session_lease b
JOIN distributed_lock_session s USING (session_id)
WHERE s.owner_id = 'runner' GROUP BY b.session_id`).Scan(&session, &n)
		return err == nil && n == len(keys)
	})
	held := map[string]int64{} // key → runner's token
	rows, err := pool.Query(context.Background(),
		`SELECT lock_key, fence_token FROM distributed_lock WHERE owner_id = 'runner' AND released_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var tok int64
		if err := rows.Scan(&k, &tok); err != nil {
			t.Fatal(err)
		}
		held[k] = tok
	}
	if rows.Close(); rows.Err() != nil || len(held) != len(keys) {
		t.Fatalf("runner holds %d keys (%v); want %d", len(held), rows.Err(), len(keys))
	}

	// lockctl first, so that it cannot release the keys when its command
	// ends; then the command's process group.
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-child, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	p.wait()
	testdb.Eventually(t, 30*time.Second, "the killed lockctl's backends gone", func() bool {
		var n int
		err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
		return err == nil && n == 0
	})
	expiry := sessionExpiresAt(t, pool, session)
	var sameExpiry int
	if err := pool.QueryRow(context.Background(), `
SELECT count(*) FROM distributed_lock
WHERE owner_id = 'runner' AND released_at IS NULL AND expires_at = $1`, expiry).Scan(&sameExpiry); err != nil {
		t.Fatal(err)
	}
	if sameExpiry != len(keys) {
		t.Fatalf("%d of the killed run's %d leases end at its session's expiry %v", sameExpiry, len(keys), expiry)
	}

	// Before the expiry: tries are refused, naming the runner and the
	// session's expiry. A try that reaches the database after it (a loaded
	// machine) may be granted; then no earlier than the expiry.
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	taken := map[string]bool{}
	var mu sync.Mutex
	var refused int
	forEachKey(keys, func(key string) {
		lease, err := testdb.Try(context.Background(), lk, pool, key, "next")
		var he *locker.Error
		switch {
		case errors.As(err, &he):
			if he.Owner != "runner" || he.Token != held[key] || !he.ExpiresAt.Equal(expiry) {
				t.Errorf("%s: refused as held by %s (token %d) until %v; want runner's token %d until the session's %v",
					key, he.Owner, he.Token, he.ExpiresAt, held[key], expiry)
			}
			mu.Lock()
			refused++
			mu.Unlock()
		case err != nil:
			t.Errorf("%s: %v", key, err)
		default:
			checkStolenAfter(t, pool, lease, held[key], expiry)
			mu.Lock()
			taken[key] = true
			mu.Unlock()
		}
	})
	t.Logf("before the session's expiry: %d of %d tries refused", refused, len(keys))

	// After it: every key at the first try.
	testdb.WaitUntilPast(t, pool, expiry)
	forEachKey(keys, func(key string) {
		if taken[key] {
			return
		}
		lease, err := testdb.Try(context.Background(), lk, pool, key, "next")
		if err != nil {
			t.Errorf("%s after the killed run's session expired: %v; want it granted", key, err)
			return
		}
		checkStolenAfter(t, pool, lease, held[key], expiry)
	})
}

// forEachKey calls f for each key from a few goroutines, so a hundred tries
// fit well inside a 2 s TTL on a loaded machine.
func forEachKey(keys []string, f func(string)) {
	next := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range next {
				f(k)
			}
		})
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
}

// checkStolenAfter: lease was a steal of the killed run's token, with a
// larger token, granted (its event) no earlier than the session's expiry.
func checkStolenAfter(t *testing.T, pool *pgxpool.Pool, lease locker.Lease, prev int64, expiry time.Time) {
	t.Helper()
	if lease.Outcome != locker.Stolen || lease.Token <= prev {
		t.Errorf("%s: %s with token %d; want a steal above the killed run's %d", lease.Key, lease.Outcome, lease.Token, prev)
	}
	var at time.Time
	if err := pool.QueryRow(context.Background(),
		`SELECT occurred_at FROM distributed_lock_event WHERE lock_key = $1 AND fence_token = $2 AND kind = 'stolen'`,
		lease.Key, lease.Token).Scan(&at); err != nil {
		t.Errorf("%s: the steal's event: %v", lease.Key, err)
		return
	}
	if at.Before(expiry) {
		t.Errorf("%s stolen at %v, %v before the killed run's session expired", lease.Key, at, expiry.Sub(at))
	}
}

func sessionExpiresAt(t *testing.T, pool *pgxpool.Pool, id int64) time.Time {
	t.Helper()
	var at time.Time
	if err := pool.QueryRow(context.Background(),
		`SELECT expires_at FROM distributed_lock_session WHERE session_id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}
