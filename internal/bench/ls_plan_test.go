package bench

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// TestLsPlan explains the statement `lockctl ls` sends on 100k locks: a
// prefix is read as a range of an index on lock_key (no pass over the
// table), and the state filter runs in the server, so what reaches the
// client is what ls prints. States have no index (schema.sql says why), so
// a state alone is one pass over the table on the server.
func TestLsPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100k rows")
	}
	ctx := context.Background()
	log := &statementLog{}
	pool := consoleDB(t, 100_000, log)
	for _, c := range []struct {
		name    string
		filter  lockview.LockFilter
		printed int
		indexed bool // read through an index, without a pass over the table
	}{
		{"prefix", lockview.LockFilter{Prefix: "job:00001"}, 100, true},
		{"prefix and state", lockview.LockFilter{Prefix: "job:00001", States: []lockdb.State{lockdb.StateHeld}}, 33, true},
		{"state", lockview.LockFilter{States: []lockdb.State{lockdb.StateFree}}, 33_333, false},
	} {
		log.mu.Lock()
		log.runs = nil
		log.mu.Unlock()
		printed := 0
		if err := lockview.EachLock(ctx, pool, c.filter, func(lockview.Lock) error { printed++; return nil }); err != nil {
			t.Fatal(err)
		}
		if printed != c.printed {
			t.Fatalf("%s: listed %d rows; want %d", c.name, printed, c.printed)
		}
		log.mu.Lock()
		runs := append([]capturedStatement(nil), log.runs...)
		log.mu.Unlock()
		if len(runs) != 1 {
			t.Fatalf("%s: %d statements; want one", c.name, len(runs))
		}
		var out string
		if err := pool.QueryRow(ctx, explainPrefix+"JSON) "+runs[0].sql, runs[0].args...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		plan, err := testdb.ParsePlan(out)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Rows != float64(c.printed) {
			t.Errorf("%s: the statement returns %.0f rows; want the %d ls prints", c.name, plan.Rows, c.printed)
		}
		seqScans := 0
		plan.Walk(func(n testdb.PlanNode) {
			if n.Relation == "distributed_lock" && n.Type == "Seq Scan" {
				seqScans++
			}
		})
		if c.indexed && seqScans > 0 {
			t.Errorf("%s: the statement reads the whole table:\n%s", c.name, out)
		}
	}
}
