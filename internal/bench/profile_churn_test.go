package bench

// Does a key's cycle get slower the more often it is cycled, and are the
// locker's updates HOT (heap-only, no index insert)? Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestKeyChurn -v ./internal/bench/

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

const churnStatsSQL = `
SELECT n_tup_upd, n_tup_hot_upd, n_dead_tup, coalesce(last_autovacuum::text, '-')
FROM pg_stat_user_tables WHERE relname = 'distributed_lock' AND schemaname = current_schema()`

func TestKeyChurn(t *testing.T) {
	profiling(t, "count HOT updates under key churn")
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close(ctx)
	conn, err := tg.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	lk, _ := locker.New(locker.Config{TTL: 30 * time.Second})
	ref := reference{pool: tg.pool, ttl: 30 * time.Second}
	for block := range 12 {
		start := time.Now()
		var worst time.Duration
		for range 500 {
			s := time.Now()
			lease, err := lk.TryAcquire(ctx, conn, "churn", "o")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lk.Release(ctx, conn, lease); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, time.Since(s))
		}
		lockerMean := time.Since(start) / 500
		start = time.Now()
		for range 500 {
			if _, err := ref.tryAcquire(ctx, "churn", "o"); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.release(ctx, "churn", "o"); err != nil {
				t.Fatal(err)
			}
		}
		refMean := time.Since(start) / 500
		var upd, hot, dead int64
		var av string
		_ = conn.QueryRow(ctx, churnStatsSQL).Scan(&upd, &hot, &dead, &av)
		t.Logf("after %5d cycles: locker mean %s (worst %s), reference mean %s; updates %d (HOT %d), dead %d, autovacuum %s",
			(block+1)*500, lockerMean, worst, refMean, upd, hot, dead, av)
	}
}
