package demo

import (
	"context"
	"errors"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// syncer is one of the two inventory syncers: it takes its own region's key
// and then, to reconcile, the other region's, one after the other — the
// order is the bug (a set's waiting Acquire would take both at once).
type syncer struct {
	owner, own, other string
}

var syncers = [2]syncer{
	{owner: ownerSyncEU, own: keyInventoryEU, other: keyInventoryUS},
	{owner: ownerSyncUS, own: keyInventoryUS, other: keyInventoryEU},
}

// waited is how one syncer's wait for the other's key ended.
type waited struct {
	who   int
	lease locker.Lease
	err   error
	took  time.Duration
}

// inventorySync plays the two syncers into a deadlock, round after round:
// each holds its own key, one waits for the other's, then the other waits
// for the first's and closes the cycle. The locker refuses that wait at
// once with ErrDeadlock, naming the cycle; the refused syncer logs it (the
// header's count and the latest deadlock), gives up its key, and the first
// syncer, handed that key, reconciles under both and releases them.
func (s *Sim) inventorySync(ctx context.Context) {
	r := s.rng(roleDeadlock, 0)
	lk := s.storyLocker(inventoryTTL, "inventory sync (takes two keys one by one)")
	for ctx.Err() == nil {
		rest := s.between(r, 3*time.Second, 6*time.Second)
		first := r.IntN(2)
		hold := s.between(r, 1*time.Second, 2*time.Second)
		gap := s.between(r, 1500*time.Millisecond, 3*time.Second)
		work := s.between(r, 1500*time.Millisecond, 3*time.Second)
		if !sleep(ctx, rest) {
			return
		}
		s.syncRound(ctx, lk, first, hold, gap, work)
	}
}

// syncRound is one round of inventorySync; syncers[first] waits first.
func (s *Sim) syncRound(ctx context.Context, lk *locker.Locker, first int, hold, gap, work time.Duration) {
	var kas [2]*locker.Keepalive // each syncer's own key, while it holds it
	defer func() {
		for _, ka := range kas {
			s.letGo(ctx, lk, ka)
		}
	}()
	for i, sy := range syncers {
		lease, err := s.take(ctx, lk, sy.own, sy.owner)
		if err != nil {
			return
		}
		kas[i] = lk.Keepalive(ctx, s.pool, lease)
	}
	if !sleep(ctx, hold) {
		return
	}
	// A round that outlives its story by far means the deadlock went
	// unreported: both waits give up, and that counts as an error.
	rctx, cancel := context.WithTimeout(ctx, s.cfg.scale(30*time.Second)+5*time.Second)
	defer cancel()
	results := make(chan waited, 2)
	started := 0
	for n, i := range []int{first, 1 - first} {
		if n == 1 && !sleep(rctx, gap) {
			break
		}
		sy := syncers[i]
		started++
		go func() {
			asked := time.Now()
			lease, err := s.waitFor(rctx, lk, sy.other, sy.owner)
			results <- waited{who: i, lease: lease, err: err, took: time.Since(asked)}
		}()
	}
	var got [2]*locker.Keepalive // the other's key, once handed over
	for range started {
		w := <-results
		switch {
		case w.err == nil:
			s.holding.hold(w.lease)
			s.count(w.lease, true)
			got[w.who] = lk.Keepalive(ctx, s.pool, w.lease)
		case errors.Is(w.err, locker.ErrDeadlock):
			// Told at once: it gives up the key the other waits for.
			s.deadlocked(syncers[w.who], w.err, w.took)
			s.letGo(ctx, lk, kas[w.who])
			kas[w.who] = nil
		default:
			if ctx.Err() == nil {
				s.stats.hitError(w.err)
			}
			s.letGo(ctx, lk, kas[w.who])
			kas[w.who] = nil
		}
	}
	for _, ka := range got {
		if ka == nil {
			continue
		}
		// Both keys now: reconcile under both, then release both.
		sleep(ka.Context(), work)
		s.letGo(ctx, lk, ka)
	}
}

// letGo stops ka and releases its lease (one lost meanwhile is only
// dropped).
func (s *Sim) letGo(ctx context.Context, lk *locker.Locker, ka *locker.Keepalive) {
	if ka == nil {
		return
	}
	ka.Stop()
	s.give(ctx, lk, ka.Leases()[0])
}

// waitFor waits for key as owner as long as ctx lasts.
func (s *Sim) waitFor(ctx context.Context, lk *locker.Locker, key, owner string) (locker.Lease, error) {
	leases, err := lk.Acquire(ctx, s.pool, locker.Request{Keys: locker.Keys(key), Owner: owner, Wait: locker.WaitForever})
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}
