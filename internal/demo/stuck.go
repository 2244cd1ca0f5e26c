package demo

import (
	"context"
	"fmt"
	"time"
)

// reportGen takes keyStuck with a one-hour lease and hangs: it never renews,
// never releases, never notices. It signals hung once it holds the key and
// waits for done — the retry job finished after an operator freed the key —
// before a new incarnation of it does the same again.
func (s *Sim) reportGen(ctx context.Context, hung chan<- struct{}, done <-chan struct{}) {
	r := s.rng(roleStuck, 0)
	lk := s.locker(StuckTTL, waitRecheck, "nightly report (hangs: free it with x)")
	for life := 1; ctx.Err() == nil; life++ {
		pause := s.between(r, 8*time.Second, 15*time.Second)
		owner := ownerReportGen
		if life > 1 {
			owner = fmt.Sprintf("%s#%d", ownerReportGen, life)
		}
		lease, err := s.take(ctx, lk, keyStuck, owner)
		if err != nil {
			continue
		}
		select {
		case hung <- struct{}{}:
		case <-ctx.Done():
			return
		}
		select {
		case <-done:
			s.holding.drop(lease)
		case <-ctx.Done():
			return
		}
		sleep(ctx, pause)
	}
}

// reportRetry queues behind the hung report generator. An operator's
// force-expire (or force-release) wakes it through NOTIFY and it takes the
// key at once, does the report, and releases.
func (s *Sim) reportRetry(ctx context.Context, hung <-chan struct{}, done chan<- struct{}) {
	r := s.rng(roleStuck, 1)
	// It waits on an hour-long lease at the locker's default recheck, at any
	// speed: what frees the key is the operator, and NOTIFY says so at once.
	lk := s.locker(s.cfg.scale(reportTTL), waitRecheck, "report retry (waits for the stuck report)")
	for ctx.Err() == nil {
		select {
		case <-hung:
		case <-ctx.Done():
			return
		}
		work := s.between(r, 5*time.Second, 8*time.Second)
		var lease, err = s.take(ctx, lk, keyStuck, ownerReportRetry)
		for err != nil && ctx.Err() == nil {
			lease, err = s.take(ctx, lk, keyStuck, ownerReportRetry)
		}
		if err != nil {
			return
		}
		s.stats.operatorFreed.Add(1)
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
