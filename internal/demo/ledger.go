package demo

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// freezeChance is how often a ledger writer's tenure ends in a freeze after
// the first (ledger-a's first tenure always does, so the story shows a
// refused write within seconds of starting).
const freezeChance = 0.4

// ledgerWriter takes keyLedger in turn with the other writer and updates
// the fenced resource while it holds the key. Some tenures end in a freeze
// longer than the TTL — everything stops, Keepalive included, as in a long
// GC pause or a suspended VM. The other writer, waiting, steals the expired
// lease with a larger token and writes; the frozen writer wakes still
// believing it holds the key, writes with its old token, and is refused.
func (s *Sim) ledgerWriter(ctx context.Context, owner string, index int) {
	r := s.rng(roleLedger, index)
	lk := s.storyLocker(ledgerTTL, "ledger writer (fenced)")
	for tenure := 0; ctx.Err() == nil; tenure++ {
		writes := 2 + r.IntN(4)
		freeze := r.Float64() < freezeChance || tenure == 0 && index == 0
		rest := s.between(r, 500*time.Millisecond, 1500*time.Millisecond)
		lease, err := s.take(ctx, lk, keyLedger, owner)
		if err != nil {
			continue
		}
		ka := lk.Keepalive(ctx, s.pool, lease)
		for range writes {
			if !sleep(ka.Context(), s.between(r, 400*time.Millisecond, 900*time.Millisecond)) {
				break
			}
			if !s.write(ctx, lk, lease) {
				break
			}
		}
		ka.Stop()
		switch {
		case ctx.Err() != nil:
			return // Stop releases what is held.
		case freeze:
			s.stats.freezes.Add(1)
			// Frozen past the TTL: the lease expires and the other writer
			// takes the key meanwhile.
			if !sleep(ctx, s.cfg.scale(ledgerTTL*3/2+time.Second)) {
				return
			}
			s.write(ctx, lk, lease) // refused: the zombie's write
			s.holding.drop(lease)
		default:
			s.give(ctx, lk, lease)
		}
		sleep(ctx, rest)
	}
}

// write makes one fenced write with lease's token and counts it. A refused
// write is reported as an event on the key (visible in the console). false:
// the write did not commit.
func (s *Sim) write(ctx context.Context, lk *locker.Locker, lease locker.Lease) bool {
	refused, err := fencedWrite(ctx, s.pool, lease)
	if err != nil {
		_ = s.failed(ctx, err)
		return false
	}
	if refused == "" {
		s.stats.writesOK.Add(1)
		return true
	}
	s.stats.writesRefused.Add(1)
	if err := lk.ReportStaleWrite(ctx, s.pool, lease, "demo_resource ("+refused+")"); err != nil {
		_ = s.failed(ctx, err)
	}
	return false
}
