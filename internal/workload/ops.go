package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
)

// opCtx bounds one operation; the run's end is signalled by stop, not by
// cancelling operations in flight (which would leave their outcome unknown).
func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (w Workload) worker(pool *pgxpool.Pool, rec *history.Recorder, stop *atomic.Bool, id int) {
	r := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	owner := fmt.Sprintf("w%02d", id)
	var writeSeq int64
	for !stop.Load() {
		key := w.pickKey(r)
		lease, ok := w.grant(pool, rec, r, id, key, owner)
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

func (w Workload) grant(pool *pgxpool.Pool, rec *history.Recorder, r *rand.Rand, id int, key, owner string) (locker.Lease, bool) {
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
	renewed, err := w.Client.Renew(ctx, pool, lease)
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

// operator force-expires the current lease of a random hot key now and then,
// with the token it read, as the console's operator would.
func (w Workload) operator(pool *pgxpool.Pool, lk *locker.Locker, rec *history.Recorder, stop *atomic.Bool) {
	r := rand.New(rand.NewPCG(99, uint64(time.Now().UnixNano())))
	for !stop.Load() {
		time.Sleep(time.Duration(50+r.IntN(100)) * time.Millisecond)
		key := fmt.Sprintf("hot-%d", r.IntN(w.HotKeys))
		ctx, cancel := opCtx()
		row, found, err := lk.Get(ctx, pool, key)
		if err == nil && found && row.State() != locker.StateFree {
			op := history.Op{Client: -1, Kind: history.ForceExpire, Key: key, Token: row.Token, Call: rec.Now()}
			_, err = lk.ForceExpire(ctx, pool, key, row.Token)
			op.Return = rec.Now()
			op.Result, op.Err = history.ResultOf(err)
			rec.Add(op)
		}
		cancel()
	}
}
