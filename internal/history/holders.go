package history

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// keyState is one key while the event log is walked.
type keyState struct {
	// last is the key's latest grant, and how it ended so far.
	last *lastLease
	// open holds the key's grants not yet released, force-released or
	// taken over by a later grant, by token: its holders as far as the log
	// says (one at most while the key is exclusive). A holder that lapsed
	// and was pruned unlogged stays here, harmless: it is never proven
	// valid again.
	open map[int64]*lastLease
	// unfenced are the key's grants that no conflicting grant has followed
	// yet (checker.fencedBy).
	unfenced []*lastLease
	// The largest token granted on the key, and the largest exclusive one.
	maxToken, maxExclusive    int64
	granted, grantedExclusive bool
}

// heldAt is a holder its key's grant came beside: its lease was valid
// until end, after the grant.
type heldAt struct {
	lease *lastLease
	end   time.Time
}

func tokenOf(l *lastLease) int64 { return *l.ev.Token }

func idOf(l *lastLease) leaseID { return leaseID{l.ev.Key, *l.ev.Token} }

// checkTokenOrder flags grant g whose token is not larger than every
// token granted on its key before it (an exclusive grant) or than every
// exclusive one (a shared or permit grant: holders that may overlap draw
// their tokens in any order).
func (c *checker) checkTokenOrder(g *lastLease, k *keyState) {
	ev, tok := g.ev, tokenOf(g)
	switch {
	case g.mode.exclusive() && k.granted && tok <= k.maxToken:
		c.fail("token went backwards on %q: event %d granted %d to %q after a grant of %d",
			ev.Key, ev.ID, tok, deref(ev.Owner), k.maxToken)
	case !g.mode.exclusive() && k.grantedExclusive && tok <= k.maxExclusive:
		c.fail("token went backwards on %q: event %d granted %d (%s) to %q after an exclusive grant of %d",
			ev.Key, ev.ID, tok, g.mode, deref(ev.Owner), k.maxExclusive)
	}
	if !k.granted || tok > k.maxToken {
		k.maxToken, k.granted = tok, true
	}
	if g.mode.exclusive() && (!k.grantedExclusive || tok > k.maxExclusive) {
		k.maxExclusive, k.grantedExclusive = tok, true
	}
}

// stealVictim is the holder steal g took its place from: the one its
// event names (previous_token) or, on an exclusive key, the key's latest
// grant. Nil for an acquired grant; nil, after a violation, when there is
// none to take over; and nil for an exclusive steal from shared or permit
// holders that names none, since it takes the key over from them all.
func (c *checker) stealVictim(g *lastLease, k *keyState) *lastLease {
	ev, last := g.ev, k.last
	if ev.Kind != lockdb.EventStolen {
		return nil
	}
	exclusiveKey := last == nil || last.mode.exclusive()
	var victim *lastLease
	switch {
	case ev.PreviousToken != nil && !(g.mode.exclusive() && exclusiveKey):
		if victim = k.open[*ev.PreviousToken]; victim == nil {
			c.fail("event %d: %q stolen with token %d from token %d, which was no unreleased lease of the key",
				ev.ID, ev.Key, tokenOf(g), *ev.PreviousToken)
			return nil
		}
	case exclusiveKey:
		if last == nil || last.released {
			c.fail("event %d: %q stolen with token %d, but no unreleased lease preceded it", ev.ID, ev.Key, tokenOf(g))
			return nil
		}
		victim = last
	case g.mode.exclusive():
		if len(k.open) == 0 {
			c.fail("event %d: %q stolen with token %d, but no unreleased lease preceded it", ev.ID, ev.Key, tokenOf(g))
		}
		return nil
	default:
		c.fail("event %d: %q stolen with token %d (%s), but the event names no previous token: whose place it took is unknown",
			ev.ID, ev.Key, tokenOf(g), g.mode)
		return nil
	}
	c.stolenPrev[idOf(g)] = tokenOf(victim)
	return victim
}

// validUntil is the end of holder h's lease, no earlier than it ended:
// the latest expiry a client was told, or an operator's force-expire if
// earlier. False when nothing is known of it.
func (c *checker) validUntil(h *lastLease) (time.Time, bool) {
	id := idOf(h)
	f := c.leases[id]
	forced, wasForced := c.forcedAt[id]
	switch {
	case f != nil && f.known && wasForced:
		if forced.Before(f.maxExpiry) {
			return forced, true
		}
		return f.maxExpiry, true
	case f != nil && f.known:
		return f.maxExpiry, true
	case wasForced:
		return forced, true
	}
	return time.Time{}, false
}

// heldAtGrant is every holder of k proven valid when g was granted, by
// token.
func (c *checker) heldAtGrant(g *lastLease, k *keyState) []heldAt {
	var held []heldAt
	for _, h := range k.open {
		if end, ok := c.validUntil(h); ok && g.ev.OccurredAt.Before(end) {
			held = append(held, heldAt{h, end})
		}
	}
	sort.Slice(held, func(i, j int) bool { return tokenOf(held[i].lease) < tokenOf(held[j].lease) })
	return held
}

