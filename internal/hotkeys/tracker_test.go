package hotkeys_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/testdb"
)

func dbNow(t *testing.T, db *pgxpool.Pool) time.Time {
	t.Helper()
	var now time.Time
	if err := db.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

func refresh(t *testing.T, tr *hotkeys.Tracker, db *pgxpool.Pool) {
	t.Helper()
	if err := tr.Refresh(context.Background(), db, time.Second); err != nil {
		t.Fatal(err)
	}
}

func keysOf(r hotkeys.Ranking) []string {
	var keys []string
	for _, row := range r.Rows {
		keys = append(keys, row.Key)
	}
	return keys
}

// The hot keys of a window are the keys whose waits, steals, hand-offs and
// force actions happened in it, ranked by the column asked; routine grants
// and releases make no key hot; each column's series puts each event in
// its bucket.
func TestRank(t *testing.T) {
	pool := testdb.New(t)
	const s = time.Second
	testdb.LogEvent(t, pool, 50*time.Minute, "old:hot", "stolen", 1, `{"waited_ms": 600000}`) // in the hour only
	testdb.LogEvent(t, pool, 10*time.Minute, "queue:a", "acquired", 2, `{"waited_ms": 4000}`) // in 15m and the hour
	testdb.LogEvent(t, pool, 30*s, "queue:a", "acquired", 3, `{"waited_ms": 2000}`)
	testdb.LogEvent(t, pool, 25*s, "queue:a", "gave_up", 0, `{"waited_ms": 3000}`)
	testdb.LogEvent(t, pool, 20*s, "steal:b", "stolen", 4, `{}`)
	testdb.LogEvent(t, pool, 19*s, "steal:b", "stolen", 5, `{}`)
	testdb.LogEvent(t, pool, 15*s, "forced:c", "acquired", 6, `{}`)
	testdb.LogEvent(t, pool, 12*s, "forced:c", "force_released", 6, `{}`)
	testdb.LogEvent(t, pool, 10*s, "quiet:d", "acquired", 7, `{}`) // routine: not hot
	testdb.LogEvent(t, pool, 9*s, "quiet:d", "released", 7, `{}`)

	tr := hotkeys.NewTracker()
	refresh(t, tr, pool)
	now := dbNow(t, pool)

	minute := tr.Rank(now, time.Minute, hotkeys.ByWaitTime, 10)
	if got := keysOf(minute); !slices.Equal(got, []string{"queue:a", "forced:c", "steal:b"}) {
		t.Fatalf("the last minute by total wait: %q; want queue:a, then the others by key", got)
	}
	q := minute.Rows[0]
	if q.WaitTime != 5*s || q.Waits != 2 || q.Handoffs != 1 || q.Steals != 0 || q.Forces != 0 {
		t.Errorf("queue:a in the last minute: %+v; want 5s waited by 2 waits, one handed off", q.Counts)
	}
	if minute.Keys != 3 || minute.Total.Steals != 2 || minute.Total.Forces != 1 || minute.Bucket != 6*s {
		t.Errorf("the minute: %d keys, total %+v, bucket %s; want 3 keys, 2 steals, 1 force, 6s", minute.Keys, minute.Total, minute.Bucket)
	}
	// 30s and 25s ago: the 5th to 7th of ten 6-second buckets, by how the
	// slices fall.
	series := q.Series[hotkeys.ByWaitTime]
	if len(series) != 10 || series[4]+series[5]+series[6] != 5000 || sum(series) != 5000 {
		t.Errorf("queue:a's wait series %v; want 10 points, its 5s in the middle (30s and 25s ago)", series)
	}

	if got := keysOf(tr.Rank(now, time.Minute, hotkeys.BySteals, 10)); !slices.Equal(got, []string{"steal:b", "queue:a", "forced:c"}) {
		t.Errorf("by steals: %q; want steal:b first, then by total wait", got)
	}
	if got := keysOf(tr.Rank(now, time.Minute, hotkeys.ByForces, 1)); !slices.Equal(got, []string{"forced:c"}) {
		t.Errorf("by forces, the first: %q; want forced:c", got)
	}
	quarter := tr.Rank(now, 15*time.Minute, hotkeys.ByWaitTime, 10)
	if quarter.Rows[0].Key != "queue:a" || quarter.Rows[0].WaitTime != 9*s || len(quarter.Rows[0].Series[0]) != 10 ||
		quarter.Bucket != 90*s {
		t.Errorf("15m: %+v in buckets of %s; want queue:a first with 9s waited, 10 points of 90s", quarter.Rows[0], quarter.Bucket)
	}
	hour := tr.Rank(now, time.Hour, hotkeys.ByWaitTime, 10)
	if hour.Rows[0].Key != "old:hot" || hour.Rows[0].WaitTime != 10*time.Minute || len(hour.Rows[0].Series[0]) != 10 {
		t.Errorf("the hour: %+v; want old:hot first with its 10m wait, 10 points", hour.Rows[0])
	}
	if !hour.Progress.CaughtUp {
		t.Errorf("progress %+v; want caught up", hour.Progress)
	}

	// A refresh reads only what was logged since: a new steal counts once.
	testdb.LogEvent(t, pool, 3*s, "steal:b", "stolen", 8, `{}`)
	refresh(t, tr, pool)
	refresh(t, tr, pool)
	if b := tr.Rank(dbNow(t, pool), time.Minute, hotkeys.BySteals, 1).Rows[0]; b.Key != "steal:b" || b.Steals != 3 {
		t.Errorf("after a new steal: %+v; want steal:b with 3", b)
	}
}

// A key's times are the waits (a grant at the first try as 0) and the
// measured holds that ended in the window, their median and 99th
// percentile, and each bucket's.
func TestKeyTimes(t *testing.T) {
	pool := testdb.New(t)
	const s = time.Second
	for i := range 100 {
		token := int64(100 + i)
		testdb.LogEvent(t, pool, time.Duration(200-i)*s, "k", "acquired", token, fmt.Sprintf(`{"waited_ms": %d}`, (i+1)*10))
		testdb.LogEvent(t, pool, time.Duration(199-i)*s-time.Duration(i)*time.Millisecond, "k", "released", token, `{}`) // held 1s + i ms
	}
	testdb.LogEvent(t, pool, 20*s, "k", "gave_up", 0, `{"waited_ms": 5000}`)
	testdb.LogEvent(t, pool, 10*s, "k", "force_expired", 99, `{}`) // its grant not logged: no hold
	tr := hotkeys.NewTracker()
	refresh(t, tr, pool)
	times := tr.KeyTimes(dbNow(t, pool), 15*time.Minute, "k")
	if times.Waits != 101 || times.WaitP50 != 510*time.Millisecond || times.WaitP99 != 1000*time.Millisecond {
		t.Errorf("waits: %d, p50 %s, p99 %s; want 101, 510ms, 1s", times.Waits, times.WaitP50, times.WaitP99)
	}
	near := func(d, want time.Duration) bool { return d >= want && d < want+20*time.Millisecond }
	if times.Holds != 100 || !near(times.HoldP50, 1049*time.Millisecond) || !near(times.HoldP99, 1098*time.Millisecond) {
		t.Errorf("holds: %d, p50 %s, p99 %s; want 100, about 1.049s and 1.098s", times.Holds, times.HoldP50, times.HoldP99)
	}
	if len(times.WaitSeries) != 10 || times.WaitSeries[9] != 5*s {
		t.Errorf("wait series %v; want 10 points, the last the 5s given up", times.WaitSeries)
	}
	if none := tr.KeyTimes(dbNow(t, pool), time.Minute, "never"); none.Waits != 0 || none.Holds != 0 || len(none.WaitSeries) != 10 {
		t.Errorf("a key without events: %+v", none)
	}
}

// The first refresh reads the hour a budget at a time, saying how far it
// got; later ones catch up.
func TestFirstLoadInBatches(t *testing.T) {
	pool := testdb.New(t)
	if _, err := pool.Exec(context.Background(), `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
SELECT clock_timestamp() - interval '50 minutes' + i * interval '1 millisecond', 'k' || (i % 100), 'stolen', 'o', i, 'a', '{}'
FROM generate_series(1, 50000) i`); err != nil {
		t.Fatal(err)
	}
	tr := hotkeys.NewTracker()
	if err := tr.Refresh(context.Background(), pool, 0); err != nil {
		t.Fatal(err)
	}
	p := tr.Rank(dbNow(t, pool), time.Hour, hotkeys.BySteals, 1).Progress
	if p.CaughtUp || p.Of != 50000 || p.Read <= 0 || p.Read >= 50000 {
		t.Fatalf("after one batch: %+v; want part of the 50000 read", p)
	}
	for range 5 {
		refresh(t, tr, pool)
	}
	r := tr.Rank(dbNow(t, pool), time.Hour, hotkeys.BySteals, 1)
	if !r.Progress.CaughtUp || r.Total.Steals != 50000 || r.Keys != 100 {
		t.Errorf("caught up: %+v, %d steals on %d keys; want all 50000 on 100", r.Progress, r.Total.Steals, r.Keys)
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
