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
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// Client is the part of *locker.Locker the workload drives, so a test can
// swap in a deliberately broken implementation and see the checker catch it.
type Client interface {
	Acquire(ctx context.Context, db locker.DBTX, req locker.Request) ([]locker.Lease, error)
	Renew(ctx context.Context, db locker.DBTX, leases ...locker.Lease) ([]locker.Lease, error)
	Release(ctx context.Context, db locker.DBTX, leases ...locker.Lease) ([]locker.Lease, error)
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
	// LockDelay: the exclusive leases of odd-numbered workers carry this
	// lock-delay (locker's Request.LockDelay): when one ends without its
	// holder's release (it expires, an operator force-expires it), nobody
	// may be granted its key for that long. A client that ignores it is
	// caught: the leases are recorded as carrying it.
	LockDelay time.Duration
	// SetOneIn: one hold in this many takes a set of 2 or 3 keys at once
	// (at once or waiting), writes to each under its lease and gives them
	// back with one Release.
	SetOneIn int
	// ModeOneIn: one hold in this many is on a key of another mode: the
	// shared key, taken shared or, one time in five, alone beside the
	// readers; or the semaphore key, one of its Permits permits (each at
	// once or waiting). The operator forces those keys' holders too, each
	// by its own token.
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
	oper, err := operator.New("operator")
	if err != nil {
		t.Fatal(err)
	}
	if w.Client == nil {
		w.Client = lk
	}
	rec := history.NewRecorder()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for id := range w.Workers {
		wg.Go(func() { w.worker(pool, rec, &stop, id) })
	}
	if w.Operator {
		wg.Go(func() { w.operator(t, pool, oper, rec, &stop) })
	}
	var pruned atomic.Int64
	if w.Pruner {
		wg.Go(func() {
			for !stop.Load() {
				res, err := oper.Prune(ctx, pool, operator.PruneOptions{FreeFor: time.Millisecond, GateWait: 5 * time.Second})
				if err != nil {
					t.Errorf("prune: %v", err)
					return
				}
				pruned.Add(res.Locks)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	time.Sleep(w.Duration)
	for deadline := time.Now().Add(4 * w.Duration); w.MinGrants > 0 && time.Now().Before(deadline) && grants(rec) < w.MinGrants; {
		time.Sleep(w.Duration / 20)
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
