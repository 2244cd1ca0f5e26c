package history

import (
	"sort"
	"time"
)

// Vouched is how long a holder's locker.Lease.ValidFor vouched for one of
// its leases, on the recorder's clock (Recorder.Now): Until is the latest
// instant a ValidFor it read promised, that is the moment it read it plus
// what it said, cut at the moment the holder sent the release of the lease
// (or closed the session that kept it), after which another owner may
// rightly be granted the key. A holder that died keeps its promise whole:
// nothing of it ended the lease early. Record one per lease and hold, once
// the hold is over.
type Vouched struct {
	Client int
	Key    string
	Owner  string
	Token  int64
	Until  time.Duration
	// Bound: the lease was kept by a locker.Session (counted apart).
	Bound bool
}

// Vouch records v.
func (r *Recorder) Vouch(v Vouched) {
	r.mu.Lock()
	r.vouched = append(r.vouched, v)
	r.mu.Unlock()
}

// VouchedLeases returns a copy of every promise recorded.
func (r *Recorder) VouchedLeases() []Vouched {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Vouched(nil), r.vouched...)
}

// grantReturn is a client's grant of a key: its place in the key's log
// (event id) and when its reply arrived.
type grantReturn struct {
	event  int64
	client int
	token  int64
	at     time.Duration
}

// arrivals is, per key, the clients' successful grants in log order, each
// with the earliest arrival of its own reply or of any later grant's of
// the key (earliestFrom): a grant took effect before its reply arrived and
// after every grant before it in the log.
type arrivals struct {
	byKey map[string][]grantReturn
}

func (c *checker) arrivals() arrivals {
	a := arrivals{byKey: map[string][]grantReturn{}}
	for _, op := range c.ops {
		if op.Kind != Grant || op.Result != OK || op.Outcome == "renewed" {
			continue
		}
		ev, ok := c.granted[leaseID{op.Key, op.Token}]
		if !ok {
			continue // reported by checkClientGrants
		}
		a.byKey[op.Key] = append(a.byKey[op.Key], grantReturn{event: ev.ID, client: op.Client, token: op.Token, at: op.Return})
	}
	for _, grants := range a.byKey {
		sort.Slice(grants, func(i, j int) bool { return grants[i].event < grants[j].event })
		for i := len(grants) - 2; i >= 0; i-- {
			if grants[i+1].at < grants[i].at {
				grants[i].at, grants[i].client, grants[i].token = grants[i+1].at, grants[i+1].client, grants[i+1].token
			}
		}
	}
	return a
}

// earliestFrom is the earliest arrival, on the recorder's clock, of a
// client's reply to a grant of key at or after event in the log, with the
// grant whose reply it was; false when no client heard of one.
func (a arrivals) earliestFrom(key string, event int64) (grantReturn, bool) {
	grants := a.byKey[key]
	i := sort.Search(len(grants), func(i int) bool { return grants[i].event >= event })
	if i == len(grants) {
		return grantReturn{}, false
	}
	return grants[i], true
}

// checkVouched verifies property 9: no grant that conflicts with a lease
// (checker.fencedBy: for an exclusive lease, the next grant of its key)
// took effect before the last instant its holder's ValidFor vouched for.
// Both ends are on one clock, the clients' own: the grant took effect
// before any client heard of it or of a grant after it, so a reply that
// arrived before the promised instant proves the promise false, whatever
// the database's clock said.
func (c *checker) checkVouched() {
	a := c.arrivals()
	for _, v := range c.vouched {
		c.stats.Vouched++
		if v.Bound {
			c.stats.VouchedBound++
		}
		g, ok := c.fencedBy[leaseID{v.Key, v.Token}]
		if !ok {
			continue
		}
		first, ok := a.earliestFrom(v.Key, g.ID)
		if !ok {
			continue
		}
		c.stats.VouchedThenTaken++
		if v.Bound {
			c.stats.VouchedBoundThenTaken++
		}
		if first.at < v.Until {
			kind := "its own Keepalive"
			if v.Bound {
				kind = "a session"
			}
			c.fail("ValidFor outlasted the lease: client %d's lease of %q (token %d, kept by %s) was vouched for until %s, but client %d heard of its grant of token %d (at or after token %d's, event %d) at %s, %s before",
				v.Client, v.Key, v.Token, kind, v.Until, first.client, first.token, *g.Token, g.ID, first.at, v.Until-first.at)
		}
	}
}
