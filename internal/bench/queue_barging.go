package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The locker-barging series is how locker.Acquire waited before the fair
// queue, kept here to compare with: every waiter retries TryAcquire
// whenever a release is announced (each release wakes every waiter of the
// key in every process), at the holder's expiry, or every recheck, and
// whoever retries first wins. It asks releases to announce themselves
// (distributed_lock_waiter_watch) but queues nowhere.

// bargingRecheck is the longest a barging waiter sleeps between attempts.
const bargingRecheck = 5 * time.Second

// bargingWaiters share one pool and one LISTEN connection per process.
func bargingWaiters(ctx context.Context, plain, counted *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, nil, err
	}
	poolCfg.ConnConfig = counted
	poolCfg.MaxConns = int32(min(job.Waiters, 16))
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("pool: %w", store.Interpret(err))
	}
	listener, err := listenReleases(ctx, plain)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	cleanup := func() {
		listener.close()
		pool.Close()
	}
	lk, err := locker.New(locker.Config{TTL: queueLockTTL})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return leaseAcquirers(job, "barging", lk, pool, func(ctx context.Context, owner string) (locker.Lease, error) {
		return bargingAcquire(ctx, lk, pool, listener, job.Key, owner)
	}), cleanup, nil
}

// bargingAcquire is the waiting loop of locker.Acquire before the queue.
func bargingAcquire(ctx context.Context, lk *locker.Locker, db *pgxpool.Pool, l *releaseListener, key, owner string) (locker.Lease, error) {
	lease, err := lk.TryAcquire(ctx, db, key, owner)
	var held *locker.HeldError
	if !errors.As(err, &held) {
		return lease, err
	}
	wake, unsubscribe := l.subscribe()
	defer unsubscribe()
	lastWatch := time.Time{}
	for {
		if time.Since(lastWatch) >= bargingRecheck/2 {
			if err := store.Watch(ctx, db, key, 3*bargingRecheck); err != nil {
				return locker.Lease{}, err
			}
			lastWatch = time.Now()
		}
		// Subscribed and watching: one more attempt closes the gap.
		lease, err = lk.TryAcquire(ctx, db, key, owner)
		if !errors.As(err, &held) {
			return lease, err
		}
		d := min(held.Remaining+time.Millisecond, bargingRecheck)
		if held.Remaining <= 0 {
			d = 10 * time.Millisecond
		}
		if jitter := min(held.Remaining/20, 50*time.Millisecond); jitter > 0 {
			d += rand.N(jitter)
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return locker.Lease{}, ctx.Err()
		case <-timer.C:
		case <-wake:
			timer.Stop()
			time.Sleep(rand.N(5 * time.Millisecond)) // woken together: do not retry in lockstep
		}
	}
}

// releaseListener wakes every subscriber of this process on every release
// announced on store.NotifyChannel (the bench uses one key).
type releaseListener struct {
	conn   *pgx.Conn
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	subs   map[chan struct{}]struct{}
}

func listenReleases(ctx context.Context, cfg *pgx.ConnConfig) (*releaseListener, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", store.Interpret(err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listen: %w", store.Interpret(err))
	}
	lctx, cancel := context.WithCancel(ctx)
	l := &releaseListener{conn: conn, cancel: cancel, done: make(chan struct{}), subs: map[chan struct{}]struct{}{}}
	go func() {
		defer close(l.done)
		for {
			if _, err := conn.WaitForNotification(lctx); err != nil {
				return
			}
			l.mu.Lock()
			for ch := range l.subs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			l.mu.Unlock()
		}
	}()
	return l, nil
}

func (l *releaseListener) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs, ch)
		l.mu.Unlock()
	}
}

func (l *releaseListener) close() {
	l.cancel()
	<-l.done
	l.conn.Close(context.Background())
}
