package demo

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// Roles of the cast. Each worker draws from its own random stream (role and
// index), so its choices depend on the seed and its own history only, not on
// how goroutines interleave.
const (
	roleLeader uint64 = iota + 1
	roleContender
	roleLedger
	roleStuck
	roleTransfer
	roleTeller
	roleDelay
	roleDeadlock
	roleReportPool
	rolePricing
)

func (s *Sim) rng(role uint64, index int) *rand.Rand {
	return rand.New(rand.NewPCG(s.cfg.Seed, role<<32|uint64(index)))
}

// between draws a duration of the story in [lo, hi) and scales it to the
// configured speed.
func (s *Sim) between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return s.cfg.scale(lo + time.Duration(r.Int64N(int64(hi-lo))))
}

// sleep waits d of real time; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// waitRecheck is how long a waiter sleeps at most between attempts: the
// locker default at speed 1, shorter when the story runs faster.
const waitRecheck = 5 * time.Second

// lockerConfig is the Config of a Locker granting ttl of real time that
// wakes waiters through the sim's Notifier, rechecks every recheck at most,
// and labels its rows with role, which the console's detail pane shows.
// Most of the cast passes story times scaled with s.cfg.scale.
func (s *Sim) lockerConfig(ttl, recheck time.Duration, role string) locker.Config {
	return locker.Config{
		TTL:         ttl,
		Notifier:    s.notify,
		WaitRecheck: max(50*time.Millisecond, recheck),
		Metadata:    map[string]any{"demo": role, "pid": os.Getpid()},
		LogGrants:   true, // the demo is there to show what happens
	}
}

// locker is a Locker with lockerConfig's settings.
func (s *Sim) locker(ttl, recheck time.Duration, role string) *locker.Locker {
	return mustLocker(s.lockerConfig(ttl, recheck, role))
}

func mustLocker(cfg locker.Config) *locker.Locker {
	lk, err := locker.New(cfg)
	if err != nil {
		// Only a TTL or lock-delay out of bounds fails, and the cast's are
		// fixed and scaled within bounds (see Config.Validate).
		panic(err)
	}
	return lk
}

// storyLocker is locker with ttl and the recheck interval of the story,
// scaled to the configured speed.
func (s *Sim) storyLocker(ttl time.Duration, role string) *locker.Locker {
	return s.locker(s.cfg.scale(ttl), s.cfg.scale(waitRecheck), role)
}

// take gets key for owner, waiting in line if someone holds it, and
// counts what happened. The error is ctx's, or a database error the caller
// backs off from.
func (s *Sim) take(ctx context.Context, lk *locker.Locker, key, owner string) (locker.Lease, error) {
	return s.takeOne(ctx, lk, locker.Request{Keys: locker.Keys(key), Owner: owner})
}

// takeShared is take for a shared lease of key: refused (a writer holds the
// key or is queued for it), it waits in the key's queue.
func (s *Sim) takeShared(ctx context.Context, lk *locker.Locker, key, owner string) (locker.Lease, error) {
	return s.takeOne(ctx, lk, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeShared}}, Owner: owner})
}

// takePermit is take for one of permits permits of key: refused (every
// permit held), it waits in the key's queue.
func (s *Sim) takePermit(ctx context.Context, lk *locker.Locker, key, owner string, permits int) (locker.Lease, error) {
	return s.takeOne(ctx, lk, locker.Request{
		Keys: []locker.Key{{Name: key, Mode: locker.ModeSemaphore, Permits: permits}}, Owner: owner})
}

// takeOne is take of req's one key.
func (s *Sim) takeOne(ctx context.Context, lk *locker.Locker, req locker.Request) (locker.Lease, error) {
	leases, err := s.takeRequest(ctx, lk, req)
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}

// takeAll gets every key of keys for owner at once, all or none, waiting
// until it can have them all, and counts the grants as take does.
func (s *Sim) takeAll(ctx context.Context, lk *locker.Locker, keys []string, owner string) ([]locker.Lease, error) {
	return s.takeRequest(ctx, lk, locker.Request{Keys: locker.Keys(keys...), Owner: owner})
}

// takeRequest makes one attempt at req and, refused, waits for it, then
// records and counts the leases. The error is ctx's, or a database error
// the caller backs off from.
func (s *Sim) takeRequest(ctx context.Context, lk *locker.Locker, req locker.Request) ([]locker.Lease, error) {
	leases, err := lk.Acquire(ctx, s.pool, req)
	waited := errors.Is(err, locker.ErrHeld)
	if waited {
		req.Wait = locker.WaitForever
		leases, err = lk.Acquire(ctx, s.pool, req)
	}
	if err != nil {
		return nil, s.failed(ctx, err)
	}
	for _, lease := range leases {
		s.holding.hold(lease)
		s.count(lease, waited)
	}
	return leases, nil
}

// count adds a grant to the counters: a steal, or an acquire that ended a
// wait (a hand-off) or found the key free.
func (s *Sim) count(lease locker.Lease, waited bool) {
	switch {
	case lease.Outcome == locker.Stolen:
		s.stats.stolen.Add(1)
	case waited:
		s.stats.acquired.Add(1)
		s.stats.handOffs.Add(1)
	default:
		s.stats.acquired.Add(1)
	}
}

// holdFor keeps lease alive with a Keepalive for d. lost is true when the
// lease was lost meanwhile (an operator expired it, or the database could
// not confirm it): the holder must not release it then.
func (s *Sim) holdFor(ctx context.Context, lk *locker.Locker, lease locker.Lease, d time.Duration) (kept locker.Lease, lost bool) {
	ka := lk.Keepalive(ctx, s.pool, lease)
	defer ka.Stop()
	sleep(ka.Context(), d)
	if errors.Is(context.Cause(ka.Context()), locker.ErrLeaseLost) {
		s.holding.drop(lease)
		return ka.Leases()[0], true
	}
	return ka.Leases()[0], false
}

// give releases lease. It runs even while the sim stops, so a worker that
// was told to stop still hands its key over.
func (s *Sim) give(ctx context.Context, lk *locker.Locker, lease locker.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := lk.Release(rctx, s.pool, lease); err == nil {
		s.stats.released.Add(1)
	} else if !errors.Is(err, locker.ErrNotHeld) {
		s.stats.hitError(err)
	}
	s.holding.drop(lease)
}

// giveAll releases leases, taken together by takeAll, together.
func (s *Sim) giveAll(ctx context.Context, lk *locker.Locker, leases []locker.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := lk.Release(rctx, s.pool, leases...); err == nil {
		s.stats.released.Add(int64(len(leases)))
	} else if !errors.Is(err, locker.ErrNotHeld) {
		s.stats.hitError(err)
	}
	for _, lease := range leases {
		s.holding.drop(lease)
	}
}

// failed counts a database error and backs off a little before the caller
// retries; it passes ctx's own end through unchanged.
func (s *Sim) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.stats.hitError(err)
	sleep(ctx, s.cfg.scale(time.Second))
	return err
}
