// Package workload drives lock clients against a database the way busy
// services would — many workers on a few hot keys and many cold ones,
// waiting and trying acquires, readers sharing a key that writers take
// alone, holders of a semaphore's permits, renewals, fenced writes,
// zombies that pause past their TTL, an operator force-expiring leases, a
// pruner deleting free rows — records every call in a history.Recorder,
// and checks the run with history.Check.
//
// locker's concurrency test runs it directly against PostgreSQL, the
// deployment tests through PgBouncer, and its own tests prove that the check
// fails on deliberately broken clients.
package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// Client is the part of *locker.Locker the workload drives, so a test can
// swap in a deliberately broken implementation and see the checker catch it.
type Client interface {
	TryAcquire(ctx context.Context, db locker.DBTX, key, owner string) (locker.Lease, error)
	Acquire(ctx context.Context, db locker.DBTX, key, owner string) (locker.Lease, error)
	Renew(ctx context.Context, db locker.DBTX, lease locker.Lease) (locker.Lease, error)
	Release(ctx context.Context, db locker.DBTX, lease locker.Lease) (locker.Lease, error)
}

// SetClient is the part of *locker.Locker that takes and gives back several
// keys at once, all or none.
type SetClient interface {
	TryAcquireAll(ctx context.Context, db locker.DBTX, keys []string, owner string) ([]locker.Lease, error)
	AcquireAll(ctx context.Context, db locker.DBTX, keys []string, owner string) ([]locker.Lease, error)
	ReleaseAll(ctx context.Context, db locker.DBTX, leases []locker.Lease) error
}

// Workload is many clients contending for a few hot keys and many cold ones.
type Workload struct {
	Workers  int
	HotKeys  int
	ColdKeys int
	Duration time.Duration
	TTL      time.Duration
	// Client defaults to a *locker.Locker with TTL and a running Notifier.
	Client Client
	// SkipFence makes fenced writes skip locker.Fence: the broken writer.
	SkipFence bool
	// PauseOneIn: one hold in this many pauses for 1.5×TTL before a write,
	// as a GC pause or a frozen VM would, so the writer becomes a zombie.
	PauseOneIn int
	// Operator force-expires or force-releases a hot key's current lease
	// now and then, and ends a lock-delay early when it finds one.
	Operator bool
	// Pruner deletes free rows continually (FreeFor 1ms), so grants also
	// take the new-row path while releases and prunes race with them.
	Pruner bool
	// HoldWrites is the most fenced writes per hold (at least 1).
	HoldWrites int
	// LockDelay: the leases of odd-numbered workers carry this lock-delay
	// (locker's Config.LockDelay): when one ends without its holder's
	// release (it expires, an operator force-expires it), nobody may be
	// granted its key for that long. With the default Client they use a
	// Locker of their own; a given Client serves them as it is, and their
	// leases are recorded as carrying the delay all the same, so a client
	// that ignores it is caught.
	LockDelay time.Duration
	// SetOneIn: one hold in this many takes a set of 2 or 3 keys at once
	// (TryAcquireAll or a waiting AcquireAll), writes to each under its
	// lease and gives them back with ReleaseAll. The Client must be a
	// SetClient.
	SetOneIn int
	// ModeOneIn: one hold in this many is on a key of another mode: the
	// shared key, taken shared (TryAcquireShared or a polling
	// AcquireShared) or, one time in five, alone (TryAcquire or a queued
	// Acquire) beside the readers; or the semaphore key, one of its
	// Permits permits (TryAcquirePermit or AcquirePermit). The operator
	// forces those keys' holders too, each by its own token. The Client
	// must be a ModeClient.
	ModeOneIn int
	// Permits is the semaphore key's permits. Defaults to 3.
	Permits int
	// Listen is where the Notifier connects. Defaults to the pool's
	// server; a pool through a transaction pooler needs a direct one.
	Listen *pgx.ConnConfig
	// MinGrants: the run goes on past Duration until the workers were
	// granted at least this many leases, for up to four times Duration
	// more: on a loaded machine a short run may do too little to check.
	MinGrants int

	delayed Client // the client of the workers whose leases carry LockDelay
}

