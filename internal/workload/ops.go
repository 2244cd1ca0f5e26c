package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// opCtx bounds one operation; the run's end is signalled by stop, not by
// cancelling operations in flight (which would leave their outcome unknown).
func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (w Workload) worker(pool *pgxpool.Pool, rec *history.Recorder, stop *atomic.Bool, id int) {
	r := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	owner := fmt.Sprintf("w%02d", id)
	c := w.clientOf(id)
	var writeSeq int64
	for set := 1; !stop.Load(); {
		if w.SetOneIn > 0 && r.IntN(w.SetOneIn) == 0 {
			w.holdSet(pool, rec, r, id, c, fmt.Sprintf("%s.set%d", owner, set), &writeSeq)
			set++
			continue
		}
		key, mode := w.pickHold(r)
		lease, ok := w.grant(pool, rec, r, id, c, key, owner, mode)
		if !ok {
			continue
		}
		for i := range 1 + r.IntN(max(1, w.HoldWrites)) {
			if w.PauseOneIn > 0 && r.IntN(w.PauseOneIn) == 0 {
				time.Sleep(w.TTL * 3 / 2)
			}
			writeSeq++
			if res := w.fencedWrite(pool, rec, id, lease, writeSeq); res != history.OK {
				break
			}
			if i%2 == 1 {
				if lease, ok = w.renew(pool, rec, id, lease); !ok {
					break
				}
			}
		}
		// Released even when lost: releasing a lost lease must change nothing.
		w.release(pool, rec, id, lease)
	}
}

// workerClient is the client a worker takes its keys with, and the
// lock-delay its exclusive leases carry.
type workerClient struct {
	Client
	delay time.Duration
}

// clientOf is worker id's client: odd-numbered workers' leases carry
// LockDelay.
func (w Workload) clientOf(id int) workerClient {
	if w.LockDelay > 0 && id%2 == 1 {
		return workerClient{w.Client, w.LockDelay}
	}
	return workerClient{w.Client, 0}
}

// grant takes key for owner in mode m, at once or waiting, and records
// the attempt with the mode it asked for.
func (w Workload) grant(pool *pgxpool.Pool, rec *history.Recorder, r *rand.Rand, id int, c workerClient, key, owner string,
	m holdMode) (locker.Lease, bool) {
	ctx, cancel := opCtx()
	defer cancel()
	wait := r.IntN(2) == 0
	if wait {
		ctx, cancel = context.WithTimeout(ctx, 3*w.TTL)
		defer cancel()
	}
	op := history.Op{Client: id, Kind: history.Grant, Key: key, Owner: owner, Mode: m.mode, Permits: m.permits, Call: rec.Now()}
	if m.exclusive() {
		// A shared or permit lease carries no lock-delay: its key's group
		// is formed with none (store/sql/functions/11_shared.sql).
		op.LockDelay = c.delay
	}
	lease, err := acquireIn(ctx, c, pool, key, owner, m, wait)
	op.Return = rec.Now()
	op.Result, op.Err = history.GrantResultOf(err)
	if err == nil {
		op.Granted(lease)
	}
	rec.Add(op)
	return lease, err == nil
}

func (w Workload) renew(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease) (locker.Lease, bool) {
	ctx, cancel := opCtx()
	defer cancel()
	op := history.Op{Client: id, Kind: history.Renew, Key: lease.Key, Owner: lease.Owner, Token: lease.Token, Call: rec.Now()}
	renewed, err := one(w.Client.Renew(ctx, pool, lease))
	op.Return = rec.Now()
	op.Result, op.Err = history.ResultOf(err)
	if err == nil {
		op.Renewed(renewed)
	}
	rec.Add(op)
	if err != nil {
		return lease, false
	}
	return renewed, true
}

func (w Workload) release(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease) {
	ctx, cancel := opCtx()
	defer cancel()
	op := history.Op{Client: id, Kind: history.Release, Key: lease.Key, Owner: lease.Owner, Token: lease.Token, Call: rec.Now()}
	_, err := w.Client.Release(ctx, pool, lease)
	op.Return = rec.Now()
	op.Result, op.Err = history.ResultOf(err)
	rec.Add(op)
}

