package history

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// A lease that changes mode (locker's Downgrade and Upgrade) ends in the
// transaction that grants its holder the new one, and the log says so. A
// downgraded event is the grant of the shared lease (its token, its mode
// in the detail), after the end of the exclusive one it names
// (previous_token). An upgraded event is the end of the shared lease or
// permit it names; the exclusive grant follows as an acquired event. Each
// end is its holder's own, a clean release: it starts no lock-delay, and
// whatever is granted after it stands beside nothing of it. Every
// property then holds the new lease as any other: a downgrade's shared
// grant must come with a token above every exclusive one (the lease it
// ended too), an upgrade's exclusive grant beside no live holder.

// converted walks a downgraded or upgraded event of key k.
func (c *checker) converted(k *keyState, ev lockview.Event, tokenKey map[int64]string) {
	if ev.Kind == lockdb.EventUpgraded {
		c.stats.Upgrades++
		c.endConverted(k, ev, *ev.Token)
		return
	}
	c.stats.Downgrades++
	if ev.PreviousToken == nil {
		c.fail("event %d: a downgrade of %q names no exclusive lease", ev.ID, ev.Key)
	} else {
		c.endConverted(k, ev, *ev.PreviousToken)
	}
	c.logGrant(k, ev, tokenKey)
}

// endConverted ends lease tok of key k at ev, as its holder's release.
func (c *checker) endConverted(k *keyState, ev lockview.Event, tok int64) {
	p := k.open[tok]
	if p == nil {
		c.fail("event %d: %s ends token %d on %q, which is not an unreleased lease of the key", ev.ID, ev.Kind, tok, ev.Key)
		return
	}
	delete(k.open, tok)
	p.released, p.forceReleased, p.releasedAt = true, time.Time{}, ev.OccurredAt
	c.releasedLog[leaseID{ev.Key, tok}] = true
}

// toldAs is the outcome a client is told of grant event ev: a downgrade's
// shared lease is acquired.
func toldAs(ev lockview.Event) string {
	if ev.Kind == lockdb.EventDowngraded {
		return lockdb.EventAcquired
	}
	return ev.Kind
}
