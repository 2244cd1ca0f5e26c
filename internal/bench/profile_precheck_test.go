package bench

// A refused grant costs a durable commit: INSERT … ON CONFLICT DO UPDATE
// locks the conflicting row before its WHERE refuses, and a row lock
// assigns a transaction id and writes WAL, so the commit waits for the
// disk. The prototype below looks first (NOT EXISTS an unexpired lease of
// another owner) and inserts nothing when the key is held, so a refusal is
// a read-only statement. Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestPrecheck -v ./internal/bench/

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
)

const protoPrecheckValues = `VALUES ($1, $2, (SELECT nextval('distributed_lock_fence_seq') %s),
            clock_timestamp() + $3::bigint * interval '1 microsecond',
            $3::bigint * interval '1 microsecond', clock_timestamp(), $4::jsonb)`

const protoPrecheckSelect = `SELECT $1, $2, (SELECT nextval('distributed_lock_fence_seq') %s),
            clock_timestamp() + $3::bigint * interval '1 microsecond',
            $3::bigint * interval '1 microsecond', clock_timestamp(), $4::jsonb
    WHERE NOT EXISTS (SELECT 1 FROM distributed_lock h
                      WHERE h.lock_key = $1 AND h.released_at IS NULL
                        AND h.owner_id <> $2 AND h.expires_at > clock_timestamp())`

func TestPrecheck(t *testing.T) {
	profiling(t, "try a grant that checks for a live holder first")
	ctx := context.Background()
	tg, conn := profileServer(t, pgtemp.Options{}, 8)
	body := strings.Replace(protoGrantBody, fmt.Sprintf(protoPrecheckValues, "%s"), fmt.Sprintf(protoPrecheckSelect, "FROM gate"), 1)
	body = strings.Replace(body, "%s", "FROM gate", 1) // unchanged body if the VALUES text moved
	if !strings.Contains(body, "WHERE NOT EXISTS") {
		t.Fatal("the grant's VALUES clause changed; update the prototype")
	}
	precheck := protoGrantGate + body + protoGrantLogged + protoGrantTail
	lk, _ := locker.New(locker.Config{TTL: 30 * time.Second})
	sampler := &serverProbe{conn: conn, appName: tg.appName, every: 20 * time.Millisecond}
	all := []series{
		referenceSeries(SeriesReference, reference{pool: tg.pool, ttl: 30 * time.Second}, newChecker()),
		lockerSeries(SeriesLocker, lk, tg.pool, newChecker()),
		protoSeries("proto-precheck", tg.pool, precheck, protoFullRelease, 6, 4, newChecker()),
	}
	var samples []sample
	for round := range 3 {
		for _, s := range rotate(all, round) {
			smp, err := runSeries(ctx, s, ScenarioHot, 8, hotKeys(4), 2*time.Second, sampler, nil)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, smp)
		}
	}
	for _, r := range aggregate(samples, Options{}) {
		t.Logf("%-16s %5.0f cycles/s (%4.0f–%4.0f) refused %5.0f/s  p50 %s  WAL/cycle %5.0f B  RT/refusal %.2f  %v",
			r.Series, r.CyclesPerSec, r.CyclesPerSecMin, r.CyclesPerSecMax, r.RefusedPerSec, ms(r.P50),
			r.WALPerCycle, r.RoundTripsPerRefusal, r.TopWaits(3))
	}
}
