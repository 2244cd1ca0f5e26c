package bench

// Does WAL volume alone slow a durable commit down? A one-row update that
// writes ~115 B of WAL against the same update carrying ~1.9 kB (the
// locker's WAL per cycle), interleaved. Gated like TestVariants:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestWALVolume -v ./internal/bench/

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

const walPadColumnSQL = `ALTER TABLE bench_floor ADD COLUMN pad text`

const walPadUpdateSQL = `UPDATE bench_floor SET n = n + 1, pad = $2 WHERE id = $1`

func paddedFloorSeries(pool *pgxpool.Pool, padBytes int) series {
	// A fresh value each time: an update that keeps most of the old row is
	// logged as the difference only.
	return series{name: "floor-commit-padded", cycle: func(ctx context.Context, worker int, _ string) (bool, error) {
		b := make([]byte, padBytes/2)
		_, _ = rand.Read(b)
		_, err := pool.Exec(ctx, walPadUpdateSQL, worker, hex.EncodeToString(b))
		return true, err
	}}
}

func TestWALVolume(t *testing.T) {
	profiling(t, "measure WAL volume against commit time")
	ctx := context.Background()
	tg, conn := profileServer(t, pgtemp.Options{}, 8)
	if _, err := tg.pool.Exec(ctx, walPadColumnSQL); err != nil {
		t.Fatal(err)
	}
	sampler := &serverProbe{conn: conn, appName: tg.appName, every: 20 * time.Millisecond}
	all := []series{commitFloorSeries(tg.pool), paddedFloorSeries(tg.pool, 1800)}
	var samples []sample
	for round := range 3 {
		for _, w := range []int{1, 8} {
			for _, s := range rotate(all, round) {
				smp, err := runSeries(ctx, s, ScenarioSolo, w, soloKeys, 2*time.Second, sampler, nil)
				if err != nil {
					t.Fatal(err)
				}
				samples = append(samples, smp)
			}
		}
	}
	for _, r := range aggregate(samples, Options{}) {
		t.Logf("%-20s %d workers %6.0f commits/s (%4.0f–%4.0f)  p50 %s  WAL/commit %5.0f B  %v",
			r.Series, r.Workers, r.CyclesPerSec, r.CyclesPerSecMin, r.CyclesPerSecMax, ms(r.P50), r.WALPerCycle, r.TopWaits(3))
	}
}
