package bench

// Server and client CPU per acquire+release cycle of each series, measured
// on one connection with synchronous_commit off, so neither fsync nor a busy
// machine's scheduling blurs it (CPU time, not wall time). Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestStatementCPU -v ./internal/bench/

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/locker"
)

func TestStatementCPU(t *testing.T) {
	profiling(t, "measure CPU per cycle")
	ctx := context.Background()
	tg, pid := oneBackend(t)
	// A checker each: the reference's tokens come from a sequence of its own.
	checkers := []*checker{newChecker(), newChecker(), newChecker()}
	lockerWith := func(cfg locker.Config) *locker.Locker {
		cfg.TTL = 30 * time.Second
		lk, err := locker.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return lk
	}
	cases := []series{
		commitFloorSeries(tg.pool),
		referenceSeries(SeriesReference, reference{pool: tg.pool, ttl: 30 * time.Second}, checkers[0]),
		lockerSeries(SeriesLocker, lockerWith(locker.Config{}), tg.pool, checkers[1]),
		lockerSeries(SeriesLockerLogged, lockerWith(locker.Config{LogGrants: true}), tg.pool, checkers[2]),
	}
	const n, rounds = 3000, 5
	// The least of the rounds: a busy machine only ever adds CPU time
	// (cache misses, migrations), never removes it.
	type cost struct{ backend, client time.Duration }
	best := make([]cost, len(cases))
	for round := range rounds {
		for i, c := range cases {
			cycles := func(count int) {
				for j := range count {
					key := "cpu-" + string(rune('a'+j%4))
					if _, err := c.cycle(ctx, 0, key); err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
				}
			}
			cycles(50) // warm: plans cached, rows exist
			b0, _ := procCPU(pid)
			c0, _ := processCPU()
			cycles(n)
			b1, _ := procCPU(pid)
			c1, _ := processCPU()
			got := cost{(b1 - b0) / n, (c1 - c0) / n}
			if round == 0 || got.backend < best[i].backend {
				best[i].backend = got.backend
			}
			if round == 0 || got.client < best[i].client {
				best[i].client = got.client
			}
		}
	}
	for _, chk := range checkers {
		if v := chk.violations(); !v.Zero() {
			t.Errorf("violations: %+v", v)
		}
	}
	for i, c := range cases {
		t.Logf("%-16s backend %4.0f µs  client %4.0f µs per cycle (floor-commit: per statement)",
			c.name, float64(best[i].backend)/1e3, float64(best[i].client)/1e3)
	}
}
