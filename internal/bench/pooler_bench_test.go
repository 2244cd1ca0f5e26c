package bench

// Lock cycles through PgBouncer in transaction mode next to the same cycles
// straight to PostgreSQL, for docs/pooling.md and BENCHMARKS.md: what the
// pooler costs, and what the query exec mode it needs costs. Compare the
// sub-benchmarks' ns/op as ratios. Run:
//
//	go test -run NONE -bench ThroughPooler -benchtime 5s ./internal/bench/

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// poolerWorkers is the concurrency: as many clients as the pooler has
// server connections, so the pooler's cost shows, not its queueing.
const poolerWorkers = 8

func BenchmarkThroughPooler(b *testing.B) {
	p := testdb.Bouncer(b, pgtemp.BouncerOptions{PoolSize: poolerWorkers})
	for _, c := range []struct {
		name string
		dsn  string
		mode pgx.QueryExecMode
	}{
		{"direct/cache_statement", p.DirectDSN, pgx.QueryExecModeCacheStatement},
		{"direct/cache_describe", p.DirectDSN, pgx.QueryExecModeCacheDescribe},
		{"direct/exec", p.DirectDSN, pgx.QueryExecModeExec},
		{"direct/simple_protocol", p.DirectDSN, pgx.QueryExecModeSimpleProtocol},
		{"pgbouncer/cache_describe", p.DSN, pgx.QueryExecModeCacheDescribe},
		{"pgbouncer/exec", p.DSN, pgx.QueryExecModeExec},
		{"pgbouncer/simple_protocol", p.DSN, pgx.QueryExecModeSimpleProtocol},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(c.dsn)
			if err != nil {
				b.Fatal(err)
			}
			cfg.ConnConfig.DefaultQueryExecMode = c.mode
			cfg.MaxConns = poolerWorkers
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			lk, err := locker.New(locker.Config{TTL: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			var worker atomic.Int64
			b.SetParallelism((poolerWorkers + 1) / 2) // × GOMAXPROCS goroutines; 8 on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := worker.Add(1)
				owner, key := fmt.Sprint("bench-", id), fmt.Sprintf("%s-%d", c.name, id)
				for pb.Next() {
					lease, err := testdb.Try(context.Background(), lk, pool, key, owner)
					if err == nil {
						_, err = testdb.One(lk.Release(context.Background(), pool, lease))
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkWakeThroughPooler measures how soon a waiter whose statements go
// through PgBouncer (transaction mode, exec) gets the key after the holder's
// release returns, when its Notifier LISTENs directly (--notify-dsn) and
// when it LISTENs through the pooler (and so wakes only at its recheck,
// WaitRecheck 1s here). Reported as p50 and p99 per hand-off.
func BenchmarkWakeThroughPooler(b *testing.B) {
	p := testdb.Bouncer(b, pgtemp.BouncerOptions{PoolSize: 4})
	cfg, err := pgxpool.ParseConfig(p.DSN)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	direct, err := pgx.ParseConfig(p.DirectDSN)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		listen *pgx.ConnConfig
	}{{"listen-direct", direct}, {"listen-through-pooler", cfg.ConnConfig}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(c.listen), Probe: pool,
				ProbeTimeout: time.Second, Logf: func(string, ...any) {}})
			go func() { _ = n.Run(ctx) }()
			holder, err := locker.New(locker.Config{TTL: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			waiter, err := locker.New(locker.Config{TTL: 30 * time.Second, Notifier: n, WaitRecheck: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			var waits []time.Duration
			run := wakeRuns.Add(1) // the benchmark runs more than once; keys must be new
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Sprintf("%s-%d-%d", c.name, run, i)
				held, err := testdb.Try(ctx, holder, pool, key, "holder")
				if err != nil {
					b.Fatal(err)
				}
				got := make(chan error, 1)
				go func() {
					_, err := testdb.Wait(ctx, waiter, pool, key, "waiter")
					got <- err
				}()
				waitForWaiterRow(b, pool, key)
				if _, err := testdb.One(holder.Release(ctx, pool, held)); err != nil {
					b.Fatal(err)
				}
				released := time.Now()
				if err := <-got; err != nil {
					b.Fatal(err)
				}
				waits = append(waits, time.Since(released))
			}
			b.StopTimer()
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

var wakeRuns atomic.Int64

// waitForWaiterRow returns once key has a waiter record: the waiter is
// registered and subscribed.
func waitForWaiterRow(b *testing.B, pool *pgxpool.Pool, key string) {
	testdb.Eventually(b, 10*time.Second, "a waiter on "+key, func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = $1`, key).Scan(&n)
		return err == nil && n > 0
	})
}

// The bench refuses a DSN through a pooler before creating anything, and
// says why, rather than failing on the pooler's refusal of search_path.
func TestBenchRefusesAPooler(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{})
	_, err := Run(context.Background(), p.DSN, Options{Workers: []int{1}, Duration: 10 * time.Millisecond, Rounds: 1, KeepaliveLocks: -1})
	if !errors.Is(err, errBehindPooler) {
		t.Fatalf("bench through PgBouncer = %v, want errBehindPooler", err)
	}
}
