package deployment_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
)

// TestThroughTransactionPooler runs the lock operations, 10,000 contended
// acquire/release cycles from 8 workers, and the concurrency checker's
// workload through PgBouncer in transaction mode, in the query exec modes
// docs/pooling.md recommends for it. The pooler has fewer server
// connections than the pool has clients, so clients share them between
// transactions. Waiters LISTEN on a direct connection: LISTEN through a
// transaction pooler hears nothing.
func TestThroughTransactionPooler(t *testing.T) {
	for _, mode := range []string{"exec", "simple_protocol", "cache_describe"} {
		t.Run(mode, func(t *testing.T) {
			p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 4})
			pool := poolInMode(t, p.DSN, mode)
			direct, err := pgx.ParseConfig(p.DirectDSN)
			if err != nil {
				t.Fatal(err)
			}
			exerciseOperations(t, pool, direct)

			cycles := 2000
			if mode == "exec" { // the mode the CLI picks behind a pooler
				cycles = 10000
			}
			lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
			var done, granted atomic.Int64
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []error
			for w := range 8 {
				wg.Go(func() {
					owner := fmt.Sprintf("w%d", w)
					for i := 0; done.Add(1) <= int64(cycles); i++ {
						key := fmt.Sprintf("cycle-%d", (w+i)%4)
						lease, err := testdb.Try(context.Background(), lk, pool, key, owner)
						if err == nil {
							granted.Add(1)
							_, err = testdb.One(lk.Release(context.Background(), pool, lease))
						}
						if err != nil && !errors.Is(err, locker.ErrHeld) {
							mu.Lock()
							failures = append(failures, err)
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			if len(failures) > 0 || granted.Load() == 0 {
				t.Fatalf("%d cycles: %d granted, %d errors, first: %v", cycles, granted.Load(), len(failures), errors.Join(failures[:min(len(failures), 3)]...))
			}

			// The checker reads the whole event log: a namespace of its own.
			p = testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 4})
			if direct, err = pgx.ParseConfig(p.DirectDSN); err != nil {
				t.Fatal(err)
			}
			res := workload.Workload{
				Workers: 8, HotKeys: 2, ColdKeys: 16, Duration: 2 * time.Second, TTL: 200 * time.Millisecond,
				Operator: true, HoldWrites: 2, Listen: direct, MinGrants: 20,
			}.Run(t, poolInMode(t, p.DSN, mode))
			res.Report.LogViolations(t)
			if !res.Report.OK() || res.Report.Stats.Grants < 20 {
				t.Fatalf("checker through the pooler: %s; %d violations", res.Report.Stats, len(res.Report.Violations))
			}
		})
	}
}
