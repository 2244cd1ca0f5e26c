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

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The guarded resource: a per-key ledger. Every fenced write bumps its key's
// seq and inserts a row with it, so seq orders a key's committed writes
// exactly (the UPDATE's row lock serialises them).
const guardedSchemaSQL = `
CREATE TABLE fault_guarded_key (lock_key text PRIMARY KEY, seq bigint NOT NULL DEFAULT 0);
CREATE TABLE fault_guarded_write (
    op_id       bigint PRIMARY KEY,
    lock_key    text   NOT NULL REFERENCES fault_guarded_key,
    owner_id    text   NOT NULL,
    fence_token bigint NOT NULL,
    worker      int    NOT NULL,
    key_seq     bigint NOT NULL,
    UNIQUE (lock_key, key_seq)
);`

const addGuardedKeySQL = `INSERT INTO fault_guarded_key (lock_key) VALUES ($1)`

const bumpSeqSQL = `UPDATE fault_guarded_key SET seq = seq + 1 WHERE lock_key = $1 RETURNING seq`

const insertWriteSQL = `
INSERT INTO fault_guarded_write (op_id, lock_key, owner_id, fence_token, worker, key_seq)
VALUES ($1, $2, $3, $4, $5, $6)`

// worker takes keys, keeps them with a Keepalive and makes fenced writes.
type worker struct {
	id     int
	rng    *rand.Rand // used by the worker's goroutine only
	lk     *locker.Locker
	ttl    time.Duration
	keys   []string
	hot    int // keys[:hot] are hot
	unsafe bool
	rec    *Recorder
	opSeq  *atomic.Int64
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
		key := w.pickKey()
		owner := fmt.Sprintf("w%d.%d", w.id, gen)
		var lease locker.Lease
		var err error
		if w.rng.IntN(2) == 0 {
			lease, err = w.lk.TryAcquire(ctx, w.acq, key, owner)
		} else {
			actx, cancel := context.WithTimeout(ctx, 2*w.ttl)
			lease, err = w.lk.Acquire(actx, w.acq, key, owner)
			cancel()
		}
		if err != nil {
			w.classify("acquire", err)
			sleepCtx(ctx, time.Duration(5+w.rng.IntN(25))*time.Millisecond)
			continue
		}
		if lease.Outcome != locker.Acquired && lease.Outcome != locker.Stolen {
			w.note(fmt.Sprintf("fresh owner %s got outcome %s", owner, lease.Outcome))
			continue
		}
		w.rec.grant(GrantRecord{Worker: w.id, Key: key, Owner: owner, Token: lease.Token})
		w.rec.Observe("grant_" + string(lease.Outcome))
		w.hold(ctx, lease)
	}
}

func (w *worker) pickKey() string {
	if w.rng.IntN(10) < 6 {
		return w.keys[w.rng.IntN(w.hot)]
	}
	return w.keys[w.hot+w.rng.IntN(len(w.keys)-w.hot)]
}

// hold keeps lease while making a few fenced writes, then stops the
// keepalive and usually releases. The moment the worker stops trusting the
// lease is recorded from the Keepalive's context.
func (w *worker) hold(ctx context.Context, lease locker.Lease) {
	onArrival := lease.ValidFor()
	k := lease.Key
	w.holding.Store(&k)
	defer w.holding.Store(nil)
	ka := w.lk.Keepalive(ctx, w.ka, lease)
	w.ends.Add(1)
	context.AfterFunc(ka.Context(), func() {
		defer w.ends.Done()
		at := time.Now()
		last := ka.Lease()
		callStart, callEnd := w.ka.lastCall()
		cause := context.Cause(ka.Context())
		w.rec.end(LeaseEnd{Worker: w.id, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
			At: at, Lost: errors.Is(cause, locker.ErrLeaseLost), Remaining: last.ValidFor(),
			ExpiresAt: last.ExpiresAt, Cause: cause.Error(), OnArrival: onArrival,
			CallStart: callStart, CallEnd: callEnd, SchedLag: w.lag.maxSince(at.Add(-time.Second))})
	})

	writes := 1 + w.rng.IntN(4)
	for i := 0; i < writes && ctx.Err() == nil; i++ {
		if !w.unsafe && ka.Context().Err() != nil {
			break
		}
		zombie := false
		if d := time.Duration(w.freezeReq.Swap(0)); d > 0 {
			// A zombie: the process stalls (its keepalive's connection too)
			// right before a write, then resumes and writes without looking
			// at its context: only the fence can stop that write.
			w.ka.freezeFor(d)
			w.rec.Observe("zombie_froze")
			sleepCtx(ctx, d)
			zombie = true
		}
		wctx := ka.Context()
		if w.unsafe || zombie {
			wctx = ctx
		}
		w.fencedWrite(wctx, ka.Lease())
		sleepCtx(ctx, time.Duration(w.rng.IntN(int(w.ttl/5/time.Millisecond)+1))*time.Millisecond)
	}
	lost := ka.Context().Err() != nil
	ka.Stop()
	if !lost && ctx.Err() == nil && w.rng.IntN(10) < 8 {
		if _, err := w.lk.Release(ctx, w.acq, lease); err != nil {
			w.classify("release", err)
		}
	}
}

// fencedWrite writes one ledger row under lease, proving the lease with
// locker.Fence in the same transaction (unless the worker is unsafe).
func (w *worker) fencedWrite(ctx context.Context, lease locker.Lease) {
	rec := WriteRecord{OpID: w.opSeq.Add(1), Worker: w.id, Key: lease.Key, Owner: lease.Owner,
		Token: lease.Token, Result: RolledBack}
	defer func() { w.rec.write(rec) }()
	tx, err := w.write.Begin(ctx)
	if err != nil {
		w.classify("write", err)
		return
	}
	fail := func(err error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		w.classify("write", err)
	}
	if !w.unsafe {
		if err := locker.Fence(ctx, tx, lease); err != nil {
			fail(err)
			if errors.Is(err, locker.ErrNotHeld) {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_ = w.lk.ReportStaleWrite(rctx, w.acq, lease, "fault_guarded_write")
				cancel()
			}
			return
		}
	}
	// "Work" inside the transaction, so some backends are caught mid-write.
	if err := sleepCtx(ctx, time.Duration(w.rng.IntN(20))*time.Millisecond); err != nil {
		fail(err)
		return
	}
	var seq int64
	if err := tx.QueryRow(ctx, bumpSeqSQL, lease.Key).Scan(&seq); err != nil {
		fail(err)
		return
	}
	if _, err := tx.Exec(ctx, insertWriteSQL, rec.OpID, lease.Key, lease.Owner, lease.Token, w.id, seq); err != nil {
		fail(err)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		rec.Result = Unknown
		w.classify("commit", err)
		return
	}
	rec.Result = Committed
	w.rec.Observe("write_committed")
}

// classify counts an error by what it means.
func (w *worker) classify(op string, err error) {
	err = store.Interpret(err) // the worker's own SQL (the guarded writes) is not mapped yet
	var what string
	switch {
	case errors.Is(err, locker.ErrHeld):
		what = "held"
	case errors.Is(err, locker.ErrNotHeld):
		what = "not_held"
	case errors.Is(err, store.ErrStatementTimeout):
		what = "statement_timeout"
	case errors.Is(err, store.ErrLockTimeout):
		what = "lock_timeout"
	case errors.Is(err, store.ErrUnavailable):
		what = "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		what = "cancelled"
	default:
		what = "other"
		w.note(op + ": " + err.Error())
	}
	w.rec.Observe(op + "_" + what)
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