// Result is what a run recorded and its check against what the database kept.
type Result struct {
	Ops    []history.Op
	Report history.Report
	Pruned int64
}

// Run drives w against pool (a fresh schema) and checks the result.
func (w Workload) Run(t testing.TB, pool *pgxpool.Pool) Result {
	t.Helper()
	ctx := context.Background()
	if err := history.CreateGuarded(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if w.Listen == nil {
		w.Listen = pool.Config().ConnConfig
	}
	n := StartNotifier(t, w.Listen)
	// LogGrants: the checker rebuilds the history from the event log.
	lk, err := locker.New(locker.Config{TTL: w.TTL, Notifier: n, WaitRecheck: time.Second, Actor: "operator", LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	w.delayed = w.Client
	if w.Client == nil {
		w.Client = lk
		w.delayed = lk
		if w.LockDelay > 0 {
			if w.delayed, err = locker.New(locker.Config{TTL: w.TTL, Notifier: n, WaitRecheck: time.Second, Actor: "operator",
				LogGrants: true, LockDelay: w.LockDelay}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []Client{w.Client, w.delayed} {
		if _, ok := c.(SetClient); w.SetOneIn > 0 && !ok {
			t.Fatalf("workload: SetOneIn needs a Client that takes sets (%T does not)", c)
		}
		if _, ok := c.(ModeClient); w.ModeOneIn > 0 && !ok {
			t.Fatalf("workload: ModeOneIn needs a Client that takes keys shared (%T does not)", c)
		}
	}
	rec := history.NewRecorder()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for id := range w.Workers {
		wg.Go(func() { w.worker(pool, rec, &stop, id) })
	}
	if w.Operator {
		wg.Go(func() { w.operator(t, pool, lk, rec, &stop) })
	}
	var pruned atomic.Int64
	if w.Pruner {
		wg.Go(func() {
			for !stop.Load() {
				res, err := lk.Prune(ctx, pool, locker.PruneOptions{FreeFor: time.Millisecond, GateWait: 5 * time.Second})
				if err != nil {
					t.Errorf("prune: %v", err)
					return
				}
				pruned.Add(res.Locks)
				testdb.Pace(20 * time.Millisecond)
			}
		})
	}
	testdb.Pace(w.Duration)
	if w.MinGrants > 0 { // and on until MinGrants, for at most four runs more
		testdb.Within(4*w.Duration, func() bool { return grants(rec) >= w.MinGrants })
	}
	stop.Store(true)
	wg.Wait()

	obs, err := history.Observe(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	return Result{Ops: ops, Report: history.Check(ops, nil, nil, obs), Pruned: pruned.Load()}
}

// grants counts the leases granted so far.
func grants(rec *history.Recorder) int {
	n := 0
	for _, op := range rec.Ops() {
		if op.Kind == history.Grant && op.Result == history.OK {
			n++
		}
	}
	return n
}

func (w Workload) pickKey(r *rand.Rand) string {
	if w.ColdKeys == 0 || r.IntN(4) != 0 {
		return fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
	}
	return fmt.Sprintf("cold-%03d", r.IntN(w.ColdKeys))
}

// pickSet picks a set of n distinct keys: one as pickKey does, the others
// cold (when there are cold keys): a waiting set keeps every key it heads
// the queue of promised to it until it can have them all, so sets of hot
// keys alone would idle the hot keys most of the run.
func (w Workload) pickSet(r *rand.Rand, n int) []string {
	keys := []string{w.pickKey(r)}
	for try := 0; len(keys) < n && try < 4*n; try++ {
		k := fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
		if w.ColdKeys > 0 {
			k = fmt.Sprintf("cold-%03d", r.IntN(w.ColdKeys))
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}
