package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// spawnTestWorker runs this test binary as a queue worker (see TestMain).
func spawnTestWorker(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), queueWorkerEnv+"=1")
	return cmd
}

// TestQueueScenario runs every series briefly with waiters in two real
// processes and checks what must hold whatever the machine's speed: every
// series handed the key over, no two holds overlapped, tokens rose, and
// PostgreSQL's FIFO lock manager served every waiter. No timing is asserted.
func TestQueueScenario(t *testing.T) {
	ctx := context.Background()
	var rep *QueueReport
	got := map[string]QueueResult{}
	// A machine loaded by other tests can slow the hand-offs so much that
	// a short round ends before every waiter's turn came: then it runs
	// again for three times as long, at most twice.
	for d := 400 * time.Millisecond; ; d *= 3 {
		var err error
		rep, err = RunQueue(ctx, testdb.DSN(t), QueueOptions{
			Waiters:   []int{6},
			Processes: 2,
			Hold:      time.Millisecond,
			Duration:  d,
			Rounds:    1,
			Spawn:     spawnTestWorker,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			got[r.Series] = r
		}
		if everyWaiterServed(got) || d >= 3600*time.Millisecond {
			break
		}
		t.Logf("a waiter had no turn in %s: running again for %s", d, 3*d)
	}
	for _, s := range queueSeries {
		r, ok := got[s]
		if !ok {
			t.Fatalf("no result for series %s: %+v", s, rep.Results)
		}
		if r.Grants == 0 || r.HandOffsPerSec <= 0 || r.WaitMax < r.WaitP99 || r.WaitP99 < r.WaitP50 {
			t.Errorf("%s produced no numbers: %+v", s, r)
		}
		if r.Overlaps != 0 {
			t.Errorf("%s: %d overlapping holds or tokens out of order", s, r.Overlaps)
		}
	}
	if r := got[QueueAdvisory]; r.GrantsPerWaiterMin == 0 {
		t.Errorf("pg_advisory_lock left a waiter without a grant: %+v", r)
	}
	// The fair queue serves every waiter, and a hand-off is at least the
	// release that hands off (the next enqueue is the other).
	if r := got[QueueLocker]; r.GrantsPerWaiterMin == 0 || r.TransactionsPerHandOff < 1 {
		t.Errorf("locker: a waiter without a grant, or %.2f transactions per hand-off (want at least 1): %+v",
			r.TransactionsPerHandOff, r)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	// The floors are one connection: one grant per hold, nobody waiting.
	for _, s := range []string{QueueFloor, QueueNotifyFloor} {
		if r := got[s]; r.TransactionsPerHandOff != 1 || r.GrantsPerWaiterMin != r.GrantsPerWaiterMax {
			t.Errorf("%s: %.2f transactions per hand-off (want 1) or more than one waiter: %+v",
				s, r.TransactionsPerHandOff, r)
		}
	}
	// The backend counts are lower bounds here: other tests' backends share
	// the database. Each series' commits count, and the notify floor's
	// listeners read the queue besides.
	for _, s := range queueSeries {
		if r := got[s]; r.BackendTransactionsPerHandOff < 1 {
			t.Errorf("%s: %.2f backend transactions per hand-off (want at least 1): %+v", s, r.BackendTransactionsPerHandOff, r)
		}
	}
	if r := got[QueueNotifyFloor]; r.Listeners != 2 || r.BackendTransactionsPerHandOff <= 1 {
		t.Errorf("notify floor: %d listeners (want 2), %.2f backend transactions per commit (want more than 1): %+v",
			r.Listeners, r.BackendTransactionsPerHandOff, r)
	}
	var vsFloor float64
	for _, q := range rep.Ratios() {
		if q.Series == QueueLocker {
			vsFloor = q.VsFloor
		}
	}
	if vsFloor <= 0 {
		t.Errorf("no locker ÷ durable floor ratio: %+v", rep.Ratios())
	}
	for _, want := range []string{"| pg_advisory_lock | 6 |", "| locker | 6 |", "| durable floor | 1 |", "| notify floor | 1 |", "locker at 6 waiters:", "× the durable floor's", "1 + listeners = 3"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}

// everyWaiterServed: both queues gave every waiter a turn.
func everyWaiterServed(got map[string]QueueResult) bool {
	return got[QueueAdvisory].GrantsPerWaiterMin > 0 && got[QueueLocker].GrantsPerWaiterMin > 0
}

// TestQueueOverlapsCatchBrokenExclusion shows the checker the scenario
// relies on catches a hold that began before the previous one ended, and a
// token that did not rise.
func TestQueueOverlapsCatchBrokenExclusion(t *testing.T) {
	ok := queueRun{grants: []queueGrant{
		{Token: 1, Acquired: 10, Releasing: 20},
		{Token: 2, Acquired: 20, Releasing: 30},
		{Token: 3, Acquired: 31, Releasing: 40},
	}}
	if n := ok.overlaps(); n != 0 {
		t.Fatalf("back-to-back holds counted as %d overlaps", n)
	}
	overlapping := queueRun{grants: []queueGrant{
		{Token: 1, Acquired: 10, Releasing: 20},
		{Token: 2, Acquired: 15, Releasing: 30},
	}}
	if n := overlapping.overlaps(); n != 1 {
		t.Errorf("overlapping holds: %d overlaps, want 1", n)
	}
	backwards := queueRun{grants: []queueGrant{
		{Token: 5, Acquired: 10, Releasing: 20},
		{Token: 4, Acquired: 21, Releasing: 30},
	}}
	if n := backwards.overlaps(); n != 1 {
		t.Errorf("token going backwards: %d overlaps, want 1", n)
	}
}

func TestUnfairness(t *testing.T) {
	for _, c := range []struct {
		counts []int
		want   float64
	}{
		{[]int{10, 10, 10}, 0},
		{[]int{8, 10, 12}, 0.2},
		{[]int{0, 20}, 1},
		{nil, 0},
	} {
		if got := unfairness(c.counts); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("unfairness(%v) = %v, want %v", c.counts, got, c.want)
		}
	}
}
