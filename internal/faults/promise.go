package faults

import (
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
)

// promise is how long Lease.ValidFor has vouched for the leases of one
// hold (one Keepalive's), each on the history's clock: a worker writes
// under them only while it vouches for every one, and the checker holds
// each promise against the next grant of its key that conflicts with it
// (history, property 9).
type promise struct {
	w      *worker
	leases []locker.Lease // as granted: who holds what
	bound  bool
	until  []time.Duration
	made   bool
}

func (w *worker) newPromise(leases []locker.Lease, bound bool) *promise {
	return &promise{w: w, leases: leases, bound: bound, until: make([]time.Duration, len(leases))}
}

// vouch reports whether ka still keeps its leases (its Context runs) and
// ValidFor vouches for every one of them now; if so, each promise runs at
// least to now plus what ValidFor said. (Now is read first: the promise is
// never later than what ValidFor meant.)
func (p *promise) vouch(ka *locker.Keepalive) bool {
	now := p.w.rec.Now()
	if ka.Context().Err() != nil {
		return false
	}
	kept := ka.Leases()
	left := make([]time.Duration, len(kept))
	for i, lease := range kept {
		if left[i] = lease.ValidFor(); left[i] <= 0 {
			return false
		}
	}
	for i := range kept {
		p.until[i] = max(p.until[i], now+left[i])
	}
	p.made = true
	return true
}

// record hands the promise to the history once the hold is over, cut at
// the moment the holder let its leases go (sent their release, or closed
// the session that kept them): from then on another owner may have them.
// A holder that let nothing go (it died, or left its leases to lapse)
// keeps its promise whole.
func (p *promise) record(letGo bool) {
	cut := time.Duration(1<<63 - 1)
	if letGo {
		cut = p.w.rec.Now()
	}
	p.letGoAt(cut)
}

// letGoAt is record for a holder that let its leases go at cut: sent
// what ended them then (a conversion, which ends the lease it converts).
func (p *promise) letGoAt(cut time.Duration) {
	if !p.made {
		return
	}
	for i, lease := range p.leases {
		until := min(p.until[i], cut)
		p.w.rec.Vouch(history.Vouched{Client: p.w.id, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
			Until: until, Bound: p.bound})
	}
}
