package bench

// A release need not wait for the disk: if a crash loses it, the lease is
// held again after recovery and simply expires (safety is untouched: nobody
// was granted the key on the strength of a release the crash lost, because
// a grant's own durable commit flushes the WAL before it, release
// included). One commit of two per cycle then stops waiting for fsync. The
// prototype is store's release (as of commit 1561dec: only released_at set,
// PL/pgSQL has_waiters) with synchronous_commit set off for its own
// transaction. Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestAsyncRelease -v ./internal/bench/

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
)

const protoAsyncReleaseHead = `
WITH async AS MATERIALIZED (
    SELECT set_config('synchronous_commit', 'off', true)
), released AS (
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
      AND EXISTS (SELECT 1 FROM async)
    RETURNING l.*
)`

func TestAsyncRelease(t *testing.T) {
	profiling(t, "compare durable and asynchronous releases")
	ctx := context.Background()
	tg, conn := profileServer(t, pgtemp.Options{}, 8)
	lk, _ := locker.New(locker.Config{TTL: 30 * time.Second})
	probe := &serverProbe{conn: conn, appName: tg.appName, every: 20 * time.Millisecond}
	all := []series{
		referenceSeries(SeriesReference, reference{pool: tg.pool, ttl: 30 * time.Second}, newChecker()),
		lockerSeries(SeriesLocker, lk, tg.pool, newChecker()),
		protoSeries("proto-async-release", tg.pool, protoFullGrant, protoAsyncReleaseHead+protoReleaseLogged+protoReleaseTail, 6, 4, newChecker()),
		commitFloorSeries(tg.pool),
	}
	var samples []sample
	for round := range 3 {
		for _, w := range []int{1, 8} {
			for _, s := range rotate(all, round) {
				smp, err := runSeries(ctx, s, ScenarioSolo, w, soloKeys, 2*time.Second, probe, nil)
				if err != nil {
					t.Fatal(err)
				}
				samples = append(samples, smp)
			}
		}
	}
	for _, r := range aggregate(samples, Options{}) {
		t.Logf("%-20s %d workers %6.0f cycles/s (%4.0f–%4.0f)  p50 %s  WAL/cycle %5.0f B  %v",
			r.Series, r.Workers, r.CyclesPerSec, r.CyclesPerSecMin, r.CyclesPerSecMax, ms(r.P50), r.WALPerCycle, r.TopWaits(3))
	}
}
