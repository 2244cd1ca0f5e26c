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
	pool := testdb.New(t)
	res := workload.Workload{
		Workers: 24, HotKeys: 4, ColdKeys: 64,
		Duration: soakDuration(t), TTL: 150 * time.Millisecond,
		PauseOneIn: 10, Operator: true, Pruner: true, HoldWrites: 4,
		LockDelay: 100 * time.Millisecond,
	}.Run(t, pool)
	st := res.Report.Stats
	t.Logf("%s; %d rows pruned", st, res.Pruned)
	res.Report.LogViolations(t)
	if !res.Report.OK() {
		t.Fatalf("%d violations of the lock contract", len(res.Report.Violations))
	}
	// The run must have exercised what it claims to have checked.
	switch {
	case st.Grants < 20, st.Steals == 0, st.FencedWrites < 20, st.RejectedWrites == 0,
		st.ForceExpires == 0, st.Held == 0, res.Pruned == 0,
		st.DelayedGrants == 0, st.DelaysEnded == 0, st.GrantsAfterCleanRelease == 0:
		t.Fatalf("the run did not exercise every path: %s; %d pruned", st, res.Pruned)
	}
	for _, op := range res.Ops {
		// A waiting Acquire whose deadline passed mid-statement cannot know
		// whether it was granted (the checker allows either); anything else
		// unknown is a failure.
		// So can one that lost its place in the queue (a lease handed to it
		// may have lapsed unclaimed on this loaded machine).
		if op.Result == history.Unknown && (op.Kind != history.Grant ||
			!strings.Contains(op.Err, "deadline exceeded") && !strings.Contains(op.Err, locker.ErrQueueLost.Error())) {
			t.Errorf("client %d: %s %q ended with an unexpected error: %s", op.Client, op.Kind, op.Key, op.Err)
		}
	}
}