// fencedWrite is one guarded transaction: Fence, number the commit, write.
func (w Workload) fencedWrite(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease, seq int64) history.Result {
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

// operator force-expires or force-releases the current lease of a random
// hot key (or a holder of a mode key) now and then, with the token it
// read, as the console's operator would, and ends a key's lock-delay early
// when it finds one.
func (w Workload) operator(t testing.TB, pool *pgxpool.Pool, oper operator.Operator, rec *history.Recorder, stop *atomic.Bool) {
	r := rand.New(rand.NewPCG(99, uint64(time.Now().UnixNano())))
	endNext := false
	for !stop.Load() {
		time.Sleep(time.Duration(25+r.IntN(50)) * time.Millisecond)
		key := fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
		if w.ModeOneIn > 0 && r.IntN(3) == 0 {
			key = []string{sharedKey, semaphoreKey}[r.IntN(2)]
		}
		ctx, cancel := opCtx()
		row, found, err := store.Get[lockdb.LockInfo](ctx, pool, key)
		switch {
		case err != nil || !found:
		case row.Mode != locker.ModeExclusive && row.State() != lockdb.StateFree:
			w.forceHolder(ctx, pool, oper, rec, r, key)
		case row.State() == lockdb.StateDelayed:
			w.endDelay(t, ctx, pool, oper, key)
		case row.State() != lockdb.StateFree:
			op := history.Op{Client: -1, Kind: history.ForceExpire, Key: key, Token: row.Token, Call: rec.Now()}
			if r.IntN(4) != 0 {
				_, err = oper.ForceExpire(ctx, pool, key, row.Token)
			} else { // one force in four is a release
				op.Kind = history.ForceRelease
				_, err = oper.ForceRelease(ctx, pool, key, row.Token)
			}
			op.Return = rec.Now()
			op.Result, op.Err = history.ResultOf(err)
			rec.Add(op)
			if err == nil && row.LockDelay > 0 {
				// Every other delay a force starts (the first one first) is
				// ended at once, as by an operator who knows the holder is
				// gone; the others run their course.
				if endNext = !endNext; endNext {
					w.endDelay(t, ctx, pool, oper, key)
				}
			}
		}
		cancel()
	}
}

// holdSet takes 2 or 3 keys at once for owner (a name of its own: a set's
// owner holds nothing else, so every grant to it is the set's), makes
// fenced writes to each under its lease, renewing them now and then, and
// gives them back with one Release. Every key of a set call is recorded
// as an op of its own, named by the call.
func (w Workload) holdSet(pool *pgxpool.Pool, rec *history.Recorder, r *rand.Rand, id int, c workerClient, owner string, writeSeq *int64) {
	keys := w.pickSet(r, 2+r.IntN(2))
	ctx, cancel := opCtx()
	defer cancel()
	wait := r.IntN(2) == 0
	if wait {
		ctx, cancel = context.WithTimeout(ctx, 3*w.TTL)
		defer cancel()
	}
	call := rec.Now()
	req := locker.Request{Keys: locker.Keys(keys...), Owner: owner, LockDelay: c.delay}
	if wait {
		req.Wait = locker.WaitForever
	}
	leases, err := c.Acquire(ctx, pool, req)
	ret := rec.Now()
	res, msg := history.GrantResultOf(err)
	for i, key := range keys {
		op := history.Op{Client: id, Kind: history.Grant, Key: key, Owner: owner, Set: owner, LockDelay: c.delay,
			Result: res, Err: msg, Call: call, Return: ret}
		if err == nil {
			op.Granted(leases[i])
		}
		rec.Add(op)
	}
	if err != nil {
		return
	}
	for i := range 1 + r.IntN(max(1, w.HoldWrites)) {
		if w.PauseOneIn > 0 && r.IntN(w.PauseOneIn) == 0 {
			time.Sleep(w.TTL * 3 / 2)
		}
		lost := false
		for j := range leases {
			*writeSeq++
			lost = lost || w.fencedWrite(pool, rec, id, leases[j], *writeSeq) != history.OK
			if !lost && i%2 == 1 {
				leases[j], lost = w.renewLost(pool, rec, id, leases[j])
			}
		}
		if lost {
			break
		}
	}
	w.releaseSet(pool, rec, id, owner, leases)
}

// renewLost is renew, reporting whether the lease was lost.
func (w Workload) renewLost(pool *pgxpool.Pool, rec *history.Recorder, id int, lease locker.Lease) (locker.Lease, bool) {
	renewed, ok := w.renew(pool, rec, id, lease)
	return renewed, !ok
}

// releaseSet gives a set back with one Release (even when some leases
// were lost: the others are released all the same), recorded per key.
func (w Workload) releaseSet(pool *pgxpool.Pool, rec *history.Recorder, id int, set string, leases []locker.Lease) {
	ctx, cancel := opCtx()
	defer cancel()
	call := rec.Now()
	_, err := w.Client.Release(ctx, pool, leases...)
	ret := rec.Now()
	// ErrNotHeld: some leases were not current (the error names the
	// first) and the others were released; which is not said, so every
	// key is recorded as refused, which claims nothing about the log.
	res, msg := history.ResultOf(err)
	for _, lease := range leases {
		rec.Add(history.Op{Client: id, Kind: history.Release, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
			Set: set, Result: res, Err: msg, Call: call, Return: ret})
	}
}

// endDelay ends key's lock-delay, if it is in one.
func (w Workload) endDelay(t testing.TB, ctx context.Context, pool *pgxpool.Pool, oper operator.Operator, key string) {
	if _, err := oper.EndDelay(ctx, pool, key, "workload"); err != nil && !errors.Is(err, operator.ErrNotDelayed) {
		t.Errorf("end the delay of %q: %v", key, err)
	}
}
