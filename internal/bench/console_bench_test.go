package bench

// What the console costs at 1k, 10k and 100k locks: one poll (the store
// query the console runs every second), one frame (View at 120x35 after the
// poll's result arrived) and the process's memory. Run:
//
//	go test -run '^$' -bench Console -benchtime 50x ./internal/bench/
//
// TestConsolePollPlan checks, with EXPLAIN ANALYZE, that the poll reads its
// window through an index and never sorts the table.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// consoleRowsSQL fills distributed_lock with $1 rows in one statement: a
// third held (10 minutes left), a third expired a minute ago, a third free,
// with owners shared by many rows and acquisition times spread over 10
// minutes.
const consoleRowsSQL = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT 'job:' || lpad(i::text, 7, '0'),
       'worker-' || (i % 97) || ':' || (1000 + i % 13),
       nextval('distributed_lock_fence_seq'),
       clock_timestamp() + CASE i % 3 WHEN 0 THEN interval '10 minutes' ELSE interval '-1 minute' END,
       interval '30 seconds',
       clock_timestamp() - (i % 600) * interval '1 second',
       CASE WHEN i % 3 = 2 THEN clock_timestamp() - interval '30 seconds' END
FROM generate_series(1, $1::int) AS i`

// consoleEventsSQL gives the history a grant per lock over the last hour,
// so the rate query has an index to use rather than an empty table.
const consoleEventsSQL = `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
SELECT clock_timestamp() - (i % 3600) * interval '1 second', 'job:' || lpad(i::text, 7, '0'),
       'acquired', 'worker-' || (i % 97), i, 'bench'
FROM generate_series(1, $1::int) AS i`

const consoleAnalyzeSQL = `ANALYZE distributed_lock, distributed_lock_event`

func consoleDB(tb testing.TB, rows int, tracer pgx.QueryTracer) *pgxpool.Pool {
	tb.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.DSN(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	for _, q := range []string{consoleRowsSQL, consoleEventsSQL} {
		if _, err := pool.Exec(ctx, q, rows); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, consoleAnalyzeSQL); err != nil {
		tb.Fatal(err)
	}
	return pool
}

// consoleWindow is the window the console asks for at 120x35 (about 25
// visible rows, two screens either side).
func consoleWindow() lockview.ListQuery {
	return lockview.ListQuery{Sort: lockview.SortKey, Before: 50, After: 51}
}

var consoleSizes = []int{1_000, 10_000, 100_000}

func BenchmarkConsolePoll(b *testing.B) {
	for _, n := range consoleSizes {
		b.Run(rowsName(n), func(b *testing.B) {
			pool := consoleDB(b, n, nil)
			ctx := context.Background()
			for _, sort := range []lockview.Sort{lockview.SortKey, lockview.SortTTL} {
				b.Run(string(sort), func(b *testing.B) {
					q := consoleWindow()
					q.Sort = sort
					for b.Loop() {
						page, err := lockview.ListLocks(ctx, pool, q)
						if err != nil || len(page.Rows) == 0 {
							b.Fatalf("poll: %d rows, %v", len(page.Rows), err)
						}
					}
				})
			}
		})
	}
}

// polledModel is the console after its first poll at 120x35: New, the
// window size, then the result of the poll command Init sends, run for real.
func polledModel(tb testing.TB, pool *pgxpool.Pool) tea.Model {
	tb.Helper()
	lk, err := locker.New(locker.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	var m tea.Model = tui.New(tui.Options{Pool: pool, Locker: lk, Server: "bench", ReadOnly: true})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 120, Height: 35})
	msg := runUntil(tb, m.Init(), "tui.pageLoadedMsg")
	m, _ = m.Update(msg)
	return m
}

// runUntil runs cmd (and the commands of a batch) and returns the first
// message whose type is named want; the other commands (timers) are left
// to finish on their own.
func runUntil(tb testing.TB, cmd tea.Cmd, want string) tea.Msg {
	tb.Helper()
	found := make(chan tea.Msg, 16)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		msg := c()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				go run(c)
			}
			return
		}
		if fmt.Sprintf("%T", msg) == want {
			found <- msg
		}
	}
	go run(cmd)
	select {
	case msg := <-found:
		return msg
	case <-time.After(10 * time.Second):
		tb.Fatalf("no %s within 10s", want)
		return nil
	}
}

func BenchmarkConsoleFrame(b *testing.B) {
	for _, n := range consoleSizes {
		b.Run(rowsName(n), func(b *testing.B) {
			m := polledModel(b, consoleDB(b, n, nil))
			if v := m.View(); !strings.Contains(v.Content, "job:") {
				b.Fatalf("the frame shows no locks:\n%s", v.Content)
			}
			for b.Loop() {
				_ = m.View()
			}
			b.ReportMetric(float64(residentBytes())/(1<<20), "RSS-MB")
		})
	}
}

// residentBytes is this process's resident set size (VmRSS).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func rowsName(n int) string { return fmt.Sprintf("rows=%dk", n/1000) }

// TestConsoleCost measures one poll, one frame and memory at each size and
// logs them (go test -v -run TestConsoleCost); it asserts only that each
// step worked, not how fast.
func TestConsoleCost(t *testing.T) {
	profiling(t, "measure the console at 1k, 10k and 100k locks")
	ctx := context.Background()
	for _, n := range consoleSizes {
		pool := consoleDB(t, n, nil)
		polls := timeIt(20, func() {
			if _, err := lockview.ListLocks(ctx, pool, consoleWindow()); err != nil {
				t.Fatal(err)
			}
		})
		// The console polls around its selection; by key through the
		// primary key, the other orders with a pass per side (lockview.Sort)
		// on the first poll, then, handed the last page's span as the
		// console does, with one pass while the window stays inside it.
		for _, sort := range lockview.Sorts {
			q := consoleWindow()
			q.Sort, q.Anchor = sort, fmt.Sprintf("job:%07d", n/2)
			var last lockview.Page
			poll := func(q lockview.ListQuery) {
				var err error
				if last, err = lockview.ListLocks(ctx, pool, q); err != nil || last.Anchor < 0 {
					t.Fatalf("sort %s: anchor %d, %v", sort, last.Anchor, err)
				}
			}
			first := timeIt(20, func() { poll(q) })
			next := timeIt(20, func() { q.Near = last.Span; poll(q) })
			t.Logf("%7d rows: poll by %-7s first median %6.2f ms (max %6.2f), next median %6.2f ms (max %6.2f)",
				n, sort, msf(first.median), msf(first.max), msf(next.median), msf(next.max))
		}
		m := polledModel(t, pool)
		frames := timeIt(50, func() { _ = m.View() })
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%7d rows: poll median %6.2f ms (max %6.2f), frame median %5.2f ms (max %5.2f), RSS %3d MB, Go heap %3d MB",
			n, msf(polls.median), msf(polls.max), msf(frames.median), msf(frames.max),
			residentBytes()>>20, ms.HeapInuse>>20)
		if v := m.View(); !strings.Contains(v.Content, "job:") {
			t.Fatalf("the frame shows no locks:\n%s", v.Content)
		}
	}
}

type timing struct{ median, max time.Duration }

func timeIt(n int, f func()) timing {
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		f()
		d[i] = time.Since(start)
	}
	return timing{median: median(d), max: maxOf(d)}
}

func maxOf(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
