package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// worker takes keys, keeps them with a Keepalive and makes fenced writes.
type worker struct {
	id     int
	rng    *rand.Rand // used by the worker's goroutine only
	lk     *locker.Locker
	ttl    time.Duration
	keys   []string
	hot    int // keys[:hot] are hot
	unsafe bool
	// delay is the lock-delay of this worker's exclusive leases
	// (Request.LockDelay); one grant in setOneIn takes two keys at once.
	delay    time.Duration
	setOneIn int
	// permits: a mode worker's, which holds the mode keys (SemaphoreKey
	// as one of permits permits); 0 for the others. modePermits: the
	// other workers', whose sets ask for a mode key now and then
	// (setKeys), as a session worker's processes do alone (takeModeKey),
	// while mode workers hold them; 0 otherwise.
	permits, modePermits int
	// margin is the lockers' safety margin (Config.SafetyMargin).
	margin time.Duration
	// bound: this worker binds what it is granted to a session
	// (sessionWorker), which gives the lease the session's expiry.
	bound  bool
	rec    *history.Recorder
	counts *counts
	opSeq  *atomic.Int64 // numbers the fenced writes of all workers
	ends   *sync.WaitGroup
	lag    *lagMonitor

	acq, write *pgxpool.Pool
	ka         *frozenDB

	// Set by the injector.
	timeoutMs atomic.Int64
	freezeReq atomic.Int64 // nanoseconds to freeze at the next write
	holding   atomic.Pointer[string]

	errMu     sync.Mutex
	otherErrs []string
}

func (w *worker) run(ctx context.Context) {
	for gen := 1; ctx.Err() == nil; gen++ {
		owner := fmt.Sprintf("w%d.%d", w.id, gen)
		if w.setOneIn > 0 && w.rng.IntN(w.setOneIn) == 0 {
			w.takeSet(ctx, owner)
			continue
		}
		key, mode := w.pickHold()
		lease, err := w.grantIn(ctx, key, owner, mode, w.rng.IntN(2) == 0)
		if err != nil {
			w.classify("acquire", err)
			w.backOff(ctx)
			continue
		}
		if lease.Outcome != locker.Acquired && lease.Outcome != locker.Stolen {
			w.note(fmt.Sprintf("fresh owner %s got outcome %s", owner, lease.Outcome))
			continue
		}
		w.counts.Observe("grant_" + string(lease.Outcome))
		w.hold(ctx, lease)
	}
}

// grant takes key alone for owner, at once or waiting up to two TTLs, and
// records the attempt.
func (w *worker) grant(ctx context.Context, key, owner string, wait bool) (locker.Lease, error) {
	return w.grantIn(ctx, key, owner, holdMode{}, wait)
}

