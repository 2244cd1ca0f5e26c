package bench

// What the console costs at 1k, 10k, 100k and 1M locks: one poll (the store
// query the console runs every second), one frame (View at 120x35 after the
// poll's result arrived) and the process's memory. Run:
//
//	go test -run '^$' -bench Console -benchtime 50x ./internal/bench/
//
// TestConsolePollPlan checks, with EXPLAIN ANALYZE, that the poll reads its
// window through an index and never sorts the table.

import (
	"context"
	"encoding/json"
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

var consoleSizes = []int{1_000, 10_000, 100_000, 1_000_000}

// BenchmarkConsolePoll polls around a selection in the middle of the table,
// as the console does, in every order: "first" is a poll without a hint
// (it counts the table), "next" one handed the last page's span and counts,
// as the polls between two counts are (the counts' own cost is first's
// count-ms), and so the ordering read of TTL, token and held for; "kept"
// one handed its order too, as the polls between two ordering reads are
// (zero in the other orders: the same poll as next). Each reports
// server-ms, what the server spent on one such poll (the sum of its
// statements' execution times, explained as sent).
func BenchmarkConsolePoll(b *testing.B) {
	for _, n := range consoleSizes {
		b.Run(rowsName(n), func(b *testing.B) {
			log := &statementLog{}
			pollEveryOrder(b, consoleDB(b, n, log), log, n)
		})
	}
}

// BenchmarkConsoleSortIndexes is BenchmarkConsolePoll at a million locks,
// in one run without and then with the sort indexes an operator may add
// (docs/operations.md, "Large tables"), beside the floor: the cheapest
// passes over the table there are, which bound any poll that reads every
// row without an index. Run:
//
//	go test -run '^$' -bench ConsoleSortIndexes -benchtime 5x -timeout 30m ./internal/bench/
func BenchmarkConsoleSortIndexes(b *testing.B) {
	const n = 1_000_000
	log := &statementLog{}
	pool := consoleDB(b, n, log)
	b.Run("indexes=none", func(b *testing.B) {
		passFloor(b, pool)
		pollEveryOrder(b, pool, log, n)
	})
	sortIndexes, err := os.ReadFile("../lockview/testdata/sort-indexes.sql")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{string(sortIndexes), consoleAnalyzeSQL} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	// New connections, as a console started after the indexes has: a
	// prepared statement's plan cache remembers what its custom plans cost
	// before the indexes and may settle on a generic plan for good.
	pool.Reset()
	b.Run("indexes=sort", func(b *testing.B) { pollEveryOrder(b, pool, log, n) })
}

// floorPasses are the cheapest reads of every row of the lock table: an
// aggregate over one column, and a count.
var floorPasses = map[string]string{
	"min-expiry": `SELECT min(expires_at) FROM distributed_lock`,
	"count":      `SELECT count(*) FROM distributed_lock`,
}

// passFloor reports what each floor pass costs the server (server-ms, as
// serverMillis measures a poll).
func passFloor(b *testing.B, pool *pgxpool.Pool) {
	for _, name := range []string{"min-expiry", "count"} {
		b.Run("floor/"+name, func(b *testing.B) {
			ms := 0.0
			for b.Loop() {
				ms += explainedMillis(b, pool, capturedStatement{sql: floorPasses[name]}).execution
			}
			b.ReportMetric(ms/float64(b.N), "server-ms")
		})
	}
}

// pollEveryOrder runs the sub-benchmarks of BenchmarkConsolePoll on pool,
// which holds n locks.
func pollEveryOrder(b *testing.B, pool *pgxpool.Pool, log *statementLog, n int) {
	ctx := context.Background()
	for _, sort := range lockview.Sorts {
		q := consoleWindow()
		q.Sort, q.Anchor = sort, fmt.Sprintf("job:%07d", n/2)
		poll := func(b *testing.B, q lockview.ListQuery) lockview.Page {
			page, err := lockview.ListLocks(ctx, pool, q)
			if err != nil || page.Anchor < 0 || len(page.Rows) == 0 {
				b.Fatalf("poll by %s: %d rows, anchor %d, %v", sort, len(page.Rows), page.Anchor, err)
			}
			return page
		}
		report := func(b *testing.B, q lockview.ListQuery) {
			ms := serverMillis(b, pool, log, func() { poll(b, q) })
			b.ReportMetric(ms.execution, "server-ms")
			b.ReportMetric(ms.planning, "plan-ms")
			if ms.counting > 0 {
				b.ReportMetric(ms.counting, "count-ms")
			}
		}
		b.Run(string(sort)+"/first", func(b *testing.B) {
			for b.Loop() {
				poll(b, q)
			}
			report(b, q)
		})
		// next: handed the last page's span and counts, not due
		// while the benchmark runs.
		next, last := q, poll(b, q)
		next.Near, next.Counts, next.Rank = last.Span, last.Counts, int(last.AnchorRank)
		next.Counts.Took = time.Hour
		b.Run(string(sort)+"/next", func(b *testing.B) {
			for b.Loop() {
				poll(b, next)
			}
			report(b, next)
		})
		kept := next
		kept.Order = poll(b, next).Order
		kept.Order.Took = time.Hour
		b.Run(string(sort)+"/kept", func(b *testing.B) {
			for b.Loop() {
				poll(b, kept)
			}
			report(b, kept)
		})
	}
}

// statementMillis is what the server spent on statements, in ms:
// executing them, the count statement's share of that (zero when none
// counted), and planning them (EXPLAIN ANALYZE plans afresh, as pgx's
// first executions of a prepared statement do, with custom plans).
type statementMillis struct{ execution, counting, planning float64 }

// serverMillis is what the server spent on the statements poll sends, each
// explained as sent (EXPLAIN ANALYZE runs it again), summed.
func serverMillis(b *testing.B, pool *pgxpool.Pool, log *statementLog, poll func()) statementMillis {
	b.Helper()
	log.mu.Lock()
	log.runs = nil
	log.mu.Unlock()
	poll()
	log.mu.Lock()
	runs := append([]capturedStatement(nil), log.runs...)
	log.mu.Unlock()
	var sum statementMillis
	for _, st := range runs {
		ms := explainedMillis(b, pool, st)
		sum.execution += ms.execution
		sum.planning += ms.planning
		if strings.Contains(st.sql, "AS scan_rank") {
			sum.counting += ms.execution
		}
	}
	return sum
}

// explainedMillis runs st under EXPLAIN ANALYZE and returns its execution
// and planning times.
func explainedMillis(b *testing.B, pool *pgxpool.Pool, st capturedStatement) statementMillis {
	b.Helper()
	var text string
	if err := pool.QueryRow(context.Background(), explainPrefix+"JSON) "+st.sql, st.args...).Scan(&text); err != nil {
		b.Fatalf("explain: %v\n%s", err, st.sql)
	}
	var out []struct {
		Execution float64 `json:"Execution Time"`
		Planning  float64 `json:"Planning Time"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		b.Fatal(err)
	}
	var ms statementMillis
	for _, e := range out {
		ms.execution += e.Execution
		ms.planning += e.Planning
	}
	return ms
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
			runtime.GC()
			var mem runtime.MemStats
			runtime.ReadMemStats(&mem)
			b.ReportMetric(float64(residentBytes())/(1<<20), "RSS-MB")
			b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MB")
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
