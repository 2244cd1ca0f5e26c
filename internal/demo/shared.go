package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// reportWorker renders reports, each under one of the reportPermits permits
// of keyReportPool (locker.Acquire of a permit): of the reportWorkers workers,
// at most reportPermits render at once, each with a lease of its own that a
// Keepalive renews; the others queue (a waiting locker.Acquire of a permit), and a
// released permit is handed to the next in line, which is how a pool of
// workers bounds its load on a shared service. Demand is a little above the
// permits, so the key is usually full with a worker or two queued.
func (s *Sim) reportWorker(ctx context.Context, index int) {
	r := s.rng(roleReportPool, index)
	lk := s.storyLocker(reportPoolTTL, fmt.Sprintf("report pool (%d permits)", reportPermits))
	owner := fmt.Sprintf("report-%d", index+1)
	for ctx.Err() == nil {
		idle := s.between(r, 500*time.Millisecond, 2*time.Second)
		work := s.between(r, 3*time.Second, 6*time.Second)
		if !sleep(ctx, idle) {
			return
		}
		lease, err := s.takePermit(ctx, lk, keyReportPool, owner, reportPermits)
		if err != nil {
			continue
		}
		if kept, lost := s.holdFor(ctx, lk, lease, work); !lost {
			s.give(ctx, lk, kept)
		}
	}
}

// pricingReader reads the price list under a shared lease of keyPricing
// (locker.Acquire of a shared lease): the readers hold it side by side, each with a
// lease of its own. While the pricing writer holds the key, or is queued
// for it, a reader is refused and queues behind the writer
// (a waiting locker.Acquire of a shared lease); the writer's release hands the readers queued
// together their leases together.
func (s *Sim) pricingReader(ctx context.Context, index int) {
	r := s.rng(rolePricing, index)
	lk := s.storyLocker(pricingTTL, "pricing reader (shared)")
	owner := fmt.Sprintf("pricing-api-%d", index+1)
	for ctx.Err() == nil {
		idle := s.between(r, 300*time.Millisecond, 1500*time.Millisecond)
		read := s.between(r, 2*time.Second, 5*time.Second)
		if !sleep(ctx, idle) {
			return
		}
		lease, err := s.takeShared(ctx, lk, keyPricing, owner)
		if err != nil {
			continue
		}
		if kept, lost := s.holdFor(ctx, lk, lease, read); !lost {
			s.give(ctx, lk, kept)
		}
	}
}

// pricingWriter publishes a new price list every so often. The readers'
// leases overlap, so the key is rarely free: the writer queues for it
// exclusively (locker.Acquire), and readers that come after it queue
// behind it (a writer is not starved by a stream of readers); it is handed
// the key when the last reader releases. It writes the list with a fenced
// write (demo_resource), releases, and the readers share the key again.
func (s *Sim) pricingWriter(ctx context.Context) {
	r := s.rng(rolePricing, pricingReaders)
	lk := s.storyLocker(pricingTTL, "pricing writer (exclusive; queues past the readers)")
	for ctx.Err() == nil {
		idle := s.between(r, 6*time.Second, 12*time.Second)
		work := s.between(r, 1*time.Second, 2*time.Second)
		if !sleep(ctx, idle) {
			return
		}
		lease, err := s.take(ctx, lk, keyPricing, ownerPricing)
		if err != nil {
			continue
		}
		ka := lk.Keepalive(ctx, s.pool, lease)
		if sleep(ka.Context(), work/2) && s.write(ctx, lk, ka.Leases()[0]) {
			s.stats.priceUpdates.Add(1)
			sleep(ka.Context(), work-work/2)
		}
		ka.Stop()
		if errors.Is(context.Cause(ka.Context()), locker.ErrLeaseLost) {
			// An operator expired or released it: not the writer's to
			// release any more.
			s.holding.drop(lease)
			continue
		}
		s.give(ctx, lk, ka.Leases()[0])
	}
}
