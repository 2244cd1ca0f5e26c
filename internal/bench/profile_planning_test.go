package bench

// Are the locker's statements planned on every execution? pgx prepares
// them once per connection, but PostgreSQL may still choose a custom plan
// (planned anew with the parameters) for each execution. Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestPlanning -v ./internal/bench/

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
)

const planningStatsSQL = `
SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 60), calls, plans, mean_plan_time, mean_exec_time,
       wal_bytes::float8 / calls
FROM pg_stat_statements WHERE calls >= 1000 ORDER BY calls DESC, query`

func TestPlanning(t *testing.T) {
	profiling(t, "read executor time and plans from pg_stat_statements")
	ctx := context.Background()
	tg, conn := profileServer(t, pgtemp.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_planning": "on",
		"synchronous_commit": "off"}}, 2)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
	lk, _ := locker.New(locker.Config{TTL: 30 * time.Second})
	ref := reference{pool: tg.pool, ttl: 30 * time.Second}
	for i := range 2000 {
		key := []string{"a", "b", "c", "d"}[i%4]
		lease, err := lk.TryAcquire(ctx, tg.pool, key, "o")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lk.Release(ctx, tg.pool, lease); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.tryAcquire(ctx, key, "o"); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.release(ctx, key, "o"); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, planningStatsSQL)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var calls, plans int64
		var plan, exec, wal float64
		if err := rows.Scan(&q, &calls, &plans, &plan, &exec, &wal); err != nil {
			t.Fatal(err)
		}
		t.Logf("%5d calls %5d plans  plan %.3f ms  exec %.3f ms  WAL %5.0f B  %s", calls, plans, plan, exec, wal, q)
	}
}
