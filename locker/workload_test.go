package locker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// lockClient is the part of *locker.Locker the workload drives, so a test
// can swap in a deliberately broken implementation and see the checker
// catch it.
type lockClient interface {
	TryAcquire(ctx context.Context, db locker.DBTX, key, owner string) (locker.Lease, error)
	Acquire(ctx context.Context, db locker.DBTX, key, owner string) (locker.Lease, error)
	Renew(ctx context.Context, db locker.DBTX, lease locker.Lease) (locker.Lease, error)
	Release(ctx context.Context, db locker.DBTX, lease locker.Lease) (locker.Lease, error)
}

// workload is many clients contending for a few hot keys and many cold ones.
type workload struct {
	Workers  int
	HotKeys  int
	ColdKeys int
	Duration time.Duration
	TTL      time.Duration
	// Client defaults to a *locker.Locker with TTL and a running Notifier.
	Client lockClient
	// SkipFence makes fenced writes skip locker.Fence: the broken writer.
	SkipFence bool
	// PauseOneIn: one hold in this many pauses for 1.5×TTL before a write,
	// as a GC pause or a frozen VM would, so the writer becomes a zombie.
	PauseOneIn int
	// Operator force-expires a hot key's current lease now and then.
	Operator bool
	// Pruner deletes free rows continually (FreeFor 1ms), so grants also
	// take the new-row path while releases and prunes race with them.
	Pruner bool
	// HoldWrites is the most fenced writes per hold (at least 1).
	HoldWrites int
	// Listen is where the Notifier connects. Defaults to the pool's
	// server; a pool through a transaction pooler needs a direct one.
	Listen *pgx.ConnConfig
}

// runResult is what a run recorded and what the database kept.
type runResult struct {
	Ops    []history.Op
	Obs    history.Observed
	Report history.Report
	Pruned int64
}

