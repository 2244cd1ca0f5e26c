package bench

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A short semaphore run with workers in two real processes: both series
// granted, no key ever had more holders than its limit by the workers'
// timelines or the server's samples, tokens rose on the mutex keys, and the
// report carries the targets. No timing is asserted.
func TestSemaphoreScenario(t *testing.T) {
	var rep *SemaphoreReport
	// A machine loaded by other tests can slow the grants so much that a
	// short round ends before a series' first: then it runs again for
	// three times as long, at most twice.
	for d := 400 * time.Millisecond; ; d *= 3 {
		var err error
		rep, err = RunSemaphore(context.Background(), testdb.DSN(t), SemaphoreOptions{
			Workers: 5, Processes: 2, Permits: 2, Hold: time.Millisecond,
			Duration: d, Rounds: 1, Spawn: spawnTestWorker,
		})
		if err != nil {
			t.Fatal(err)
		}
		if everySeriesGranted(rep) || d >= 3600*time.Millisecond {
			break
		}
		t.Logf("a series granted nothing in %s: running again for %s", d, 3*d)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Series)
		if r.Grants == 0 || r.GrantsPerSec <= 0 || r.WaitMax < r.WaitP99 || r.WaitP99 < r.WaitP50 {
			t.Errorf("%s produced no numbers: %+v", r.Series, r)
		}
		if r.HeldAtOnce < 1 || r.HeldAtOnce > r.Limit || r.OverLimit != 0 || r.TokensBackwards != 0 {
			t.Errorf("%s: held at once %d (limit %d), %d grants over the limit, %d tokens backwards",
				r.Series, r.HeldAtOnce, r.Limit, r.OverLimit, r.TokensBackwards)
		}
		if r.ServerSamples == 0 || r.ServerHeldAtOnce > r.Limit {
			t.Errorf("%s: the server showed %d holders at once (limit %d) in %d samples",
				r.Series, r.ServerHeldAtOnce, r.Limit, r.ServerSamples)
		}
		if r.GrantsPerWorkerMax < r.GrantsPerWorkerMin || r.Spread < 0 {
			t.Errorf("%s: grants per worker %d–%d, spread %.2f", r.Series, r.GrantsPerWorkerMin, r.GrantsPerWorkerMax, r.Spread)
		}
	}
	if want := semaphoreSeries; !slices.Equal(names, want) {
		t.Fatalf("series = %q, want %q", names, want)
	}
	if sem, mutex := rep.Results[0], rep.Results[1]; sem.Limit != 2 || sem.Keys != 1 || mutex.Limit != 1 || mutex.Keys != 2 {
		t.Errorf("limits and keys: semaphore %d on %d, mutex keys %d on %d; want 2 on 1, 1 on 2",
			sem.Limit, sem.Keys, mutex.Limit, mutex.Keys)
	}
	if len(rep.Targets) != 3 || rep.Targets[0].Got <= 0 || len(rep.Targets[0].ByRound) != 1 || !rep.Targets[2].Met {
		t.Errorf("targets = %+v; want a ratio, a spread and no broken rule", rep.Targets)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| semaphore | 1 |", "| mutex keys | 2 |", "semaphore of 2 permits ÷ 2 mutex keys | ≥ 0.90 |",
		"farthest from the mean | ≤ ±15% |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// everySeriesGranted: each series granted before its round ended.
func everySeriesGranted(rep *SemaphoreReport) bool {
	for _, r := range rep.Results {
		if r.GrantsPerSec == 0 {
			return false
		}
	}
	return len(rep.Results) > 0
}

// The checks catch what they are for: holds past the limit on one key in
// the timelines, a token that did not rise on a mutex key, and the
// server's count of a semaphore's holders and of an exclusive lease.
func TestSemaphoreChecksCatchBrokenLimits(t *testing.T) {
	three := semaphoreRun{limit: 2, grants: []queueGrant{
		{Key: "s", Acquired: 10, Releasing: 30},
		{Key: "s", Acquired: 15, Releasing: 25},
		{Key: "s", Acquired: 20, Releasing: 40},
		{Key: "s", Acquired: 40, Releasing: 50}, // begins as one ends: not over
		{Key: "t", Acquired: 10, Releasing: 50}, // another key
	}}
	if peak, over := three.holdsAtOnce(); peak != 3 || over != 1 {
		t.Errorf("three holds of a 2-permit key: peak %d, %d over the limit; want 3, 1", peak, over)
	}
	mutex := semaphoreRun{limit: 1, grants: []queueGrant{
		{Key: "a", Token: 5, Acquired: 10, Releasing: 20},
		{Key: "b", Token: 1, Acquired: 12, Releasing: 22}, // another key's tokens are its own
		{Key: "a", Token: 4, Acquired: 20, Releasing: 30},
	}}
	if peak, over := mutex.holdsAtOnce(); peak != 1 || over != 0 || mutex.tokensBackwards() != 1 {
		t.Errorf("mutex keys: peak %d, %d over, %d tokens backwards; want 1, 0, 1", peak, over, mutex.tokensBackwards())
	}

	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close(ctx)
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"a", "b"} {
		if _, err := testdb.One(lk.Acquire(ctx, tg.pool, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 3}}, Owner: owner})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tryKey(ctx, lk, tg.pool, "mutex", "c"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		keys []string
		want int
	}{{[]string{"sem"}, 2}, {[]string{"mutex"}, 1}, {[]string{"mutex", "nobody"}, 1}, {[]string{"nobody"}, 0}} {
		var n int
		if err := tg.pool.QueryRow(ctx, holdersSQL, c.keys).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("server holders of %q = %d, want %d", c.keys, n, c.want)
		}
	}
}
