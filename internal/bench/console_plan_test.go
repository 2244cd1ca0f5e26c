package bench

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// statementLog records the statements a pool runs, so the console's own
// poll statements can be explained exactly as it sends them.
type statementLog struct {
	mu   sync.Mutex
	runs []capturedStatement
}

type capturedStatement struct {
	sql  string
	args []any
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, capturedStatement{d.SQL, d.Args})
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// explainPrefix is put before a captured statement: the one place this
// package builds SQL from parts, to explain statements of another package
// exactly as they were sent (with the same bound arguments).
const explainPrefix = `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT `

// TestConsolePollPlan runs the console's poll on 100k locks in every order
// and explains each statement it sent. No statement may sort more rows than
// twice the window holds, and every sort is bounded (the table is never sorted to
// find the visible rows). By key (and by waiters, whose keys without
// waiters come by key) the window comes through the primary key without a
// pass over the table; the other orders have no index of their own
// (schema.sql says why), so their window reads the table into a top-N sort:
// a pass per side on a first poll, one pass when handed the last page's span
// as the console's next poll is. The counts cost a pass of their own, taken
// only when due: a poll between counts (handed the last page's counts, as
// the console's are) by key or by waiters reads the table through indexes
// only. Between two ordering reads (handed the last page's order too, not
// yet due, as the console's polls are) TTL, token and held for read the
// window's rows by primary key, without a pass. With the indexes an operator may add for
// them (docs/operations.md, "Large tables": internal/lockview/testdata/sort-indexes.sql) every order
// reads its window through an index, without a pass. The plans are logged
// for BENCHMARKS.md (go test -v -run TestConsolePollPlan).
func TestConsolePollPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100k rows")
	}
	ctx := context.Background()
	log := &statementLog{}
	pool := consoleDB(t, 100_000, log)
	t.Run("schema indexes", func(t *testing.T) { checkPollPlans(t, pool, log, false) })
	sortIndexes, err := os.ReadFile("../lockview/testdata/sort-indexes.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(sortIndexes)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, consoleAnalyzeSQL); err != nil {
		t.Fatal(err)
	}
	t.Run("operator's sort indexes", func(t *testing.T) { checkPollPlans(t, pool, log, true) })
}

// checkPollPlans polls in every order, first without and then with the
// last page's span, and checks the plans of the statements log caught.
func checkPollPlans(t *testing.T, pool *pgxpool.Pool, log *statementLog, sortIndexes bool) {
	ctx := context.Background()
	var last lockview.Page
	const middle = "job:0050000"
	for _, poll := range []struct {
		sort   lockview.Sort
		near   bool   // handed the last page's span and counts, as the console's next poll is
		kept   bool   // and its order, not yet due: a poll between two ordering reads
		anchor string // the console polls around its selection
		before int    // rows before the anchor, when fewer than the window asks for
	}{{lockview.SortKey, false, false, middle, 0}, {lockview.SortKey, true, false, middle, 0}, {lockview.SortKey, false, false, "job:0000006", 5},
		{lockview.SortTTL, false, false, middle, 0}, {lockview.SortTTL, true, false, middle, 0}, {lockview.SortTTL, true, true, middle, 0},
		{lockview.SortToken, false, false, middle, 0}, {lockview.SortToken, true, false, middle, 0}, {lockview.SortToken, true, true, middle, 0},
		{lockview.SortHeldFor, false, false, middle, 0}, {lockview.SortHeldFor, true, false, middle, 0}, {lockview.SortHeldFor, true, true, middle, 0},
		{lockview.SortWaiters, false, false, middle, 0}, {lockview.SortWaiters, true, false, middle, 0}} {
		sort := poll.sort
		q := consoleWindow()
		q.Sort, q.Anchor = sort, poll.anchor
		if poll.near {
			// Counts not yet due: a poll between two counts of the table.
			q.Near, q.Counts, q.Rank = last.Span, last.Counts, int(last.AnchorRank)
			q.Counts.Took = time.Hour
		}
		if poll.kept {
			q.Order = last.Order
			q.Order.Took = time.Hour
		}
		log.mu.Lock()
		log.runs = nil
		log.mu.Unlock()
		page, err := lockview.ListLocks(ctx, pool, q)
		wantRows := q.Before + q.After
		if poll.before > 0 {
			wantRows = poll.before + q.After
		}
		if err != nil || len(page.Rows) != wantRows {
			t.Fatalf("sort %s around %s: poll gave %d rows, %v; want %d", sort, q.Anchor, len(page.Rows), err, wantRows)
		}
		last = page
		log.mu.Lock()
		runs := append([]capturedStatement(nil), log.runs...)
		log.mu.Unlock()
		windowIndexed, windowScans, scans := false, 0, 0
		for i, st := range runs {
			var out string
			if err := pool.QueryRow(ctx, explainPrefix+"JSON) "+st.sql, st.args...).Scan(&out); err != nil {
				t.Fatalf("explain: %v\n%s", err, st.sql)
			}
			plan, err := testdb.ParsePlan(out)
			if err != nil {
				t.Fatal(err)
			}
			window := strings.Contains(st.sql, "row_number() OVER") || strings.Contains(st.sql, "WITH ORDINALITY")
			plan.Walk(func(n testdb.PlanNode) {
				// Per loop: each parallel worker keeps its own top-N. The
				// read near a span keeps twice the window (lockview's
				// nearSQL says why).
				if n.Type == "Sort" && n.Rows > float64(2*(q.Before+q.After)) {
					t.Errorf("sort %s, statement %d sorts %.0f rows:\n%s", sort, i, n.Rows, st.sql)
				}
				if n.Type == "Sort" && n.SortMethod != "top-N heapsort" && n.SortMethod != "quicksort" {
					t.Errorf("sort %s, statement %d: sort method %q, not bounded:\n%s", sort, i, n.SortMethod, st.sql)
				}
				if window && strings.HasPrefix(n.Type, "Index") && n.Relation == "distributed_lock" {
					windowIndexed = true
				}
				if n.Type == "Seq Scan" && n.Relation == "distributed_lock" {
					scans++
					if window {
						windowScans++
					}
				}
			})
			if testing.Verbose() && (sort == lockview.SortKey || window) {
				rows, err := pool.Query(ctx, explainPrefix+"TEXT) "+st.sql, st.args...)
				if err != nil {
					t.Fatal(err)
				}
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("sort %s, span %v, kept order %v, statement %d of the poll:\n%s\n", sort, poll.near, poll.kept, i+1, strings.Join(lines, "\n"))
			}
		}
		if poll.kept && !page.Order.TakenAt.Equal(q.Order.TakenAt) {
			t.Fatalf("sort %s: a poll handed an order not due ordered afresh", sort)
		}
		byIndex := sortIndexes || poll.kept || sort == lockview.SortKey || sort == lockview.SortWaiters
		if byIndex && !windowIndexed {
			t.Errorf("sort %s around %s: the window statement reads no index of distributed_lock", sort, q.Anchor)
		}
		// Through an index no pass over the table; otherwise one per side,
		// or one in all with the last page's span.
		want := 2
		switch {
		case byIndex:
			want = 0
		case poll.near:
			want = 1
		}
		if windowScans != want {
			t.Errorf("sort %s around %s, span %v, kept order %v: the window read the table %d times, want %d", sort, q.Anchor, poll.near, poll.kept, windowScans, want)
		}
		// Between counts nothing but the window reads the table: by key
		// and by waiters such a poll never passes over it.
		if poll.near && scans != windowScans {
			t.Errorf("sort %s between counts: %d passes over the table, %d of them the window's; want only the window's", sort, scans, windowScans)
		}
	}
}
