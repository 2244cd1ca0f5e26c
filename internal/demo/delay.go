package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// backupRequest is keyBackup for owner with a lock-delay: the backup
// writes to object storage, which cannot check a fencing token, so when a
// holder's lease ends without a release nobody may take the key until the
// delay has passed — the holder may only be slow, and still writing. The
// delay is scaled with the story but kept within the locker's cap, which a
// slow story would pass.
func (s *Sim) backupRequest(owner string) locker.Request {
	return locker.Request{Keys: locker.Keys(keyBackup), Owner: owner,
		LockDelay: min(s.cfg.scale(backupDelay), locker.MaxLockDelay)}
}

// backupRunner takes keyBackup and crashes while holding it, every time:
// its Keepalive goes with the process, the lease runs out, and the key sits
// out its lock-delay (state delayed in the console) before the standby
// waiting behind it gets it. It signals holding once it holds the key, and
// comes back under a new owner id after the standby is done.
func (s *Sim) backupRunner(ctx context.Context, holding chan<- struct{}, done <-chan struct{}) {
	r := s.rng(roleDelay, 0)
	lk := s.storyLocker(backupTTL, "nightly backup (crashes; lock-delay)")
	for life := 1; ctx.Err() == nil; life++ {
		work := s.between(r, 3*time.Second, 5*time.Second)
		offline := s.between(r, 2*time.Second, 4*time.Second)
		owner := ownerBackup
		if life > 1 {
			owner = fmt.Sprintf("%s#%d", ownerBackup, life)
		}
		lease, err := s.takeOne(ctx, lk, s.backupRequest(owner))
		if err != nil {
			continue
		}
		select {
		case holding <- struct{}{}:
		case <-ctx.Done():
			return
		}
		// An operator may end the lease first (x or d in the console):
		// that starts the delay too, and the standby is served all the same.
		if _, lost := s.holdFor(ctx, lk, lease, work); !lost && ctx.Err() == nil {
			s.stats.crashes.Add(1)
		}
		select {
		case <-done:
			s.holding.drop(lease)
		case <-ctx.Done():
			return
		}
		sleep(ctx, offline)
	}
}

// backupStandby queues behind the backup runner and keeps its place while
// the crashed runner's lease runs out and the key sits out its lock-delay;
// it is granted the key when the delay ends, backs up, and releases
// cleanly (which starts no delay).
func (s *Sim) backupStandby(ctx context.Context, holding <-chan struct{}, done chan<- struct{}) {
	r := s.rng(roleDelay, 1)
	lk := s.storyLocker(backupTTL, "backup standby (waits out the lock-delay)")
	for ctx.Err() == nil {
		select {
		case <-holding:
		case <-ctx.Done():
			return
		}
		queueAfter := s.between(r, 500*time.Millisecond, 1500*time.Millisecond)
		work := s.between(r, 3*time.Second, 5*time.Second)
		if !sleep(ctx, queueAfter) {
			return
		}
		lease, err := s.takeOne(ctx, lk, s.backupRequest(ownerStandby))
		for err != nil && ctx.Err() == nil {
			lease, err = s.takeOne(ctx, lk, s.backupRequest(ownerStandby))
		}
		if err != nil {
			return
		}
		if kept, lost := s.holdFor(ctx, lk, lease, work); !lost {
			s.give(ctx, lk, kept)
		}
		select {
		case done <- struct{}{}:
		case <-ctx.Done():
			return
		}
	}
}
