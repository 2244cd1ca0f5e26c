package cli_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

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
