package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Ways a deadlock is closed in the keys scenario.
const (
	DeadlockOneAfterOther = "one wait after the other"
	DeadlockAtOnce        = "two waits at once"
)

// DeadlockResult is how fast the deadlocks closed one way were reported:
// from the closing wait's call (for two at once, the later call) to the
// first ErrDeadlock.
type DeadlockResult struct {
	Way    string `json:"way"`
	Rounds int    `json:"rounds"`
	// Reported counts rounds in which a waiter was refused with
	// ErrDeadlock within deadlockGiveUp; the others count as that long.
	Reported int `json:"reported"`
	// BothRefused counts rounds in which both waiters were refused: one
	// refusal breaks the cycle, so this must be 0.
	BothRefused int           `json:"both_refused"`
	P50         time.Duration `json:"p50_ns"`
	Max         time.Duration `json:"max_ns"`
}

// measureDeadlocks closes opts.Deadlocks deadlocks between two owners,
// each holding one key and waiting for the other's.
func measureDeadlocks(ctx context.Context, pool *pgxpool.Pool, opts KeysOptions, together bool) (DeadlockResult, error) {
	res := DeadlockResult{Way: DeadlockOneAfterOther, Rounds: opts.Deadlocks}
	if together {
		res.Way = DeadlockAtOnce
	}
	lk, err := locker.New(locker.Config{TTL: opts.TTL})
	if err != nil {
		return res, err
	}
	var took []time.Duration
	for i := range opts.Deadlocks {
		d, both, err := closeDeadlock(ctx, pool, lk, fmt.Sprintf("dl-%t-%d", together, i), together)
		if err != nil {
			return res, err
		}
		if d < deadlockGiveUp {
			res.Reported++
		}
		if both {
			res.BothRefused++
		}
		took = append(took, d)
	}
	slices.Sort(took)
	res.P50, res.Max = took[len(took)/2], took[len(took)-1]
	return res, nil
}

type waitResult struct {
	lease locker.Lease
	err   error
	at    time.Time
}

// closeDeadlock makes a hold x and b hold y, then a wait for y and b for x,
// and returns how long after the closing call a waiter was refused, and
// whether both were. It leaves nothing held.
func closeDeadlock(ctx context.Context, pool *pgxpool.Pool, lk *locker.Locker, prefix string, together bool) (time.Duration, bool, error) {
	a, b, x, y := prefix+"-a", prefix+"-b", prefix+"-x", prefix+"-y"
	la, err := tryKey(ctx, lk, pool, x, a)
	if err != nil {
		return 0, false, err
	}
	lb, err := tryKey(ctx, lk, pool, y, b)
	if err != nil {
		return 0, false, err
	}
	wctx, cancel := context.WithTimeout(ctx, deadlockGiveUp)
	defer cancel()
	wait := func(key, owner string) <-chan waitResult {
		ch := make(chan waitResult, 1)
		go func() {
			l, err := waitKey(wctx, lk, pool, key, owner)
			ch <- waitResult{l, err, time.Now()}
		}()
		return ch
	}
	var resA, resB <-chan waitResult
	var closed time.Time
	if together {
		closed = time.Now()
		resA, resB = wait(y, a), wait(x, b)
	} else {
		resA = wait(y, a)
		if err := untilQueued(wctx, pool, y, a); err != nil {
			return 0, false, err
		}
		closed = time.Now()
		resB = wait(x, b)
	}
	second, firstHeld, secondHeld := resB, la, lb
	var r waitResult
	select {
	case r = <-resA:
	case r = <-resB:
		second, firstHeld, secondHeld = resA, lb, la
	}
	took := r.at.Sub(closed)
	if !errors.Is(r.err, locker.ErrDeadlock) {
		took = deadlockGiveUp
	}
	// The refused owner gives its key back, so the other's wait ends.
	release := func(l locker.Lease) { _, _ = lk.Release(context.WithoutCancel(ctx), pool, l) }
	if r.err == nil {
		release(r.lease)
	}
	release(firstHeld)
	r2 := <-second
	both := errors.Is(r.err, locker.ErrDeadlock) && errors.Is(r2.err, locker.ErrDeadlock)
	if r2.err == nil {
		release(r2.lease)
	}
	release(secondHeld)
	return took, both, nil
}

// untilQueued returns once owner's waiter record for key is there.
func untilQueued(ctx context.Context, pool *pgxpool.Pool, key, owner string) error {
	const queuedSQL = `SELECT EXISTS (SELECT 1 FROM distributed_lock_waiter WHERE lock_key = $1 AND owner_id = $2)`
	for {
		var queued bool
		if err := pool.QueryRow(ctx, queuedSQL, key, owner).Scan(&queued); err != nil {
			return fmt.Errorf("bench: waiter of %s: %w", key, store.Interpret(err))
		}
		if queued {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %s never queued for %s: %w", owner, key, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