// run drives w against pool (a fresh schema) and checks the result.
func (w workload) run(t *testing.T, pool *pgxpool.Pool) runResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := history.CreateGuarded(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if w.Listen == nil {
		w.Listen = pool.Config().ConnConfig
	}
	n := locker.NewNotifier(locker.ConnectWith(w.Listen))
	listening, unsubscribe := locker.Subscribe(n, "workload:listening")
	notifierDone := make(chan struct{})
	go func() { _ = n.Run(ctx); close(notifierDone) }()
	defer func() { cancel(); <-notifierDone }()
	<-listening // Run wakes every subscriber once LISTEN is in place
	unsubscribe()

	// LogGrants: the checker rebuilds the history from the event log.
	lk := newLocker(t, locker.Config{TTL: w.TTL, Notifier: n, WaitRecheck: time.Second, Actor: "operator", LogGrants: true})
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
		wg.Go(func() { w.operator(pool, lk, rec, &stop) })
	}
	var pruned atomic.Int64
	if w.Pruner {
		wg.Go(func() {
			for !stop.Load() {
				res, err := lk.Prune(context.Background(), pool, locker.PruneOptions{FreeFor: time.Millisecond, GateWait: 5 * time.Second})
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
	stop.Store(true)
	wg.Wait()

	obs, err := history.Observe(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	return runResult{Ops: ops, Obs: obs, Report: history.Check(ops, nil, obs), Pruned: pruned.Load()}
}

func (w workload) pickKey(r *rand.Rand) string {
	if w.ColdKeys == 0 || r.IntN(4) != 0 {
		return fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
	}
	return fmt.Sprintf("cold-%03d", r.IntN(w.ColdKeys))
}

// opCtx bounds one operation; the run's end is signalled by stop, not by
// cancelling operations in flight (which would leave their outcome unknown).
func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (w workload) worker(pool *pgxpool.Pool, rec *history.Recorder, stop *atomic.Bool, id int) {
	r := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	owner := fmt.Sprintf("w%02d", id)
	var writeSeq int64
	for !stop.Load() {
		key := w.pickKey(r)
		lease, ok := w.grant(pool, rec, r, id, key, owner)
		if !ok {
			continue
		}
		lost := false
		for i := range 1 + r.IntN(max(1, w.HoldWrites)) {
			if w.PauseOneIn > 0 && r.IntN(w.PauseOneIn) == 0 {
				time.Sleep(w.TTL * 3 / 2)
			}
			writeSeq++
			if res := w.fencedWrite(pool, rec, id, lease, writeSeq); res != history.OK {
				lost = true
				break
			}
			if i%2 == 1 {
				if lease, ok = w.renew(pool, rec, id, lease); !ok {
					lost = true
					break
				}
			}
		}
		_ = lost // a lost lease is released too: that must change nothing
		w.release(pool, rec, id, lease)
	}
}

func (w workload) grant(pool *pgxpool.Pool, rec *history.Recorder, r *rand.Rand, id int, key, owner string) (locker.Lease, bool) {
	ctx, cancel := opCtx()
	defer cancel()
	wait := r.IntN(2) == 0
	if wait {
		ctx, cancel = context.WithTimeout(ctx, 3*w.TTL)
		defer cancel()
	}
	op := history.Op{Client: id, Kind: history.Grant, Key: key, Owner: owner, Call: rec.Now()}
	var lease locker.Lease
	var err error
	if wait {
		lease, err = w.Client.Acquire(ctx, pool, key, owner)
	} else {
		lease, err = w.Client.TryAcquire(ctx, pool, key, owner)
	}
	op.Return = rec.Now()
	switch {
	case err == nil:
		op.Result, op.Token, op.Outcome = history.OK, lease.Token, string(lease.Outcome)
		op.ExpiresAt, op.TTL = lease.ExpiresAt, lease.TTL
	case errors.Is(err, locker.ErrHeld):
		op.Result = history.Held
	case wait && strings.Contains(err.Error(), "gave up waiting") && !strings.Contains(err.Error(), "handed to it"):
		op.Result = history.GaveUp // between attempts: no grant was in flight
	default:
		op.Result, op.Err = history.Unknown, err.Error()
	}
	rec.Add(op)
	return lease, err == nil
}

func (w workload) renew(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease) (locker.Lease, bool) {
	ctx, cancel := opCtx()
	defer cancel()
	op := history.Op{Client: id, Kind: history.Renew, Key: lease.Key, Owner: lease.Owner, Token: lease.Token, Call: rec.Now()}
	renewed, err := w.Client.Renew(ctx, pool, lease)
	op.Return = rec.Now()
	switch {
	case err == nil:
		op.Result, op.ExpiresAt, op.TTL = history.OK, renewed.ExpiresAt, renewed.TTL
	case errors.Is(err, locker.ErrNotHeld):
		op.Result = history.NotHeld
	default:
		op.Result, op.Err = history.Unknown, err.Error()
	}
	rec.Add(op)
	if err != nil {
		return lease, false
	}
	return renewed, true
}

func (w workload) release(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease) {
	ctx, cancel := opCtx()
	defer cancel()
	op := history.Op{Client: id, Kind: history.Release, Key: lease.Key, Owner: lease.Owner, Token: lease.Token, Call: rec.Now()}
	_, err := w.Client.Release(ctx, pool, lease)
	op.Return = rec.Now()
	switch {
	case err == nil:
		op.Result = history.OK
	case errors.Is(err, locker.ErrNotHeld):
		op.Result = history.NotHeld
	default:
		op.Result, op.Err = history.Unknown, err.Error()
	}
	rec.Add(op)
}

// fencedWrite is one guarded transaction: Fence, number the commit, write.
func (w workload) fencedWrite(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease, seq int64) history.Result {
	ctx, cancel := opCtx()
	defer cancel()
	op := history.Op{Client: id, Kind: history.Write, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
		WriterSeq: seq, Call: rec.Now()}
	op.Result, op.Err = func() (history.Result, string) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return history.Failed, "begin: " + err.Error()
		}
		defer tx.Rollback(context.Background())
		if !w.SkipFence {
			if err := locker.Fence(ctx, tx, lease); err != nil {
				if errors.Is(err, locker.ErrNotHeld) {
					return history.NotHeld, ""
				}
				return history.Failed, err.Error() // rolled back: nothing written
			}
		}
		if err := history.WriteGuarded(ctx, tx, lease.Key, lease.Token, lease.Owner, seq); err != nil {
			return history.Failed, err.Error()
		}
		if err := tx.Commit(ctx); err != nil {
			return history.Unknown, "commit: " + err.Error()
		}
		return history.OK, ""
	}()
	op.Return = rec.Now()
	rec.Add(op)
	return op.Result
}

// operator force-expires the current lease of a random hot key now and then,
// with the token it read, as the console's operator would.
func (w workload) operator(pool *pgxpool.Pool, lk *locker.Locker, rec *history.Recorder, stop *atomic.Bool) {
	r := rand.New(rand.NewPCG(99, uint64(time.Now().UnixNano())))
	for !stop.Load() {
		time.Sleep(time.Duration(50+r.IntN(100)) * time.Millisecond)
		key := fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
		ctx, cancel := opCtx()
		row, found, err := store.Get(ctx, pool, key)
		if err == nil && found && row.State() != store.StateFree {
			op := history.Op{Client: -1, Kind: history.ForceExpire, Key: key, Token: row.Token, Call: rec.Now()}
			_, err = lk.ForceExpire(ctx, pool, key, row.Token)
			op.Return = rec.Now()
			switch {
			case err == nil:
				op.Result = history.OK
			case errors.Is(err, locker.ErrNotHeld):
				op.Result = history.NotHeld
			default:
				op.Result, op.Err = history.Unknown, err.Error()
			}
			rec.Add(op)
		}
		cancel()
	}
}
