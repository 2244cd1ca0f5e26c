package bench

// Paired backend CPU of two ways to run an acquire+release cycle, for
// differences of a few µs that a single benchmark run cannot show through
// this machine's noise (BENCHMARKS.md, "No clock joins"). Gated:
//
//	LOCKCTL_BENCH_PROFILE=1 go test -run TestPairedStatementCPU -v ./internal/bench/
//
// compares the locker's cycle with two floor statements. To compare two
// versions of the grant and release statements, hand-edited copies of
// store's takeSQL and releaseSQL for instance, name them:
//
//	LOCKCTL_BENCH_PAIR=a-grant.sql:a-release.sql,b-grant.sql:b-release.sql
//
// A grant file takes ($1 key, $2 owner, $3 TTL in µs, $4 metadata) and
// returns (key, owner, token, expires_at, ttl, outcome, remaining); a
// release file takes ($1 key, $2 owner, $3 token, $4 lazy).

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// pairedCycle is one way to run a cycle on key.
type pairedCycle struct {
	name  string
	cycle func(ctx context.Context, key string) error
}

func TestPairedStatementCPU(t *testing.T) {
	profiling(t, "compare two cycles' backend CPU, interleaved")
	ctx := context.Background()
	tg, pid := oneBackend(t)
	a, b := pairedCycles(t, tg.pool)
	keys := []string{"pair-0", "pair-1", "pair-2", "pair-3"}
	if _, err := tg.pool.Exec(ctx, pairedKeysSQL, keys); err != nil {
		t.Fatal(err)
	}
	run := func(c pairedCycle, n int) time.Duration {
		before := backendRuntime(t, pid)
		for i := range n {
			if err := c.cycle(ctx, keys[i%len(keys)]); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		return (backendRuntime(t, pid) - before) / time.Duration(n)
	}
	run(a, 500) // warm: plans cached
	run(b, 500)
	// ABBA: each block pair runs in alternating order, so neither way always
	// runs first, and a drift of the machine hits both alike.
	const blocks, perBlock = 80, 800
	var costA, costB, diffs []time.Duration
	dearer := 0
	for i := range blocks {
		var ca, cb time.Duration
		if i%2 == 0 {
			ca, cb = run(a, perBlock), run(b, perBlock)
		} else {
			cb, ca = run(b, perBlock), run(a, perBlock)
		}
		costA, costB, diffs = append(costA, ca), append(costB, cb), append(diffs, ca-cb)
		if ca > cb {
			dearer++
		}
	}
	slices.Sort(diffs)
	t.Logf("backend CPU per cycle: %s median %s, %s median %s; %s − %s: median %s (quartiles %s, %s); %s dearer in %d of %d blocks",
		a.name, median(costA), b.name, median(costB), a.name, b.name,
		diffs[blocks/2], diffs[blocks/4], diffs[3*blocks/4], a.name, dearer, blocks)
}

// pairedKeysSQL makes the keys' rows, free, so that every grant statement
// finds its row (takeSQL leaves a key's first grant to grantSQL).
const pairedKeysSQL = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT k, 'pair', nextval('distributed_lock_fence_seq'), clock_timestamp(), interval '30 seconds',
       clock_timestamp(), clock_timestamp()
FROM unnest($1::text[]) k`

// pairedCycles are the two ways to compare: LOCKCTL_BENCH_PAIR's statement
// files, or the locker against two floor statements.
func pairedCycles(t *testing.T, pool *pgxpool.Pool) (a, b pairedCycle) {
	spec := os.Getenv("LOCKCTL_BENCH_PAIR")
	if spec == "" {
		lk, err := locker.New(locker.Config{TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s := lockerSeries(SeriesLocker, lk, pool, newChecker())
		floor := func(ctx context.Context, _ string) error {
			for range 2 {
				if _, err := pool.Exec(ctx, floorUpdateSQL, 0); err != nil {
					return err
				}
			}
			return nil
		}
		return pairedCycle{SeriesLocker, func(ctx context.Context, key string) error {
			_, err := s.cycle(ctx, 0, key)
			return err
		}}, pairedCycle{"2×" + SeriesCommitFloor, floor}
	}
	files := strings.Split(spec, ",")
	if len(files) != 2 {
		t.Fatalf("LOCKCTL_BENCH_PAIR: want two grant:release pairs, got %q", spec)
	}
	return statementCycle(t, pool, files[0]), statementCycle(t, pool, files[1])
}

// statementCycle runs the grant and release statements of pair
// ("grant.sql:release.sql") as one acquire+release cycle.
func statementCycle(t *testing.T, pool *pgxpool.Pool, pair string) pairedCycle {
	grantFile, releaseFile, ok := strings.Cut(pair, ":")
	if !ok {
		t.Fatalf("LOCKCTL_BENCH_PAIR: %q is not grant.sql:release.sql", pair)
	}
	grant, release := readSQL(t, grantFile), readSQL(t, releaseFile)
	return pairedCycle{pair, func(ctx context.Context, key string) error {
		var k, owner, outcome string
		var token int64
		var expires time.Time
		var ttl, remaining time.Duration
		if err := pool.QueryRow(ctx, grant, key, "pair", int64(30e6), nil).Scan(
			&k, &owner, &token, &expires, &ttl, &outcome, &remaining); err != nil {
			return fmt.Errorf("grant: %w", err)
		}
		if outcome != "acquired" {
			return fmt.Errorf("grant of %s: outcome %s, want acquired", key, outcome)
		}
		_, err := pool.Exec(ctx, release, key, "pair", token, true)
		return err
	}}
}

func readSQL(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// backendRuntime is the CPU time the process pid has run, in nanoseconds
// (the first field of /proc/PID/schedstat): finer than /proc/PID/stat's
// clock ticks, which blocks of a few hundred cycles need.
func backendRuntime(t *testing.T, pid int32) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		t.Fatalf("backend CPU: %v (the server must run on this machine)", err)
	}
	var ns int64
	if _, err := fmt.Sscan(string(b), &ns); err != nil {
		t.Fatalf("backend CPU: %q: %v", b, err)
	}
	return time.Duration(ns)
}