// grantIn is grant in mode m, recorded with the mode it asked for.
func (w *worker) grantIn(ctx context.Context, key, owner string, m holdMode, wait bool) (locker.Lease, error) {
	op := history.Op{Client: w.id, Kind: history.Grant, Key: key, Owner: owner, Mode: m.mode, Permits: m.permits,
		Bound: w.bound, Call: w.rec.Now()}
	if m.exclusive() {
		// A shared or permit lease carries no lock-delay: its key's group
		// is formed with none (store/sql/functions/11_shared.sql).
		op.LockDelay = w.delay
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if wait {
		actx, cancel = context.WithTimeout(ctx, 2*w.ttl)
	}
	lease, err := w.acquireIn(actx, key, owner, m, wait)
	cancel()
	op.Return = w.rec.Now()
	op.Result, op.Err = history.GrantResultOf(err)
	if err == nil {
		op.Granted(lease)
	}
	w.rec.Add(op)
	return lease, err
}

func (w *worker) pickKey() string {
	if w.rng.IntN(10) < 6 {
		return w.keys[w.rng.IntN(w.hot)]
	}
	return w.keys[w.hot+w.rng.IntN(len(w.keys)-w.hot)]
}

// takeSet takes two keys at once for owner (a set's Acquire, at once or
// waiting up to two TTLs), holds them and usually releases them together.
// Each key of the call is recorded as an op of its own, named by the call.
func (w *worker) takeSet(ctx context.Context, owner string) {
	// One key as any grant picks it, the other cold where there is another
	// cold key: a waiting set keeps the keys it heads the queue of promised
	// to it until it can have both, and sets of both hot keys would idle
	// them.
	first := w.pickKey()
	var others []string
	for _, pool := range [][]string{w.keys[w.hot:], w.keys} {
		for _, k := range pool {
			if k != first {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			break
		}
	}
	if len(others) == 0 {
		return // a single key: no set to take
	}
	keys := w.setKeys([]string{first, others[w.rng.IntN(len(others))]})
	leases, err := w.grantSet(ctx, keys, owner, owner, w.rng.IntN(2) == 0)
	if err != nil {
		w.classify("acquire_set", err)
		sleepCtx(ctx, time.Duration(5+w.rng.IntN(25))*time.Millisecond)
		return
	}
	w.counts.Observe("set_granted")
	w.holdAll(ctx, leases)
}

// grantSet takes keys at once for owner (at once, or waiting up to two
// TTLs) and records each key as an op of its own, in the mode it asked
// for, named by the call (set, unique to it in the history). A set all
// exclusive carries the worker's lock-delay; one that mixes modes none
// (locker.Request.LockDelay).
func (w *worker) grantSet(ctx context.Context, keys []locker.Key, owner, set string, wait bool) ([]locker.Lease, error) {
	call := w.rec.Now()
	req := locker.Request{Keys: keys, Owner: owner}
	if !mixed(keys) {
		req.LockDelay = w.delay
	}
	if wait {
		req.Wait = 2 * w.ttl
	}
	leases, err := w.lk.Acquire(ctx, w.acq, req)
	ret := w.rec.Now()
	res, msg := history.GrantResultOf(err)
	for i, key := range keys {
		op := history.Op{Client: w.id, Kind: history.Grant, Key: key.Name, Owner: owner, Set: set, Mode: key.Mode,
			Permits: key.Permits, LockDelay: req.LockDelay, Bound: w.bound, Result: res, Err: msg, Call: call, Return: ret}
		if err == nil {
			op.Granted(leases[i])
		}
		w.rec.Add(op)
	}
	return leases, err
}

// validFor is each lease's ValidFor now: called as the grant returns, the
// time it had left on arrival.
func validFor(leases []locker.Lease) []time.Duration {
	left := make([]time.Duration, len(leases))
	for i, lease := range leases {
		left[i] = lease.ValidFor()
	}
	return left
}

// lostAt is when a keepalive that ended with cause stopped trusting its
// leases: the moment it cancelled its Context (locker.Error.At), not
// when this process got round to noticing, which on a busy machine may be
// later; now, when it was stopped or its parent ended.
func lostAt(cause error, now time.Time) time.Time {
	if lost := (*locker.Error)(nil); errors.As(cause, &lost) && !lost.At.IsZero() {
		return lost.At
	}
	return now
}

// hold keeps lease while making a few fenced writes, then stops the
// keepalive and usually releases.
func (w *worker) hold(ctx context.Context, lease locker.Lease) {
	w.holdAll(ctx, []locker.Lease{lease})
}

// holdAll keeps leases (one, or a set's) with one Keepalive while making a
// few fenced writes under them, then stops the keepalive and usually
// releases them. The moment the worker stops trusting the leases is
// recorded, per lease, from the Keepalive's context.
func (w *worker) holdAll(ctx context.Context, leases []locker.Lease) {
	onArrival := validFor(leases)
	k := leases[0].Key
	w.holding.Store(&k)
	defer w.holding.Store(nil)
	ka := w.lk.Keepalive(ctx, w.ka, leases...)
	endedAtStart := ka.Context().Err() != nil
	w.ends.Add(1)
	context.AfterFunc(ka.Context(), func() {
		defer w.ends.Done()
		now := time.Now()
		last := ka.Leases()
		callStart, callEnd := w.ka.lastCall()
		cause := context.Cause(ka.Context())
		at := lostAt(cause, now)
		for i, lease := range leases {
			w.rec.EndLease(history.LeaseEnd{Client: w.id, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
				At: at, Lost: errors.Is(cause, locker.ErrLeaseLost), Remaining: last[i].ValidFor() + now.Sub(at),
				ExpiresAt: last[i].ExpiresAt, Cause: cause.Error(), OnArrival: onArrival[i], Margin: w.margin, EndedAtStart: endedAtStart,
				CallStart: callStart, CallEnd: callEnd, SchedLag: w.lag.maxSince(at.Add(-time.Second))})
		}
	})

	// A safe worker writes only while its context runs and ValidFor
	// vouches for every lease it keeps.
	p := w.newPromise(leases, false)
	writes := 1 + w.rng.IntN(4)
	for i := 0; i < writes && ctx.Err() == nil; i++ {
		if !w.unsafe && ka.Context().Err() != nil {
			break
		}
		zombie := false
		if d := time.Duration(w.freezeReq.Swap(0)); d > 0 {
			// A zombie: the process stalls (its keepalive's connection too)
			// right before a write, then resumes and writes without looking
			// at its context or ValidFor: only the fence can stop that write.
			w.ka.freezeFor(d)
			w.counts.Observe("zombie_froze")
			sleepCtx(ctx, d)
			zombie = true
		}
		wctx := ka.Context()
		if w.unsafe || zombie {
			wctx = ctx
		} else if !p.vouch(ka) {
			break
		}
		w.fencedWrite(wctx, ka.Leases()[w.rng.IntN(len(leases))])
		sleepCtx(ctx, time.Duration(w.rng.IntN(int(w.ttl/5/time.Millisecond)+1))*time.Millisecond)
	}
	convertAt := w.rec.Now()
	if next, ok := w.convert(ctx, leases, ka); ok {
		// The old lease ended as the conversion was sent, for all the
		// holder knows: it lets it go then, and keeps the new one.
		ka.Stop()
		p.letGoAt(convertAt)
		w.hold(ctx, next)
		return
	}
	lost := ka.Context().Err() != nil
	ka.Stop()
	if lost || ctx.Err() != nil || w.rng.IntN(10) >= 8 {
		p.record(false)
		return
	}
	p.record(true) // the release is sent now
	if len(leases) == 1 {
		w.release(ctx, leases[0])
	} else {
		w.releaseSet(ctx, leases)
	}
}

// releaseSet gives a set back in one Release and records it per key.
func (w *worker) releaseSet(ctx context.Context, leases []locker.Lease) {
	call := w.rec.Now()
	_, err := w.lk.Release(ctx, w.acq, leases...)
	ret := w.rec.Now()
	// ErrNotHeld names the first lease not current; the others were
	// released, but which is not said, so none is claimed released.
	res, msg := history.ResultOf(err)
	for _, lease := range leases {
		w.rec.Add(history.Op{Client: w.id, Kind: history.Release, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
			Set: lease.Owner, Lazy: true, Result: res, Err: msg, Call: call, Return: ret})
	}
	if err != nil {
		w.classify("release", err)
	}
}

// release gives lease up and records the attempt.
func (w *worker) release(ctx context.Context, lease locker.Lease) {
	// Lazy: the suite's locker keeps locker's default release, which
	// commits without waiting for the disk (see suite.go).
	op := history.Op{Client: w.id, Kind: history.Release, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
		Lazy: true, Call: w.rec.Now()}
	_, err := w.lk.Release(ctx, w.acq, lease)
	op.Return = w.rec.Now()
	op.Result, op.Err = history.ResultOf(err)
	w.rec.Add(op)
	if err != nil {
		w.classify("release", err)
	}
}

// fencedWrite writes one guarded row under lease, proving the lease with
// locker.Fence in the same transaction (unless the worker is unsafe), and
// records the attempt.
func (w *worker) fencedWrite(ctx context.Context, lease locker.Lease) history.Result {
	op := history.Op{Client: w.id, Kind: history.Write, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
		WriterSeq: w.opSeq.Add(1), Call: w.rec.Now()}
	op.Result, op.Err = w.writeGuarded(ctx, lease, op.WriterSeq)
	op.Return = w.rec.Now()
	w.rec.Add(op)
	return op.Result
}

func (w *worker) writeGuarded(ctx context.Context, lease locker.Lease, seq int64) (history.Result, string) {
	tx, err := w.write.Begin(ctx)
	if err != nil {
		w.classify("write", err)
		return history.Failed, "begin: " + err.Error()
	}
	fail := func(err error) (history.Result, string) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		w.classify("write", err)
		return history.Failed, err.Error()
	}
	if !w.unsafe {
		if err := locker.Fence(ctx, tx, lease); err != nil {
			res, msg := fail(err)
			if errors.Is(err, locker.ErrNotHeld) {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_ = w.lk.ReportStaleWrite(rctx, w.acq, lease, "guarded_write")
				cancel()
				return history.NotHeld, ""
			}
			return res, msg
		}
	}
	// "Work" inside the transaction, so some backends are caught mid-write.
	if err := sleepCtx(ctx, time.Duration(w.rng.IntN(20))*time.Millisecond); err != nil {
		return fail(err)
	}
	if err := history.WriteGuarded(ctx, tx, lease.Key, lease.Token, lease.Owner, seq); err != nil {
		return fail(err)
	}
	if err := tx.Commit(ctx); err != nil {
		// COMMIT was sent but no reply came (connection killed, server
		// restarted): either way is correct.
		w.classify("commit", err)
		return history.Unknown, "commit: " + err.Error()
	}
	w.counts.Observe("write_committed")
	return history.OK, ""
}

// classify counts an error by what it means.
func (w *worker) classify(op string, err error) {
	err = store.Interpret(err) // the worker's own SQL (the guarded writes) is not mapped yet
	var what string
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		what = "cancelled" // a wait that ended first, too (it matches ErrHeld)
	case errors.Is(err, locker.ErrHeld):
		what = "held"
	case errors.Is(err, locker.ErrNotHeld):
		what = "not_held"
	case errors.Is(err, locker.ErrQueueLost):
		what = "queue_lost"
	case errors.Is(err, locker.ErrDeadlock):
		what = "deadlock" // a waiting set's wait refused: it would have closed a cycle
	case errors.Is(err, locker.ErrStatementTimeout):
		what = "statement_timeout"
	case errors.Is(err, lockdb.ErrLockTimeout):
		what = "lock_timeout"
	case errors.Is(err, locker.ErrUnavailable):
		what = "unavailable"
	default:
		what = "other"
		w.note(op + ": " + err.Error())
	}
	w.counts.Observe(op + "_" + what)
}

func (w *worker) note(s string) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if len(w.otherErrs) < 5 {
		w.otherErrs = append(w.otherErrs, s)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
