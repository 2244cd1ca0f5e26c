package history

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

// LeaseEnd is how and when a client holding a lease with locker.Keepalive
// stopped believing it held it.
type LeaseEnd struct {
	Client int
	Key    string
	Owner  string
	Token  int64
	// At is this process's clock (wall and monotonic) when the Keepalive
	// cancelled its context (locker.Error.At), or when the client
	// stopped the Keepalive itself.
	At time.Time
	// Lost: the Keepalive cancelled with locker.ErrLeaseLost (the lease was
	// lost or could no longer be proven). False: the client stopped it.
	Lost bool
	// Remaining is the last renewed lease's ValidFor() at At: the time left
	// before its local deadline (send time of the renewal + TTL). A lost
	// lease must have Remaining > 0.
	Remaining time.Duration
	// ExpiresAt is the database's expires_at of the last renewal the client
	// knew of; the lease cannot be stolen before it.
	ExpiresAt time.Time
	Cause     string
	// OnArrival is the lease's ValidFor() when the grant returned, and
	// Margin the keepalive's safety margin (locker.Config.SafetyMargin; 0:
	// unknown). No more than Margin: the lease's trust window had passed
	// before the client held it (its grant statement waited for the row, or
	// its reply was late), so its keepalive must end before it returns
	// (EndedAtStart): such a lease is counted as untrusted on arrival, and
	// checked for that and against steals only.
	OnArrival time.Duration
	Margin    time.Duration
	// EndedAtStart: the Keepalive's context had already ended when
	// Keepalive returned. A lease untrusted on arrival must never have been
	// trusted: its keepalive ends before it returns (it may have arrived
	// after its database expiry, which no cancellation can then precede).
	// Any keepalive that did never vouched for its lease, so only steals
	// hold it to when it ended.
	EndedAtStart bool
	// Diagnosis, printed with a violation: the keepalive's last database
	// call (start and end on this clock; end zero if it had not returned)
	// and the worst scheduling delay this process saw in the second before.
	CallStart, CallEnd time.Time
	SchedLag           time.Duration
}

// EndLease records e.
func (r *Recorder) EndLease(e LeaseEnd) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	r.mu.Unlock()
}

// LeaseEnds returns a copy of every lease end recorded.
func (r *Recorder) LeaseEnds() []LeaseEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LeaseEnd(nil), r.ends...)
}

// checkLeaseEnds verifies property 5: a lost lease's holder was told before
// its local deadline and before the database expiry it knew of (one
// untrusted on arrival, at once; one whose keepalive ended before it was
// handed over is not held to when), and every holder stopped believing
// before its lease was stolen. The database's
// event times and At are compared directly: the server runs on this machine.
func (c *checker) checkLeaseEnds() {
	stealOf := map[leaseID]lockview.Event{} // a lease → the grant that stole it
	for id, prev := range c.stolenPrev {
		stealOf[leaseID{id.key, prev}] = c.granted[id]
	}
	for _, e := range c.ends {
		c.stats.LeaseEnds++
		if e.Lost {
			c.stats.LeasesLost++
			switch {
			case e.OnArrival <= e.Margin && (e.EndedAtStart || e.OnArrival <= 0):
				// Untrusted from the start: never trusted at all. Counted,
				// and reported as a finding. (A lease handed off from a
				// queue is trusted to a margin of at most half its claim
				// window: it may arrive with less than Margin left, still
				// trusted for a moment, and is then checked as any other.
				// One that arrived with nothing left never is.)
				c.stats.UntrustedOnArrival++
				if !e.EndedAtStart {
					c.fail("client %d's keepalive of %q (token %d), untrusted on arrival (%s left, margin %s), did not end before it returned (%s)",
						e.Client, e.Key, e.Token, e.OnArrival, e.Margin, e.Cause)
				}
			case e.EndedAtStart:
				// Trusted on arrival, but its keepalive ended before it was
				// handed over (a session's binding that failed, or a session
				// already lost): its holder never had a running Context to
				// trust, so when it ended is no promise broken. What its
				// leases' ValidFor still said is property 9's.
			case e.Remaining <= 0:
				c.fail("client %d's keepalive of %q (token %d) cancelled at or after the lease's local deadline (%s; %s)",
					e.Client, e.Key, e.Token, e.Cause, e.diagnosis())
			case !e.At.Before(e.ExpiresAt):
				c.fail("client %d's keepalive of %q (token %d) cancelled at %s, not before the expiry %s it knew of (%s)",
					e.Client, e.Key, e.Token, e.At.Format(time.StampMicro), e.ExpiresAt.Format(time.StampMicro), e.diagnosis())
			}
		}
		steal, ok := stealOf[leaseID{e.Key, e.Token}]
		if !ok {
			continue
		}
		c.stats.StealsOfEndedLeases++
		if !e.At.Before(steal.OccurredAt) {
			c.fail("overlapping leases on %q: token %d was stolen (by token %d at %s) while client %d still trusted it (until %s)",
				e.Key, e.Token, *steal.Token, steal.OccurredAt.Format(time.StampMicro), e.Client, e.At.Format(time.StampMicro))
		}
	}
}

// diagnosis says when the keepalive's last database call ran, relative to
// the moment the client saw the cancellation, and how late timers fired.
func (e LeaseEnd) diagnosis() string {
	if e.CallStart.IsZero() {
		return fmt.Sprintf("no keepalive call recorded; %s of the lease left when the grant returned; worst timer delay in the second before: %s",
			e.OnArrival.Round(time.Millisecond), e.SchedLag.Round(time.Millisecond))
	}
	end := "had not returned"
	if !e.CallEnd.IsZero() {
		end = fmt.Sprintf("returned %s before", e.At.Sub(e.CallEnd).Round(time.Millisecond))
	}
	return fmt.Sprintf("last keepalive call started %s before the cancellation and %s; %s of the lease left when the grant returned; worst timer delay in the second before: %s",
		e.At.Sub(e.CallStart).Round(time.Millisecond), end, e.OnArrival.Round(time.Millisecond), e.SchedLag.Round(time.Millisecond))
}
