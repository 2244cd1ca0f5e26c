package locker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// A lease handed to a queued waiter first runs for the claim window only
// (Config.ClaimWindow), so a waiter that died cannot block the key for a
// whole TTL. The claim renews it to the full TTL. A waiter woken by its
// hand-off's NOTIFY claims it in the call that asks whether the hand-off
// was real (store.Claim). One whose check finds the grant instead claims
// lazily, to keep that hand-off at one transaction on each side: Acquire
// returns the handed lease at once (its ExpiresAt is the end of the claim
// window, truthfully) and the Locker renews it in the background after
// half the window, only if it is still held by then. A Release or Renew
// before that (a Keepalive's first renewal, say) settles the claim: no
// claim transaction.

// claims are the background claims in flight, by lease.
type claims struct {
	pending atomic.Int64 // len(m), read without the lock on every Release and Renew
	mu      sync.Mutex
	m       map[store.LeaseRef]*pendingClaim
}

// pendingClaim is one handed-off lease's claim; claimed holds the renewed
// lease once it ran.
type pendingClaim struct {
	stop    chan struct{}
	once    sync.Once
	claimed atomic.Pointer[Lease]
}

func newClaims() *claims { return &claims{m: map[store.LeaseRef]*pendingClaim{}} }

func (c *claims) add(ref store.LeaseRef, pc *pendingClaim) {
	c.mu.Lock()
	c.m[ref] = pc
	c.pending.Store(int64(len(c.m)))
	c.mu.Unlock()
}

func (c *claims) remove(ref store.LeaseRef, pc *pendingClaim) {
	c.mu.Lock()
	if c.m[ref] == pc {
		delete(c.m, ref)
	}
	c.pending.Store(int64(len(c.m)))
	c.mu.Unlock()
}

// settle cancels ref's background claim, if any: the caller releases or
// renews the lease itself.
func (c *claims) settle(ref store.LeaseRef) {
	if c.pending.Load() == 0 {
		return
	}
	c.mu.Lock()
	pc := c.m[ref]
	delete(c.m, ref)
	c.pending.Store(int64(len(c.m)))
	c.mu.Unlock()
	if pc != nil {
		pc.once.Do(func() { close(pc.stop) })
	}
}

// pooled is a DBTX that many goroutines may use at once (a pgxpool.Pool):
// the background claim runs on it while the caller uses it too. A single
// connection is not, so on one Acquire claims at once instead (as a
// process that will not be around for the background claim wants: it waits
// on a connection of its own).
type pooled interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// claim arranges the claim of a handed-off lease: in the background on a
// pool, at once (one Renew) on anything else.
func (l *Locker) claim(ctx context.Context, db DBTX, lease Lease) (Lease, error) {
	if _, ok := db.(pooled); !ok {
		claimed, err := l.renew(ctx, db, lease)
		if err != nil {
			return Lease{}, err
		}
		claimed.Outcome = lease.Outcome // still the grant the caller was handed
		return claimed, nil
	}
	pc := &pendingClaim{stop: make(chan struct{})}
	lease.claim = pc
	ref := lease.ref()
	l.claims.add(ref, pc)
	go func() {
		defer l.claims.remove(ref, pc)
		timer, stopTimer := l.clock.Timer(lease.length() / 2)
		defer stopTimer()
		select {
		case <-pc.stop:
			return
		case <-timer:
		}
		rctx, cancel := context.WithTimeout(context.Background(), max(lease.ValidFor(), time.Second))
		defer cancel()
		sentAt := l.clock.Now()
		row, _, ok, err := store.Renew(rctx, db, ref, lease.TTL)
		if err == nil && ok {
			claimed := leaseFrom(row, Renewed, sentAt)
			pc.claimed.Store(&claimed)
		}
	}()
	return lease, nil
}
