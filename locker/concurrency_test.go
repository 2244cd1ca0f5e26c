package locker_test

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
)

var soakFlag = flag.Duration("locker.soak", 0,
	"how long TestConcurrentHistory runs (default 3s; also LOCKCTL_SOAK=2m)")

func soakDuration(t *testing.T) time.Duration {
	if *soakFlag > 0 {
		return *soakFlag
	}
	if v := os.Getenv("LOCKCTL_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LOCKCTL_SOAK=%q: %v", v, err)
		}
		return d
	}
	return 3 * time.Second
}

// TestConcurrentHistory runs many clients against 4 hot keys and many cold
// ones — TryAcquire and waiting Acquire with a Notifier, renewals, releases,
// half the leases with a lock-delay, zombies that pause past their TTL, an
// operator force-expiring and force-releasing hot keys and ending
// lock-delays early, a pruner deleting free rows — with every holder making
// fenced writes, and checks the recorded history and the database's records
// with history.Check (internal/workload, whose tests show the check failing on
// broken clients). Parallel with the other tests: its checks are of
// correctness, not timing, and the only latency test (TestAcquireWakesOnRelease)
// runs alone before the parallel ones start.
func TestConcurrentHistory(t *testing.T) {
	t.Parallel()
	runCovering(t, workload.Workload{
		Workers: 24, HotKeys: 4, ColdKeys: 64,
		Duration: soakDuration(t), TTL: 150 * time.Millisecond,
		PauseOneIn: 10, Operator: true, Pruner: true, HoldWrites: 4,
		LockDelay: 100 * time.Millisecond,
	}, func(st history.Stats, res workload.Result) bool {
		return st.Grants >= 20 && st.Steals > 0 && st.FencedWrites >= 20 && st.RejectedWrites > 0 &&
			st.ForceExpires > 0 && st.Held > 0 && res.Pruned > 0 &&
			st.DelayedGrants > 0 && st.GrantsAfterCleanRelease > 0
	})
}

// TestConcurrentHistoryWithSets is the same run with one hold in four a set
// of 2 or 3 keys taken at once (one key picked as any, the others cold, by
// TryAcquireAll or a waiting AcquireAll, given back with ReleaseAll), the
// operator left out: the checker must find every set granted in one
// transaction, all of it or nothing. A run of its own, because waiting sets
// keep the keys they head the queue of promised until they can have them
// all, which slows the hot keys down for everyone. Not parallel: beside
// TestConcurrentHistory, each would have half the machine, too little for
// the other's paths.
func TestConcurrentHistoryWithSets(t *testing.T) {
	runCovering(t, workload.Workload{
		Workers: 24, HotKeys: 4, ColdKeys: 64,
		Duration: soakDuration(t), TTL: 150 * time.Millisecond,
		PauseOneIn: 10, Pruner: true, HoldWrites: 4,
		SetOneIn: 4, LockDelay: 100 * time.Millisecond,
	}, func(st history.Stats, _ workload.Result) bool {
		return st.Grants >= 20 && st.SetGrants > 0 && st.SetsRefused > 0 && st.DelayedGrants > 0
	})
}

// TestConcurrentHistoryWithModes is TestConcurrentHistory with one hold
// in three on a key of another mode: readers sharing a key (TryAcquireShared,
// a polling AcquireShared) that writers take alone now and then (TryAcquire,
// a queued Acquire), and holders of a semaphore's 3 permits
// (TryAcquirePermit, AcquirePermit), renewing, releasing, pausing past
// their TTL and making fenced writes like the others, while the operator
// forces single holders by their tokens. The checker must find no more
// than 3 permits held at once, no writer beside a reader, tokens rising
// from readers to writers and back, and no write under a lease after a
// grant that conflicts with it; the run must have granted readers,
// permits, and a writer after readers.
func TestConcurrentHistoryWithModes(t *testing.T) {
	t.Parallel()
	runCovering(t, workload.Workload{
		Workers: 24, HotKeys: 4, ColdKeys: 64,
		Duration: soakDuration(t), TTL: 150 * time.Millisecond,
		PauseOneIn: 10, Operator: true, Pruner: true, HoldWrites: 4,
		LockDelay: 100 * time.Millisecond, ModeOneIn: 3, Permits: 3,
	}, func(st history.Stats, _ workload.Result) bool {
		return st.SharedGrants >= 10 && st.PermitGrants >= 10 && st.ExclusiveAfterHolders > 0 &&
			st.Steals > 0 && st.ForceExpires > 0 && st.RejectedWrites > 0
	})
}

// runCovering runs w on a schema of its own and checks its history; the
// run must also have exercised what it claims to have checked (covered).
// A machine loaded by other tests can end a run before it has: then it
// runs again, on a fresh schema, for twice as long, at most twice. Every
// run's history is checked all the same.
func runCovering(t *testing.T, w workload.Workload, covered func(history.Stats, workload.Result) bool) {
	t.Helper()
	for try := 1; ; try++ {
		res := w.Run(t, testdb.New(t))
		st := checkHistory(t, res)
		if covered(st, res) {
			return
		}
		if try == 3 {
			t.Fatalf("the run did not exercise every path in %s: %s; %d pruned", w.Duration, st, res.Pruned)
		}
		t.Logf("the run did not exercise every path in %s; running again for %s", w.Duration, 2*w.Duration)
		w.Duration *= 2
	}
}

// checkHistory fails t on every violation of the lock contract in res and
// on every operation that ended with an error it should not have, and
// returns what the check covered.
func checkHistory(t *testing.T, res workload.Result) history.Stats {
	t.Helper()
	st := res.Report.Stats
	t.Logf("%s; %d rows pruned", st, res.Pruned)
	res.Report.LogViolations(t)
	if !res.Report.OK() {
		t.Fatalf("%d violations of the lock contract", len(res.Report.Violations))
	}
	for _, op := range res.Ops {
		// A waiting Acquire whose deadline passed mid-statement cannot know
		// whether it was granted (the checker allows either); anything else
		// unknown is a failure. (When its statement outlives the deadline
		// by the locker's grace too, it is cancelled: "context canceled".
		// The workload cancels nothing itself.)
		// So can one that lost its place in the queue (a lease handed to it
		// may have lapsed unclaimed on this loaded machine), and a waiting
		// set whose handed keys lapsed before its claim (AcquireAll names
		// the key it could not claim with a *NotHeldError).
		lapsedSet := op.Set != "" && strings.Contains(op.Err, "is not the current lease")
		if op.Result == history.Unknown && (op.Kind != history.Grant ||
			!strings.Contains(op.Err, "deadline exceeded") && !strings.Contains(op.Err, "context canceled") &&
				!strings.Contains(op.Err, locker.ErrQueueLost.Error()) && !lapsedSet) {
			t.Errorf("client %d: %s %q ended with an unexpected error: %s", op.Client, op.Kind, op.Key, op.Err)
		}
	}
	return st
}
