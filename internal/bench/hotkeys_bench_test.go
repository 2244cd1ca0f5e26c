package bench

// What the console's hot keys page and the detail pane's wait and hold
// percentiles cost with a million events in the last hour (10,000 keys,
// half a million leases: each a grant, a tenth of them steals, half after
// a wait in the queue, and its end, a fiftieth of them forced): the first
// load (the hour read into the console's hotkeys.Tracker), a refresh that
// reads a second's new events, a ranking and one key's times from memory,
// and a whole refresh of the page as the console runs it; beside them,
// the same ranking as one SQL aggregation over the hour, what every
// refresh would cost without the tracker. Run:
//
//	go test -run '^$' -bench HotKeys -benchtime 5x -timeout 30m ./internal/bench/

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/testdb"
)

// hotKeysEventsSQL logs $1 leases over the hour before the database's now,
// in time order (so event ids follow time, as they do): a grant and, up
// to two seconds later, its end.
const hotKeysEventsSQL = `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
SELECT at, key, kind, 'worker-' || (i % 97), i, 'bench', detail FROM (
    SELECT i, 'orders:' || (i % 10000) AS key,
           clock_timestamp() - interval '1 hour' + i * (interval '1 hour' / ($1 + 1)) AS at,
           CASE WHEN i % 10 = 0 THEN 'stolen' ELSE 'acquired' END AS kind,
           CASE WHEN i % 2 = 0 THEN jsonb_build_object('waited_ms', (i * 7) % 5000, 'waiter_id', i) ELSE '{}' END AS detail
    FROM generate_series(1, $1::int) i
    UNION ALL
    SELECT i, 'orders:' || (i % 10000),
           clock_timestamp() - interval '1 hour' + i * (interval '1 hour' / ($1 + 1)) + (i % 2000) * interval '1 millisecond',
           CASE WHEN i % 50 = 0 THEN 'force_released' ELSE 'released' END, '{}'
    FROM generate_series(1, $1::int) i) e
ORDER BY at`

// hotKeysSQL is the page's ranking by total wait in one statement: the
// hour's events through the BRIN index, counted by key.
const hotKeysSQL = `
SELECT e.lock_key,
       sum(CASE WHEN e.kind IN ('acquired', 'stolen', 'gave_up') THEN coalesce((e.detail ->> 'waited_ms')::bigint, 0) END) AS wait_ms,
       count(*) FILTER (WHERE e.kind = 'gave_up' OR e.detail ? 'waited_ms') AS waits,
       count(*) FILTER (WHERE e.kind = 'stolen') AS steals,
       count(*) FILTER (WHERE e.kind IN ('acquired', 'stolen') AND e.detail ? 'waited_ms') AS handoffs,
       count(*) FILTER (WHERE e.kind IN ('force_expired', 'force_released')) AS forces
FROM distributed_lock_event e
WHERE e.occurred_at > clock_timestamp() - interval '1 hour'
GROUP BY e.lock_key ORDER BY wait_ms DESC NULLS LAST LIMIT 100`

const hotKeysLeases = 500_000

func hotKeysDB(b *testing.B) *pgxpool.Pool {
	b.Helper()
	pool := testdb.Pool(b, testdb.DSN(b))
	ctx := context.Background()
	for _, q := range []string{hotKeysEventsSQL, `ANALYZE distributed_lock_event`} {
		var args []any
		if q == hotKeysEventsSQL {
			args = []any{hotKeysLeases}
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	return pool
}

// loaded is a Tracker that has read the hour.
func loaded(b *testing.B, pool *pgxpool.Pool) *hotkeys.Tracker {
	b.Helper()
	tr := hotkeys.NewTracker()
	if err := tr.Refresh(context.Background(), pool, time.Hour); err != nil {
		b.Fatal(err)
	}
	return tr
}

func dbClock(b *testing.B, pool *pgxpool.Pool) time.Time {
	b.Helper()
	var now time.Time
	if err := pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		b.Fatal(err)
	}
	return now
}

func BenchmarkHotKeys(b *testing.B) {
	pool := hotKeysDB(b)
	ctx := context.Background()
	// The rankings are of the windows that end where the log does: the
	// first loads take minutes, after which the last minute would be
	// empty.
	now := dbClock(b, pool)
	b.Run("first-load", func(b *testing.B) {
		for b.Loop() {
			r := loaded(b, pool).Rank(dbClock(b, pool), time.Hour, hotkeys.ByWaitTime, 100)
			if !r.Progress.CaughtUp || r.Progress.Of < 2*hotKeysLeases*95/100 {
				b.Fatalf("after the first load: %+v", r.Progress)
			}
		}
	})
	tr := loaded(b, pool)
	for _, w := range hotkeys.Windows {
		b.Run("rank/"+w.String(), func(b *testing.B) {
			for b.Loop() {
				if r := tr.Rank(now, w, hotkeys.ByWaitTime, 100); len(r.Rows) == 0 {
					b.Fatal("no hot keys")
				}
			}
		})
	}
	hottest := tr.Rank(now, time.Hour, hotkeys.ByWaitTime, 1).Rows[0].Key
	b.Run("key-times/1h", func(b *testing.B) {
		for b.Loop() {
			if t := tr.KeyTimes(now, time.Hour, hottest); t.Waits == 0 || t.Holds == 0 {
				b.Fatalf("%s: %+v", hottest, t)
			}
		}
	})
	// A refresh of the page while nothing new was logged, then after a
	// second's worth (280 events; the hour holds a million).
	page := func(b *testing.B) {
		if err := tr.Refresh(ctx, pool, time.Second); err != nil {
			b.Fatal(err)
		}
		now := dbClock(b, pool)
		tr.Rank(now, time.Hour, hotkeys.ByWaitTime, 100)
		tr.KeyTimes(now, time.Hour, hottest)
	}
	b.Run("page-refresh/idle", func(b *testing.B) {
		for b.Loop() {
			page(b)
		}
	})
	b.Run("page-refresh/a-second-new", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
SELECT clock_timestamp() - interval '3 seconds', 'orders:' || (i % 10000), 'acquired', 'w', i, 'bench', '{"waited_ms": 12}'
FROM generate_series(1, 280) i`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			page(b)
		}
	})
	b.Run("one-sql-aggregation/1h", func(b *testing.B) {
		for b.Loop() {
			rows, err := pool.Query(ctx, hotKeysSQL)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if rows.Close(); rows.Err() != nil || n == 0 {
				b.Fatalf("%d rows, %v", n, rows.Err())
			}
		}
	})
}
