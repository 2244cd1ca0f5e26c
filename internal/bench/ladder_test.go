package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// The ladder steps (pgbench/ladder, BENCHMARKS.md "Where a cycle's time
// goes") still apply to a lock schema, and the pgbench cycles still run
// before and after each, so the measurements written down can be taken
// again as written. A step serves a key without a row too (as pgbench's
// random keys ask for), or its clients would stop mid-run.
func TestLadderStepsRunTheCycles(t *testing.T) {
	steps, err := filepath.Glob("pgbench/ladder/*.sql")
	if err != nil || len(steps) == 0 {
		t.Fatalf("no ladder steps: %v", err)
	}
	for _, step := range steps {
		t.Run(filepath.Base(step), func(t *testing.T) {
			ctx := context.Background()
			tg, err := openTarget(ctx, testdb.DSN(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tg.close(ctx) })
			runCycles(t, tg, "1") // the keys' rows, as a first pgbench run makes them
			sql, err := os.ReadFile(step)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tg.pool.Exec(ctx, string(sql)); err != nil {
				t.Fatalf("applying %s: %v", step, err)
			}
			tg.pool.Reset() // pgbench's sessions are new: none has compiled the functions before the step
			runCycles(t, tg, "1")
			runCycles(t, tg, "2") // a key no cycle has made
		})
	}
}

// runCycles runs each pgbench cycle script once, as client 0 on key k.
func runCycles(t *testing.T, tg *target, k string) {
	t.Helper()
	for _, script := range []string{"locker-cycle.sql", "floor-cycle.sql", "upsert-cycle.sql"} {
		if err := runPgbenchScript(tg, filepath.Join("pgbench", script), map[string]string{"client_id": "0", "k": k}); err != nil {
			t.Fatalf("%s: %v", script, err)
		}
	}
}

var pgbenchVar = regexp.MustCompile(`:([a-z_]+)`)

// runPgbenchScript runs a pgbench script's SQL commands in order, as
// pgbench would with vars set: meta-commands and comments are skipped, a
// command ending in \gset sets vars from its row, and every command must
// return a row (the cycles' statements each select what they took).
func runPgbenchScript(tg *target, path string, vars map[string]string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for line := range strings.Lines(string(text)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\`) {
			continue
		}
		sql, gset := strings.CutSuffix(line, `\gset`)
		sql = pgbenchVar.ReplaceAllStringFunc(sql, func(m string) string {
			if v, ok := vars[m[1:]]; ok {
				return v
			}
			return m
		})
		rows, err := tg.pool.Query(ctx, strings.TrimSuffix(strings.TrimSpace(sql), ";"))
		if err != nil {
			return err
		}
		if !rows.Next() {
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if rows.CommandTag().RowsAffected() == 0 {
				return fmt.Errorf("%q: nothing returned or changed", sql)
			}
			continue
		}
		values, err := rows.Values()
		fields := rows.FieldDescriptions()
		rows.Close()
		if err != nil {
			return err
		}
		if gset {
			for i, f := range fields {
				vars[f.Name] = fmt.Sprint(values[i])
			}
		}
	}
	return nil
}

// The permit cycles (pgbench/permit, BENCHMARKS.md "Shared leases and
// semaphores") still run on a lock schema as written: each takes its
// permit and gives it back, twice over, leaving nothing held.
func TestPermitCyclesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.close(ctx) })
	scripts, err := filepath.Glob("pgbench/permit/permit-*.sql")
	if err != nil || len(scripts) != 3 {
		t.Fatalf("permit cycles %v, %v; want 3", scripts, err)
	}
	for _, script := range append([]string{"pgbench/permit/setup.sql"}, append(scripts, scripts...)...) {
		if err := runPgbenchScript(tg, script, map[string]string{}); err != nil {
			t.Fatalf("%s: %v", script, err)
		}
	}
	var held, holders int
	if err := tg.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE owner_id = 'o1'), count(*) FILTER (WHERE owner_id = 'holder')
		FROM distributed_lock WHERE slot > 0 AND released_at IS NULL`).Scan(&held, &holders); err != nil {
		t.Fatal(err)
	}
	if held != 0 || holders != 2 {
		t.Errorf("after the cycles, o1 holds %d permits and the set-up's holders %d; want 0 and 2", held, holders)
	}
}
