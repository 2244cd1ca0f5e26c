package cli_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// TestThroughTransactionPooler runs lockctl from many separate processes
// through PgBouncer in transaction mode with a DSN that names no query exec
// mode, as a user would: every process must do its work (pgx's default
// mode, left alone, fails there with "prepared statement … already
// exists").
func TestThroughTransactionPooler(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 2})
	d := db{t: t, dsn: p.DSN}

	const workers, cycles = 4, 13 // 4 × 13 × (acquire + release) = 104 processes
	var wg sync.WaitGroup
	errs := make(chan string, workers*cycles)
	for w := range workers {
		wg.Go(func() {
			owner := fmt.Sprintf("worker-%d", w)
			for c := range cycles {
				key := fmt.Sprintf("pooled-%d", (w+c)%3) // shared keys: some acquires are refused
				r := run(t, "acquire", key, "--owner", owner, "--json", "--dsn", p.DSN)
				if r.code == 3 {
					continue
				}
				if r.code != 0 {
					errs <- fmt.Sprintf("acquire %s: %s", key, r)
					continue
				}
				var got jsonResult
				decode(t, r, &got)
				if r := run(t, "release", key, "--owner", owner, "--token", tokenArg(got.Token), "--dsn", p.DSN); r.code != 0 {
					errs <- fmt.Sprintf("release %s: %s", key, r)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if r := d.expect(0, "ls", "--json"); !strings.Contains(r.stdout, "pooled-0") {
		t.Fatalf("ls through the pooler lists no pooled-0:\n%s", r)
	}
}

// TestPoolerMisconfigurationsSayWhatToDo: what lockctl cannot do through a
// transaction pooler is refused with the fix, not left to fail at random.
func TestPoolerMisconfigurationsSayWhatToDo(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 1})

	r := run(t, "acquire", "k", "--dsn", p.DSN+"&default_query_exec_mode=describe_exec")
	if r.code != 2 || !strings.Contains(r.stderr, "default_query_exec_mode=exec") {
		t.Fatalf("describe_exec through a pooler: %s\nwant exit 2 naming default_query_exec_mode=exec", r)
	}

	// The default mode chosen explicitly is kept (PgBouncer 1.21+ can run
	// it); on 1.18 the second process finds the first one's statement on
	// the one server connection.
	explicit := p.DSN + "&default_query_exec_mode=cache_statement"
	first := run(t, "acquire", "k", "--owner", "a", "--dsn", explicit)
	second := run(t, "acquire", "k", "--owner", "a", "--dsn", explicit)
	if first.code != 0 || second.code != 1 || !strings.Contains(second.stderr, "add default_query_exec_mode=exec") {
		t.Fatalf("cache_statement through a 1.18 transaction pooler:\nfirst: %s\nsecond: %s\nwant the second to fail naming the fix", first, second)
	}

	r = run(t, "ls", "--dsn", p.DSN+"&search_path=elsewhere")
	if r.code != 1 || !strings.Contains(r.stderr, "ALTER ROLE") {
		t.Fatalf("search_path in the DSN through a pooler: %s\nwant exit 1 pointing to ALTER ROLE … SET search_path", r)
	}
}

// TestWaitThroughPoolerWithNotifyDSN: a waiter whose --dsn goes through the
// transaction pooler is woken by the release when --notify-dsn is direct;
// without it, it warns that wake-ups are not live and waits on.
func TestWaitThroughPoolerWithNotifyDSN(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 4})
	d := db{t: t, dsn: p.DSN}
	direct := testdb.Pool(t, p.DirectDSN)
	waiting := func() bool {
		var n int
		err := direct.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter`).Scan(&n)
		return err == nil && n > 0
	}

	holder := d.json(0, "acquire", "k", "--owner", "holder", "--ttl", "1m")
	got := make(chan result, 1)
	go func() {
		got <- run(t, "acquire", "k", "--owner", "waiter", "--wait", "30s", "--json", "--dsn", p.DSN, "--notify-dsn", p.DirectDSN)
	}()
	testdb.Eventually(t, 20*time.Second, "the waiter registers", waiting)
	d.expect(0, "release", "k", "--owner", "holder", "--token", tokenArg(holder.Token))
	r := <-got
	if r.code != 0 || strings.Contains(r.stderr, "not live") {
		t.Fatalf("waiter with a direct --notify-dsn: %s\nwant it granted, with no warning", r)
	}

	// Without --notify-dsn it LISTENs through the pooler, hears nothing,
	// and says so (the holder keeps the key; the wait runs out). The wait
	// is three times the Notifier's 5s probe timeout, so a loaded machine
	// still sees the warning before the wait ends.
	d.json(0, "acquire", "k2", "--owner", "holder", "--ttl", "1m")
	r = run(t, "acquire", "k2", "--owner", "waiter", "--wait", "15s", "--dsn", p.DSN)
	if r.code != 3 || strings.Count(r.stderr, "not live") != 1 || !strings.Contains(r.stderr, "--notify-dsn") {
		t.Fatalf("waiter listening through the pooler: %s\nwant exit 3 and one warning naming --notify-dsn", r)
	}
}

// TestNamespacesThroughOnePooler follows docs/pooling.md: each namespace is
// a role whose search_path names its schema (the pooler refuses one in the
// DSN). Migrated through the pooler, the two keep their locks apart.
func TestNamespacesThroughOnePooler(t *testing.T) {
	spaces := testdb.PooledNamespaces(t, pgtemp.BouncerOptions{PoolSize: 2}, 2, false)
	for _, ns := range spaces {
		if r := run(t, "migrate", "--dsn", ns.DSN); r.code != 0 {
			t.Fatalf("migrate %s through the pooler: %s", ns.Role, r)
		}
	}
	for _, ns := range spaces {
		d := db{t: t, dsn: ns.DSN}
		if got := d.json(0, "acquire", "shared-name", "--owner", ns.Role); got.Outcome != "acquired" {
			t.Fatalf("acquire in %s: %+v, want acquired (the other namespace's lock is not this one's)", ns.Role, got)
		}
	}
	for _, ns := range spaces {
		r := run(t, "ls", "--json", "--dsn", ns.DSN)
		if r.code != 0 || strings.Count(r.stdout, `"key"`) != 1 || !strings.Contains(r.stdout, ns.Role) {
			t.Fatalf("ls in %s: %s\nwant its own lock only", ns.Role, r)
		}
	}
}

// TestRunThroughPooler: `lockctl run` waits for a held key through the
// pooler, is woken by the release through a direct --notify-dsn, keeps its
// short lease renewed through the pooler while the command runs, and
// releases it after.
func TestRunThroughPooler(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 2})
	d := db{t: t, dsn: p.DSN}
	direct := testdb.Pool(t, p.DirectDSN)
	holder := d.json(0, "acquire", "job", "--owner", "holder", "--ttl", "1m")
	got := make(chan result, 1)
	go func() {
		// The command outlives several 600ms leases: renewals must pass.
		got <- run(t, "run", "job", "--owner", "runner", "--ttl", "600ms", "--wait", "30s",
			"--dsn", p.DSN, "--notify-dsn", p.DirectDSN, "--", "sh", "-c", `sleep 2; echo "token=$LOCKCTL_TOKEN"`)
	}()
	testdb.Eventually(t, 20*time.Second, "run registers as a waiter", func() bool {
		var n int
		err := direct.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter WHERE owner_id = 'runner'`).Scan(&n)
		return err == nil && n > 0
	})
	d.expect(0, "release", "job", "--owner", "holder", "--token", tokenArg(holder.Token))
	r := <-got
	if r.code != 0 || !strings.Contains(r.stdout, "token=") || strings.Contains(r.stderr, "not live") {
		t.Fatalf("run through the pooler: %s\nwant the command's output, exit 0, no warning", r)
	}
	if next := d.json(0, "acquire", "job", "--owner", "next"); next.Outcome != "acquired" {
		t.Fatalf("acquire after run = %+v; want acquired (run released the key)", next)
	}
}
