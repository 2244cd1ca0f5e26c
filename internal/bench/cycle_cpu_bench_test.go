package bench

// What one acquire+release cycle costs the server, in CPU time rather than
// wall time, next to the least a cycle can cost (two one-row UPDATEs, two
// commits). CPU time barely moves when the shared machine is busy, so small
// differences between the locker and the reference show here that a
// throughput run hides in its noise (BENCHMARKS.md).
// Run:
//
//	go test -run NONE -bench CycleCPU ./internal/bench/

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// cpuBlock is how many cycles run between two readings of the backend's
// CPU time; a block of the series and one of the floor alternate, so a
// drift of the machine falls on both alike.
const cpuBlock = 100

var cpuKeys = []string{"cpu-a", "cpu-b", "cpu-c", "cpu-d"}

func BenchmarkCycleCPU(b *testing.B) {
	ctx := context.Background()
	tg, pid := oneBackend(b)
	floor := commitFloorSeries(tg.pool)
	ways := []struct {
		name string
		make func(chk *checker) series
	}{
		{SeriesReference, func(chk *checker) series {
			return ownerLockSeries(SeriesReference, reference{pool: tg.pool, ttl: 30 * time.Second}, chk)
		}},
		{SeriesUpsert, func(chk *checker) series {
			return ownerLockSeries(SeriesUpsert, upsert{pool: tg.pool, ttl: 30 * time.Second}, chk)
		}},
		{SeriesLocker, func(chk *checker) series {
			return lockerSeries(SeriesLocker, newBenchLocker(b, locker.Config{}), tg.pool, chk)
		}},
		{SeriesLockerLogged, func(chk *checker) series {
			return lockerSeries(SeriesLockerLogged, newBenchLocker(b, locker.Config{LogGrants: true}), tg.pool, chk)
		}},
		{SeriesStatements, func(chk *checker) series {
			return tokenLockSeries(SeriesStatements, stmtLocker{pool: tg.pool, ttl: 30 * time.Second}, chk)
		}},
		{SeriesFloorFunction, func(chk *checker) series {
			return tokenLockSeries(SeriesFloorFunction, floorFunc{pool: tg.pool, ttl: 30 * time.Second}, chk)
		}},
	}
	for _, way := range ways {
		b.Run(way.name, func(b *testing.B) {
			chk := newChecker()
			s := way.make(chk)
			cycles := func(n, from int) {
				for i := range n {
					if _, err := s.cycle(ctx, 0, cpuKeys[(from+i)%len(cpuKeys)]); err != nil {
						b.Fatalf("%s: %v", s.name, err)
					}
				}
			}
			floorCycles := func(n int) {
				for range 2 * n {
					if _, err := floor.cycle(ctx, 0, ""); err != nil {
						b.Fatalf("%s: %v", floor.name, err)
					}
				}
			}
			cycles(50, 0) // warm: rows exist, plans cached
			floorCycles(50)
			var backend, floorBackend, client time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; done += cpuBlock {
				n := min(cpuBlock, b.N-done)
				measured := func() {
					c0, b0 := mustProcessCPU(b), backendRuntime(b, pid)
					cycles(n, done)
					backend += backendRuntime(b, pid) - b0
					client += mustProcessCPU(b) - c0
				}
				floored := func() {
					b.StopTimer()
					b0 := backendRuntime(b, pid)
					floorCycles(n)
					floorBackend += backendRuntime(b, pid) - b0
					b.StartTimer()
				}
				if (done/cpuBlock)%2 == 0 {
					measured()
					floored()
				} else {
					floored()
					measured()
				}
			}
			b.StopTimer()
			if v := chk.violations(); !v.Zero() {
				b.Fatalf("%s broke the lock rules: %+v", s.name, v)
			}
			perCycle := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(b.N) }
			b.ReportMetric(perCycle(backend), "backend-µs/op")
			b.ReportMetric(perCycle(floorBackend), "floor-backend-µs/op")
			b.ReportMetric(float64(backend)/float64(floorBackend), "x-floor")
			b.ReportMetric(perCycle(client), "client-µs/op")
		})
	}
}

func newBenchLocker(tb testing.TB, cfg locker.Config) *locker.Locker {
	tb.Helper()
	cfg.TTL = 30 * time.Second
	lk, err := locker.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return lk
}

// oneBackend opens a target of one connection on the test server, so that
// every statement runs on the backend whose pid it returns. It skips when
// that backend is not a process of this machine (TEST_DATABASE_URL names a
// remote server): its CPU time cannot be read then.
func oneBackend(b *testing.B) (*target, int32) {
	b.Helper()
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(b), 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tg.close(ctx) })
	var pid int32
	if err := tg.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	if _, ok := procCPU(pid); !ok {
		b.Skipf("backend %d is not a postgres process on this machine: its CPU time cannot be read", pid)
	}
	return tg, pid
}

// backendRuntime is the CPU time the process pid has run, in nanoseconds
// (the first field of /proc/PID/schedstat): finer than /proc/PID/stat's
// clock ticks, which blocks of a hundred cycles need.
func backendRuntime(b *testing.B, pid int32) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		b.Fatalf("backend CPU: %v", err)
	}
	var ns int64
	if _, err := fmt.Sscan(string(raw), &ns); err != nil {
		b.Fatalf("backend CPU: %q: %v", raw, err)
	}
	return time.Duration(ns)
}

func mustProcessCPU(b *testing.B) time.Duration {
	d, err := processCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
