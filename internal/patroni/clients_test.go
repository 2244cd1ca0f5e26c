package patroni_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// The lock users the test runs through the changes of primary, all on one
// pool of the multi-host DSN, each retrying what the outage refused, as a
// service would. What they were told goes into the journal; what must
// never happen (a lease lost while renewed, a key it alone uses held by
// another) fails the test at once.

// callTimeout bounds one call: a call to a server that went away fails
// instead of hanging, and is tried again.
const callTimeout = 5 * time.Second

// retryEvery is the pause before a refused call is tried again.
const retryEvery = 100 * time.Millisecond

// transient says whether a failed call is worth trying again: the server
// was unreachable, read-only (a standby, or a primary being demoted), or
// did not answer in time. Anything else is the lock contract speaking.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrReadOnly) ||
		errors.Is(err, locker.ErrStatementTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// call runs op with callTimeout until it succeeds, fails for a reason that
// is not transient, or ctx ends.
func call(ctx context.Context, op func(ctx context.Context) error) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := op(cctx)
		cancel()
		if err == nil || !transient(ctx, err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryEvery):
		}
	}
}

// clients runs the lock users in the background until stop.
type clients struct {
	t    *testing.T
	pool *pgxpool.Pool
	lk   *locker.Locker
	j    *journal
	wg   sync.WaitGroup
}

// cyclePause spaces a cycler's rounds: a few dozen grants a second in all
// meet every change of primary in flight without loading two cores.
const cyclePause = 100 * time.Millisecond

// cycle takes and releases key over and over until ctx ends: each grant a
// new token, each release durable. A call whose answer was lost leaves
// the key held by owner or free; the next TryAcquire renews it or takes it
// anew, and only new grants are journaled.
func (c *clients) cycle(ctx context.Context, key, owner string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for ctx.Err() == nil {
			var lease locker.Lease
			sent := time.Now()
			err := call(ctx, func(ctx context.Context) (err error) {
				lease, err = testdb.Try(ctx, c.lk, c.pool, key, owner)
				return err
			})
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				c.t.Errorf("%s takes %s, which only it uses: %v", owner, key, err)
				return
			}
			if lease.Outcome != locker.Renewed {
				c.j.granted(grant{key: key, owner: owner, token: lease.Token, sent: sent, acked: time.Now()})
			}
			c.release(ctx, lease)
			time.Sleep(cyclePause)
		}
	}()
}

// release gives lease back, journaling it once acknowledged. A lease
// found gone was released by an earlier try whose answer was lost.
func (c *clients) release(ctx context.Context, lease locker.Lease) {
	err := call(ctx, func(ctx context.Context) error {
		_, err := testdb.One(c.lk.Release(ctx, c.pool, lease))
		return err
	})
	switch {
	case err == nil:
		c.j.released(release{key: lease.Key, token: lease.Token, acked: time.Now()})
	case errors.Is(err, locker.ErrNotHeld) || ctx.Err() != nil:
	default:
		c.t.Errorf("release %s %s: %v", lease.Key, fencetoken.Format(lease.Token), err)
	}
}

// holder keeps one lease through the changes of primary, renewing it
// every renewEvery, until it is told to let go.
type holder struct {
	key string
	// letGo makes the holder release its lease; released is closed once
	// it has.
	letGo    chan struct{}
	released chan struct{}

	mu          sync.Mutex
	renewedAt   time.Time // when the last acknowledged renewal was sent
	releaseSent time.Time // when the release was sent
}

const renewEvery = 500 * time.Millisecond

// hold takes key and keeps it: every renewal must return the same token,
// across switchover and failover alike, since the lease outlasts both.
func (c *clients) hold(ctx context.Context, key, owner string) *holder {
	h := &holder{key: key, letGo: make(chan struct{}), released: make(chan struct{})}
	var lease locker.Lease
	sent := time.Now()
	err := call(ctx, func(ctx context.Context) (err error) {
		lease, err = testdb.Try(ctx, c.lk, c.pool, key, owner)
		return err
	})
	if err != nil {
		c.t.Fatalf("%s takes %s: %v", owner, key, err)
	}
	c.j.granted(grant{key: key, owner: owner, token: lease.Token, sent: sent, acked: time.Now()})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(h.released)
		for {
			select {
			case <-h.letGo:
				h.mu.Lock()
				h.releaseSent = time.Now()
				h.mu.Unlock()
				c.release(ctx, lease)
				return
			case <-ctx.Done():
				return
			case <-time.After(renewEvery):
			}
			sent := time.Now()
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			renewed, err := testdb.One(c.lk.Renew(cctx, c.pool, lease))
			cancel()
			switch {
			case err == nil && renewed.Token != lease.Token:
				c.t.Errorf("%s renewed %s and got token %s; it holds %s", owner, key,
					fencetoken.Format(renewed.Token), fencetoken.Format(lease.Token))
				return
			case err == nil:
				lease = renewed
				h.mu.Lock()
				h.renewedAt = sent
				h.mu.Unlock()
			case !transient(ctx, err):
				if ctx.Err() == nil {
					c.t.Errorf("%s lost %s while renewing it: %v", owner, key, err)
				}
				return
			}
		}
	}()
	return h
}

// letGoAt is when the holder sent its release (zero until then).
func (h *holder) letGoAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.releaseSent
}

// renewedSince says whether a renewal sent after t was acknowledged.
func (h *holder) renewedSince(t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewedAt.After(t)
}

// wait queues owner for key with lk (a Locker with a Notifier) and, once
// granted, holds the key briefly and releases it. floor is when the
// release that set the queue moving was sent: the grants of the queue
// come after it. got receives owner once it has had the key.
func (c *clients) wait(ctx context.Context, lk *locker.Locker, key, owner string, floor func() time.Time, got chan<- string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var lease locker.Lease
		var firstErr error
		for tries := 1; ; tries++ {
			var err error
			if lease, err = testdb.Wait(ctx, lk, c.pool, key, owner); err == nil {
				if tries > 1 {
					c.t.Logf("%s queued %d times for %s; its wait first broke with: %v", owner, tries, key, firstErr)
				}
				break
			}
			if ctx.Err() != nil {
				return
			}
			// The wait broke with the connection (or its place lapsed):
			// queue again, as a service would.
			if firstErr == nil {
				firstErr = err
			}
			time.Sleep(retryEvery)
		}
		sent := floor()
		if sent.IsZero() {
			c.t.Errorf("%s got %s (%s) before its holder let go", owner, key, fencetoken.Format(lease.Token))
		}
		c.j.granted(grant{key: key, owner: owner, token: lease.Token, sent: sent, acked: time.Now()})
		time.Sleep(20 * time.Millisecond)
		c.release(ctx, lease)
		got <- owner
	}()
}

// keyFor names the i-th key of a kind.
func keyFor(kind string, i int) string { return fmt.Sprintf("%s-%d", kind, i) }