// checkHolders flags grant g when it came beside a holder it cannot
// stand beside (an exclusive one, one of the other mode, or the one whose
// place it stole) while that holder's lease was valid, or made a
// semaphore's holders more than N: N is the least of the permits of g and
// the permit holders valid beside it. It reports whether it flagged g.
func (c *checker) checkHolders(g, victim *lastLease, held []heldAt) bool {
	flagged := false
	n := g.mode.permits
	var permits []heldAt
	for _, h := range held {
		switch {
		case h.lease == victim || !h.lease.mode.compatible(g.mode):
			c.failOverlap(g, h)
			flagged = true
		case g.mode.mode == ModeSemaphore:
			permits = append(permits, h)
			n = min(n, h.lease.mode.permits)
		}
	}
	if g.mode.mode == ModeSemaphore && len(permits) >= n {
		c.failPermits(g, permits, n)
		flagged = true
	}
	return flagged
}

func (c *checker) failOverlap(g *lastLease, h heldAt) {
	ev, prev := g.ev, h.lease.ev
	if g.mode.exclusive() && h.lease.mode.exclusive() {
		c.fail("overlapping leases on %q: event %d granted token %d to %q at %s, but token %d of %q was valid until %s (%s later)",
			ev.Key, ev.ID, *ev.Token, deref(ev.Owner), ev.OccurredAt.Format(time.RFC3339Nano), *prev.Token,
			deref(prev.Owner), h.end.Format(time.RFC3339Nano), h.end.Sub(ev.OccurredAt))
		return
	}
	c.fail("overlapping leases on %q: event %d granted token %d (%s) to %q at %s, but token %d (%s) of %q was valid until %s (%s later)",
		ev.Key, ev.ID, *ev.Token, g.mode, deref(ev.Owner), ev.OccurredAt.Format(time.RFC3339Nano), *prev.Token, h.lease.mode,
		deref(prev.Owner), h.end.Format(time.RFC3339Nano), h.end.Sub(ev.OccurredAt))
}

func (c *checker) failPermits(g *lastLease, permits []heldAt, n int) {
	ev := g.ev
	valid := make([]string, len(permits))
	for i, h := range permits {
		valid[i] = fmt.Sprintf("%d of %q until %s", tokenOf(h.lease), deref(h.lease.ev.Owner), h.end.Format(time.RFC3339Nano))
	}
	c.fail("more than %d holders of semaphore %q: event %d granted token %d to %q at %s, while %d permits were valid (tokens %s)",
		n, ev.Key, ev.ID, *ev.Token, deref(ev.Owner), ev.OccurredAt.Format(time.RFC3339Nano), len(permits), strings.Join(valid, ", "))
}

// noteFencing records g as the grant after which the fenced writes of
// each earlier holder of the key it conflicts with are stale
// (checkWrites): any grant after an exclusive one; an exclusive grant, or
// one of the other mode, after a shared or permit one; the steal of a
// permit; and a permit grant that made more than N counting the earlier
// permit's holder beside those proven valid at it, so that the holder, had
// it still written, would have been one too many.
func (c *checker) noteFencing(g, victim *lastLease, k *keyState, held []heldAt) {
	valid := map[*lastLease]bool{}
	for _, h := range held {
		if h.lease != victim && h.lease.mode.mode == ModeSemaphore {
			valid[h.lease] = true
		}
	}
	kept := k.unfenced[:0]
	for _, h := range k.unfenced {
		if fencedBy(h, g, victim, len(valid), valid[h]) {
			c.fencedBy[idOf(h)] = g.ev
		} else {
			kept = append(kept, h)
		}
	}
	k.unfenced = kept
}

// fencedBy reports whether grant g, after h on their key, conflicts with
// h; validPermits permit holders were proven valid at g (hValid: h among
// them).
func fencedBy(h, g, victim *lastLease, validPermits int, hValid bool) bool {
	switch {
	case h == victim || !h.mode.compatible(g.mode):
		return true
	case g.mode.mode != ModeSemaphore:
		return false
	}
	others := validPermits
	if hValid {
		others--
	}
	return others+2 > min(g.mode.permits, h.mode.permits)
}

// takeOver ends the holders of k that g took the key over from: the one
// whose place it stole, and every one it cannot stand beside. They had
// lapsed (checkHolders flags any still valid); the grant that took over a
// lease neither force-expired nor released is recorded for property 8.
func (c *checker) takeOver(g, victim *lastLease, k *keyState) {
	for tok, h := range k.open {
		if h != victim && h.mode.compatible(g.mode) {
			continue
		}
		delete(k.open, tok)
		if _, forced := c.forcedAt[idOf(h)]; !forced {
			c.tookOver[idOf(h)] = g.ev
		}
	}
}

// grantOn walks grant event ev of mode m on its key (properties 1, 2, 4
// and 6): its token's order, the holders it came beside, the lock-delay
// of the lease before it, and which holders it ended.
func (c *checker) grantOn(k *keyState, ev lockview.Event, m grantMode) {
	g := &lastLease{ev: ev, mode: m}
	c.checkTokenOrder(g, k)
	victim := c.stealVictim(g, k)
	held := c.heldAtGrant(g, k)
	flagged := c.checkHolders(g, victim, held)
	if prev := k.last; prev != nil {
		if !prev.delayEnded.IsZero() {
			c.delayCut[idOf(g)] = true
		}
		if prev.mode.exclusive() && !flagged {
			switch {
			case !prev.released:
				c.checkDelayAfterLapse(ev, prev)
			case !prev.forceReleased.IsZero():
				c.checkDelay(ev, prev, c.forceReleasedEnd(prev))
			default:
				c.noteCleanRelease(ev, prev)
			}
		}
	}
	c.noteFencing(g, victim, k, held)
	c.takeOver(g, victim, k)
	c.granted[idOf(g)] = ev
	c.modes[idOf(g)] = m
	k.last = g
	k.open[tokenOf(g)] = g
	k.unfenced = append(k.unfenced, g)
}
