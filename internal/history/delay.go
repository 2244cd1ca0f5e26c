package history

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// learnDelays collects the lock-delay each lease was granted with, from
// the grant's reply. (A lease whose grant reply was lost has no expiry any
// client knew of, so only a delay the database declared bounds it.)
func (c *checker) learnDelays() {
	for _, op := range c.ops {
		if op.Kind != Grant || op.Result != OK || op.Outcome == string(locker.Renewed) {
			continue // a renewal keeps the lease's delay
		}
		if f := c.leases[leaseID{op.Key, op.Token}]; f != nil {
			f.delay, f.delayKnown = op.LockDelay, true
		}
	}
}

// delayOf is the lock-delay the lease granted by ev carried, if a client
// was told of the grant.
func (c *checker) delayOf(ev lockview.Event) (time.Duration, bool) {
	if f := c.leases[leaseID{ev.Key, *ev.Token}]; f != nil && f.delayKnown {
		return f.delay, true
	}
	return 0, false
}

// checkDelayAfterLapse flags grant g when it came inside the lock-delay
// of the key's previous lease last, which was neither released nor valid
// at g. The delay runs from the lease's expiry: no earlier than the latest
// one a client was told. A force-expire sets the expiry to the moment of
// its update, which its event (written later, perhaps much later when the
// event table was busy) does not bound from below: there the delay_until
// the event declares is what is checked.
func (c *checker) checkDelayAfterLapse(g lockview.Event, last *lastLease) {
	from := time.Time{}
	id := idOf(last)
	_, forced := c.forcedAt[id]
	if f := c.leases[id]; f != nil && f.known && !forced {
		from = f.maxExpiry
	}
	c.checkDelay(g, last, from)
}

// declaredDelay is the end of the lock-delay a force_* event's detail
// says the database started (zero: none).
func declaredDelay(ev lockview.Event) time.Time {
	s, ok := ev.Detail["delay_until"].(string)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// forceReleasedEnd is when a force-released lease ended, no later than it
// did: the force-release (its event carries the moment of its update), or
// the lease's expiry if that came first — the latest expiry a client was
// told, which the real one is no earlier than. Zero when no client knew the
// expiry.
func (c *checker) forceReleasedEnd(last *lastLease) time.Time {
	f := c.leases[leaseID{last.ev.Key, *last.ev.Token}]
	if f == nil || !f.known {
		return time.Time{}
	}
	if f.maxExpiry.Before(last.forceReleased) {
		return f.maxExpiry
	}
	return last.forceReleased
}

// checkDelay flags grant g when it came inside the lock-delay of the key's
// previous lease, which ended without its holder's release (expired,
// force-expired or force-released) no earlier than end (zero: unknown):
// nobody may be granted the key before end plus the lease's lock-delay,
// nor before a delay_until the database declared, unless an operator ended
// the delay first (a delay_ended event between them).
func (c *checker) checkDelay(g lockview.Event, last *lastLease, end time.Time) {
	var until time.Time
	d, known := c.delayOf(last.ev)
	if known && d > 0 && !end.IsZero() {
		until = end.Add(d)
	}
	if last.delayUntil.After(until) {
		until = last.delayUntil
	}
	if until.IsZero() {
		return
	}
	c.stats.DelayedGrants++
	if !last.delayEnded.IsZero() {
		return // ended early, before g in the log
	}
	if g.OccurredAt.Before(until) {
		c.fail("grant inside a lock-delay on %q: event %d granted token %d to %q at %s, but token %d of %q ended at %s without its holder's release and the key was delayed until %s (%s later)",
			g.Key, g.ID, *g.Token, deref(g.Owner), g.OccurredAt.Format(time.RFC3339Nano), *last.ev.Token,
			deref(last.ev.Owner), fmtTime(end), until.Format(time.RFC3339Nano), until.Sub(g.OccurredAt))
	}
}

// noteCleanRelease counts grant g when it came inside the lock-delay its
// key's previous lease would have had, had it not been released by its
// holder: a clean release starts no delay.
func (c *checker) noteCleanRelease(g lockview.Event, last *lastLease) {
	if d, ok := c.delayOf(last.ev); ok && d > 0 && g.OccurredAt.Before(last.releasedAt.Add(d)) {
		c.stats.GrantsAfterCleanRelease++
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.Format(time.RFC3339Nano)
}
