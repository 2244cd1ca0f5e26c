package bench

// What keeping many locks alive costs the client, as `lockctl bench` reports
// it, under the benchmark harness so that a CPU profile shows where it goes:
//
//	go test -run NONE -bench Keepalive -cpuprofile keepalive.pprof ./internal/bench/
//	go tool pprof -top keepalive.pprof

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

func BenchmarkKeepalive(b *testing.B) {
	const locks, ttl = 200, 3 * time.Second
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(b), 8)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tg.close(ctx) })
	var cpu time.Duration
	var renewals int64
	for b.Loop() {
		// Over one TTL each keepalive renews about three times.
		res, err := measureKeepalive(ctx, tg.pool, locks, ttl, ttl)
		if err != nil {
			b.Fatal(err)
		}
		if res.Lost > 0 || res.Renewals == 0 {
			b.Fatalf("%d of %d keepalives lost their lease, %d renewals", res.Lost, locks, res.Renewals)
		}
		cpu += res.CPU
		renewals += res.Renewals
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(renewals), "client-µs/renewal")
	b.ReportMetric(float64(renewals)/float64(b.N), "renewals/op")
}
