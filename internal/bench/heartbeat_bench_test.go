package bench

// What one session heartbeat costs, client and server together, as
// locker.Session sends it every interval: naming every lease it keeps.
// Side by side with another commit (BENCHMARKS.md, "Sessions"):
//
//	go test -run '^$' -bench SessionHeartbeat -benchtime 150x ./internal/bench/

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func BenchmarkSessionHeartbeat(b *testing.B) {
	for _, leases := range []int{100, 10000} {
		b.Run(fmt.Sprintf("leases=%d", leases), func(b *testing.B) {
			ctx := context.Background()
			db := testdb.New(b)
			lk := testdb.Locker(b, locker.Config{TTL: time.Hour})
			row, err := store.OpenSession(ctx, db, store.SessionParams{Owner: "bench", TTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			ref := store.SessionRef{ID: row.ID, Owner: "bench"}
			var keep []store.BoundRef
			for first := 0; first < leases; first += locker.MaxKeys {
				keys := make([]string, min(locker.MaxKeys, leases-first))
				for i := range keys {
					keys[i] = fmt.Sprintf("bench:job:%06d", first+i)
				}
				set, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(keys...), Owner: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				refs := make([]store.LeaseRef, len(set))
				for i, lease := range set {
					refs[i] = store.LeaseRef{Key: lease.Key, Owner: lease.Owner, Token: lease.Token}
					keep = append(keep, store.BoundRef{Key: lease.Key, Token: lease.Token})
				}
				if bound, err := store.BindSession(ctx, db, ref, refs); err != nil || bound.Outcome != lockdb.OutcomeBound {
					b.Fatalf("bind: %+v, %v", bound, err)
				}
			}
			// On one connection, whose server process's CPU is read from
			// /proc: on a busy machine CPU time moves far less than wall time.
			conn, err := db.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Release()
			var pid int32
			if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			serverBefore, _ := procCPU(pid)
			clientBefore, _ := processCPU()
			for b.Loop() {
				beat, err := store.SessionHeartbeat(ctx, conn, ref, nil, keep)
				if err != nil || beat.Leases != leases || len(beat.Lost) > 0 {
					b.Fatalf("heartbeat kept %d of %d leases, lost %d: %v", beat.Leases, leases, len(beat.Lost), err)
				}
			}
			serverAfter, _ := procCPU(pid)
			clientAfter, _ := processCPU()
			b.ReportMetric(float64((serverAfter-serverBefore).Microseconds())/float64(b.N), "server-µs/heartbeat")
			b.ReportMetric(float64((clientAfter-clientBefore).Microseconds())/float64(b.N), "client-µs/heartbeat")
		})
	}
}
