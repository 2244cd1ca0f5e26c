package history

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// Observed is what the database kept after a run.
type Observed struct {
	// Events is distributed_lock_event in event_id order. On one key,
	// event_id order is the order the grants took effect: every grant and
	// release inserts its event while it holds the key's row lock, so the
	// next statement on that key draws its event_id only after this one
	// committed.
	Events []lockview.Event
	// Writes is every committed row of the guarded table. CommitSeq is the
	// key's commit order: each fenced transaction bumped a per-key counter
	// row and held that row lock until it committed.
	Writes []GuardedWrite
	// SeenToken, when set, is for each write (same index as Writes) the
	// token of the latest grant on the key that the writing statement could
	// see. A committed grant newer than the write's own token means the
	// write was made after its lease had been handed on.
	SeenToken []int64
	// EventTx is, for each event_id, the top-level transaction that wrote
	// it (pg_current_xact_id(), recorded by a trigger CreateGuarded adds):
	// the events of one transaction became visible together.
	EventTx map[int64]int64
	// Sessions is every session the database kept, by id (sessions.go).
	Sessions map[int64]*ObservedSession
}

// Stats counts what a check covered.
type Stats struct {
	Grants         int // grant events (acquired + stolen)
	Steals         int // stolen events
	Releases       int // released + force_released events
	ForceExpires   int
	Renewals       int // successful client renewals, Renew or a renewing Acquire
	Held           int // grants refused because another owner held the key
	GaveUp         int // waiting Acquires whose context ended
	FencedWrites   int // committed guarded rows checked
	WritesSeen     int // fenced transactions clients saw commit
	RejectedWrites int // fenced transactions refused with ErrNotHeld
	Unknown        int // operations whose outcome the client could not know
	Failed         int // operations that failed without effect
	ClientOps      int
	// Kept leases (LeaseEnd): how many ended, how many of them were lost,
	// how many were past their local deadline when the grant returned, and
	// how many were stolen afterwards.
	LeaseEnds           int
	LeasesLost          int
	UntrustedOnArrival  int
	StealsOfEndedLeases int
	// LazyReleasesLost counts acknowledged lazy releases that a later
	// server crash took with it (the lease then ran to its expiry).
	LazyReleasesLost int
	// Sets: set calls (a set's Acquire, a set's waiting Acquire) granted, the keys they
	// were granted, and set calls refused or given up (nothing taken);
	// MixedSetGrants: granted set calls whose keys asked for modes of
	// more than one kind (exclusive beside shared, say).
	SetGrants, SetKeys, SetsRefused, MixedSetGrants int
	// Lock-delay: grants that followed a lease that ended without its
	// holder's release and carried a lock-delay (each checked against the
	// delay's end), delays an operator ended early, and grants that came,
	// rightly, within the delay of a lease its holder released.
	DelayedGrants, DelaysEnded, GrantsAfterCleanRelease int
	// DeadlocksRefused counts deadlock_refused events: a waiter's record
	// on a key removed because its wait closed a cycle (a set's refusal
	// has one per key).
	DeadlocksRefused int
	// Sessions: processes killed while a session kept their leases, the
	// leases those sessions kept (each checked against the session's
	// expiry), and how many of them were stolen after it.
	KilledSessions, KilledSessionLeases, KilledLeasesStolen int
	// Modes: grant events of shared holders and of semaphore permits (the
	// rest of Grants are exclusive), and exclusive grants that followed a
	// shared or permit grant on their key: a writer after the readers.
	SharedGrants, PermitGrants, ExclusiveAfterHolders int
	// ValidFor (Vouched): leases whose holder's ValidFor vouched for them,
	// and how many of those a conflicting grant followed (each checked
	// against the promise); the same for leases kept by a session.
	Vouched, VouchedThenTaken, VouchedBound, VouchedBoundThenTaken int
	// Conversions (convert.go): downgraded and upgraded events, each the
	// end of one lease in the transaction that granted its holder another.
	Downgrades, Upgrades int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d ops: %d grants (%d steals), %d renewals, %d releases, %d force-expires, %d refused as held, %d waits given up, %d fenced writes checked (%d seen to commit), %d stale writes rejected, %d failed, %d unknown; %d kept leases ended (%d lost, %d untrusted on arrival, %d stolen after); %d lazy releases lost in a crash",
		s.ClientOps, s.Grants, s.Steals, s.Renewals, s.Releases, s.ForceExpires, s.Held, s.GaveUp, s.FencedWrites, s.WritesSeen,
		s.RejectedWrites, s.Failed, s.Unknown, s.LeaseEnds, s.LeasesLost, s.UntrustedOnArrival, s.StealsOfEndedLeases,
		s.LazyReleasesLost) +
		fmt.Sprintf("; %d set grants (%d keys, %d of mixed modes), %d sets refused; %d grants after a lock-delay, %d delays ended early, %d grants within the delay of a released lease; %d waits refused as deadlocks (records)",
			s.SetGrants, s.SetKeys, s.MixedSetGrants, s.SetsRefused, s.DelayedGrants, s.DelaysEnded, s.GrantsAfterCleanRelease, s.DeadlocksRefused) +
		fmt.Sprintf("; %d killed sessions kept %d leases (%d stolen after the session's expiry)",
			s.KilledSessions, s.KilledSessionLeases, s.KilledLeasesStolen) +
		fmt.Sprintf("; %d shared grants, %d semaphore permits granted, %d exclusive grants after holders",
			s.SharedGrants, s.PermitGrants, s.ExclusiveAfterHolders) +
		fmt.Sprintf("; ValidFor vouched for %d leases (%d taken after), %d of them kept by a session (%d taken after)",
			s.Vouched, s.VouchedThenTaken, s.VouchedBound, s.VouchedBoundThenTaken) +
		fmt.Sprintf("; %d downgrades, %d upgrades", s.Downgrades, s.Upgrades)
}

// Report is the result of Check.
type Report struct {
	Violations []string
	Stats      Stats
}

// OK reports whether no violation was found.
func (r Report) OK() bool { return len(r.Violations) == 0 }

type leaseID struct {
	key   string
	token int64
}

// leaseFacts is what the clients learnt about one grant.
type leaseFacts struct {
	owner string
	// maxExpiry is the latest database-clock expiry a successful grant or
	// renewal of this lease returned. With one TTL for every call, the
	// row's expires_at is the expiry set by the last renewal, which is also
	// the latest, so maxExpiry never overstates the lease.
	maxExpiry time.Time
	// lastSent is the latest local send time of a successful grant or
	// renewal; the database could not have set the expiry before it, so the
	// lease lasted at least until lastSent + ttl on the local clock.
	lastSent time.Duration
	ttl      time.Duration
	known    bool
	// delay is the lock-delay the grant asked for (Op.LockDelay).
	delay      time.Duration
	delayKnown bool
}

// Check verifies a run. The properties, each sound (it flags only what the
// recorded data proves wrong):
//
//  1. Token order: on every key, each exclusive grant event's token is
//     larger than every earlier grant's on that key (releases and prunes in
//     between included), each shared or permit grant's larger than every
//     earlier exclusive grant's, and no token is granted on two keys or
//     twice.
//  2. No overlapping leases on the database clock: a grant while a holder
//     of the key it cannot stand beside (an exclusive one, or any one beside
//     an exclusive grant, or one of the other mode, or the permit it
//     steals) was neither released nor force-released must come no earlier
//     than that holder's lease's end — the latest expiry a client was told,
//     or an operator's force-expire if earlier — comparing database times
//     only; and a permit grant must not come while N permit holders' leases
//     had not ended, N the least of their permits and its own.
//     The same on the local clock for steals: the stealer's reply cannot come
//     before the victim's last successful renewal was sent plus the TTL.
//     Not for a lease bound to a session (Op.Bound), whose end is the
//     session's: property 5 checks its holder, 8 a killed process's.
//  3. The log and the clients agree: every grant a client was told about is
//     in the log with its kind and mode, and every logged grant was asked
//     for; every successful release is logged; grants on one key that do
//     not overlap in real time, one of them exclusive, got increasing
//     tokens in that real-time order.
//  4. Fencing: every write's token was granted to its writer on that key;
//     every write saw its own grant committed and no grant that conflicts
//     with its lease (fencedBy: on an exclusive key, no newer grant); no
//     write commits after a write under a lease granted at or after such a
//     grant (on an exclusive key: the writes in commit order carry
//     non-decreasing tokens, so each holder's writes form one run, and no
//     older holder writes after a newer one); and the guarded table holds
//     exactly the writes clients saw commit (plus any whose commit reply
//     was lost).
//  5. Kept leases (ends, from clients using locker.Keepalive): a lease's
//     keepalive reported it lost before its local deadline and before the
//     database expiry the client knew of, and every holder stopped trusting
//     its lease before the lease was stolen.
//  6. Lock-delay: an exclusive lease that ended without its holder's
//     release (expired, force-expired, force-released) keeps its key from
//     every grant until its end plus the lock-delay its client asked for
//     (Op.LockDelay), and until any delay_until the database declared in
//     the force_* event, unless a delay_ended event came first; on the
//     local clock, a steal's reply cannot come before the victim's last
//     renewal was sent plus TTL plus delay. A clean release starts none
//     (counted, not required: Stats.GrantsAfterCleanRelease).
//  7. Sets (ops with Set): a set's keys are granted in one transaction
//     (Observed.EventTx), all or none: a granted call's grant events share
//     one transaction, no call is told part of its set was granted, and
//     every transaction that granted keys to a set's owner granted whole
//     sets it asked for, so no key of a set is ever visible granted
//     without the rest.
//  8. Sessions (ops of Kind SessionKill): every lease a killed process's
//     session kept (bound to it in the database) was taken over by no
//     grant (one it could not stand beside, or the steal of its permit)
//     before the session's last expires_at plus the lease's lock-delay.
//  9. ValidFor (vouched, from holders that read locker.Lease.ValidFor of
//     the leases they kept before each guarded write): no grant that
//     conflicts with a lease (as in property 4) took effect before the
//     last instant its holder's ValidFor vouched for, up to its release:
//     no client heard of that grant, or of a later grant of the key,
//     before then, on the clients' own clock. For every kind of kept
//     lease, renewed on its own or bound to a session.
func Check(ops []Op, ends []LeaseEnd, vouched []Vouched, obs Observed) Report {
	c := checker{ops: ops, ends: ends, vouched: vouched, obs: obs, leases: map[leaseID]*leaseFacts{}}
	c.learnLeases()
	c.learnDelays()
	c.checkLog()
	c.checkClientGrants()
	c.checkSets()
	c.checkRealTimeOrder()
	c.checkWrites()
	c.checkLeaseEnds()
	c.checkKilledSessions()
	c.checkVouched()
	c.countOps()
	return Report{Violations: c.violations, Stats: c.stats}
}

type checker struct {
	ops        []Op
	ends       []LeaseEnd
	vouched    []Vouched
	obs        Observed
	leases     map[leaseID]*leaseFacts
	violations []string
	stats      Stats

	granted     map[leaseID]lockview.Event // grant events by key and token
	modes       map[leaseID]grantMode      // the mode of each grant event
	forcedAt    map[leaseID]time.Time      // force_expired event times
	stolenPrev  map[leaseID]int64          // steal → token it took over from
	releasedLog map[leaseID]bool
	delayCut    map[leaseID]bool // grants after an operator ended the key's delay
	// fencedBy is, for each lease, the first later grant of its key that
	// conflicts with it: its holder's fenced writes must not commit after
	// that grant (holders.go).
	fencedBy map[leaseID]lockview.Event
	// tookOver is, for each lease neither released nor force-ended, the
	// grant that took its key over from it.
	tookOver map[leaseID]lockview.Event
}

func (c *checker) fail(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// learnLeases collects, per lease, the latest expiry and send time clients
// were told about.
func (c *checker) learnLeases() {
	for _, op := range c.ops {
		if op.Result != OK || (op.Kind != Grant && op.Kind != Renew) {
			continue
		}
		id := leaseID{op.Key, op.Token}
		f := c.leases[id]
		if f == nil {
			f = &leaseFacts{owner: op.Owner}
			c.leases[id] = f
		}
		if op.Bound {
			continue // its expiry is its session's: known to nobody here
		}
		if !f.known || op.ExpiresAt.After(f.maxExpiry) {
			f.maxExpiry = op.ExpiresAt
		}
		if !f.known || op.Call > f.lastSent {
			f.lastSent = op.Call
		}
		f.ttl = op.TTL
		f.known = true
	}
}

// lastLease is one grant of a key (its holder's lease) while the event log
// is walked, and how it ended so far.
type lastLease struct {
	ev   lockview.Event
	mode grantMode
	// released: by its holder (a clean release, which starts no
	// lock-delay) or, with forceReleased, by an operator.
	released      bool
	releasedAt    time.Time
	forceReleased time.Time
	// delayUntil is the end of a lock-delay the database declared in a
	// force_* event's detail; delayEnded is the first delay_ended event on
	// the key since this grant: the lease's lock-delay is over then.
	delayUntil time.Time
	delayEnded time.Time
}

// checkLog walks the event log key by key (properties 1, 2 and 6, and
// what property 4 needs of the grants).
func (c *checker) checkLog() {
	keys := map[string]*keyState{}
	tokenKey := map[int64]string{}
	c.granted = map[leaseID]lockview.Event{}
	c.modes = map[leaseID]grantMode{}
	c.forcedAt = map[leaseID]time.Time{}
	c.stolenPrev = map[leaseID]int64{}
	c.releasedLog = map[leaseID]bool{}
	c.delayCut = map[leaseID]bool{}
	c.fencedBy = map[leaseID]lockview.Event{}
	c.tookOver = map[leaseID]lockview.Event{}
	for _, ev := range c.obs.Events {
		k := keys[ev.Key]
		if k == nil {
			k = &keyState{open: map[int64]*lastLease{}}
			keys[ev.Key] = k
		}
		if ev.Kind == lockdb.EventDelayEnded {
			// An operator ended the key's lock-delay: it may name the
			// lease whose delay it was, or nothing.
			c.stats.DelaysEnded++
			if p := k.last; p != nil && p.delayEnded.IsZero() {
				p.delayEnded = ev.OccurredAt
			}
			continue
		}
		// A waiter's record left the queue, refused as a deadlock or given
		// up by its caller: no lease began or ended, so it names no token
		// and changes no key's grants.
		if ev.Kind == lockdb.EventDeadlockRefused {
			c.stats.DeadlocksRefused++
			continue
		}
		if ev.Kind == lockdb.EventGaveUp {
			continue
		}
		if ev.Token == nil {
			c.fail("event %d (%s on %q) has no token", ev.ID, ev.Kind, ev.Key)
			continue
		}
		tok := *ev.Token
		id := leaseID{ev.Key, tok}
		switch ev.Kind {
		case lockdb.EventAcquired, lockdb.EventStolen:
			c.logGrant(k, ev, tokenKey)
		case lockdb.EventDowngraded, lockdb.EventUpgraded:
			c.converted(k, ev, tokenKey)
		case lockdb.EventReleased, lockdb.EventForceReleased:
			c.stats.Releases++
			p := k.open[tok]
			if p == nil {
				c.fail("event %d: %s of token %d on %q, which is not the key's current grant", ev.ID, ev.Kind, tok, ev.Key)
				continue
			}
			delete(k.open, tok)
			p.released = true
			c.releasedLog[id] = true
			if ev.Kind == lockdb.EventForceReleased {
				p.forceReleased = ev.OccurredAt
				p.delayUntil = declaredDelay(ev)
			} else {
				p.forceReleased = time.Time{}
				p.releasedAt = ev.OccurredAt
			}
		case lockdb.EventForceExpired:
			c.stats.ForceExpires++
			p := k.open[tok]
			if p == nil {
				c.fail("event %d: force-expire of token %d on %q, which is not the key's current grant", ev.ID, tok, ev.Key)
				continue
			}
			if _, done := c.forcedAt[id]; !done {
				c.forcedAt[id] = ev.OccurredAt
			}
			if d := declaredDelay(ev); d.After(p.delayUntil) {
				p.delayUntil = d
			}
		}
	}
}

// logGrant is a grant event on key k (properties 1, 2 and 6): its token
// unique, its mode.
func (c *checker) logGrant(k *keyState, ev lockview.Event, tokenKey map[int64]string) {
	tok := *ev.Token
	c.stats.Grants++
	if ev.Kind == lockdb.EventStolen {
		c.stats.Steals++
	}
	if other, dup := tokenKey[tok]; dup {
		c.fail("token %d granted twice (on %q and on %q)", tok, other, ev.Key)
	}
	tokenKey[tok] = ev.Key
	m, err := eventMode(ev)
	if err != nil {
		c.fail("event %d (grant of %q token %d): %v", ev.ID, ev.Key, tok, err)
		m = exclusiveMode
	}
	c.countMode(m, k)
	c.grantOn(k, ev, m)
}

// checkClientGrants matches client operations with the log (property 3,
// and property 2 on the local clock).
func (c *checker) checkClientGrants() {
	asked := map[leaseID]bool{}
	for _, op := range c.ops {
		id := leaseID{op.Key, op.Token}
		switch {
		case op.Kind == Grant && op.Result == OK && op.Outcome != string(locker.Renewed):
			asked[id] = true
			ev, ok := c.granted[id]
			if !ok {
				c.fail("client %d was granted %q token %d (%s), which the log does not have", op.Client, op.Key, op.Token, op.Outcome)
				continue
			}
			if deref(ev.Owner) != op.Owner || toldAs(ev) != op.Outcome {
				c.fail("client %d was granted %q token %d as %s/%s; the log says %s/%s",
					op.Client, op.Key, op.Token, op.Owner, op.Outcome, deref(ev.Owner), ev.Kind)
			}
			c.checkGrantMode(op)
			c.checkStealTime(op)
		case op.Kind == Grant && op.Result == OK: // renewed by Acquire
			if ev, ok := c.granted[id]; !ok || deref(ev.Owner) != op.Owner {
				c.fail("client %d renewed %q token %d, which was never granted to %q", op.Client, op.Key, op.Token, op.Owner)
			}
		case op.Kind == Grant && op.Result == Unknown:
			asked[id] = true // may have been granted; the reply was lost
		case op.Kind == Release && op.Result == OK:
			switch {
			case c.releasedLog[id]:
			case op.Lazy && c.crashedAfter(op.Return):
				c.stats.LazyReleasesLost++
			default:
				c.fail("client %d released %q token %d; the log has no release", op.Client, op.Key, op.Token)
			}
		}
	}
	for id, ev := range c.granted {
		if !asked[id] && !c.askedUnknown(ev) {
			c.fail("the log grants %q token %d to %q, which no client was told", id.key, id.token, deref(ev.Owner))
		}
	}
}

// crashedAfter reports whether the server may have crashed after t: a
// release acknowledged before a crash but not yet on disk is lost with it.
// A crash happened somewhere between its op's Call and Return.
func (c *checker) crashedAfter(t time.Duration) bool {
	for _, op := range c.ops {
		if op.Kind == Crash && max(op.Call, op.Return) >= t {
			return true
		}
	}
	return false
}

// askedUnknown: a grant whose reply was lost (its token is unknown to the
// client) explains a logged grant for the same key and owner.
func (c *checker) askedUnknown(ev lockview.Event) bool {
	for _, op := range c.ops {
		if op.Kind == Grant && op.Result == Unknown && op.Key == ev.Key && op.Owner == deref(ev.Owner) {
			return true
		}
	}
	return false
}

// checkStealTime: a steal's reply cannot come before the victim's lease
// could have ended on the local clock.
func (c *checker) checkStealTime(op Op) {
	if op.Outcome != lockdb.EventStolen {
		return
	}
	prevTok, ok := c.stolenPrev[leaseID{op.Key, op.Token}]
	if !ok {
		return
	}
	prev := leaseID{op.Key, prevTok}
	if _, forced := c.forcedAt[prev]; forced {
		return
	}
	f := c.leases[prev]
	if f == nil || !f.known {
		return
	}
	if earliestEnd := f.lastSent + f.ttl; op.Return < earliestEnd {
		c.fail("client %d stole %q (token %d) %s after the start, but token %d, renewed by a call sent at %s with TTL %s, lasted at least until %s",
			op.Client, op.Key, op.Token, op.Return, prevTok, f.lastSent, f.ttl, earliestEnd)
		return
	}
	// Its lock-delay followed, unless an operator ended it.
	if c.delayCut[leaseID{op.Key, op.Token}] || !f.delayKnown || f.delay <= 0 {
		return
	}
	if delayEnd := f.lastSent + f.ttl + f.delay; op.Return < delayEnd {
		c.fail("grant inside a lock-delay: client %d stole %q (token %d) %s after the start, but token %d, renewed by a call sent at %s with TTL %s and lock-delay %s, kept the key until at least %s",
			op.Client, op.Key, op.Token, op.Return, prevTok, f.lastSent, f.ttl, f.delay, delayEnd)
	}
}

// checkRealTimeOrder: if grant A's reply came before grant B was sent, on the
// same key, A's token is smaller, unless neither is exclusive (shared and
// permit holders draw their tokens in any order among themselves).
func (c *checker) checkRealTimeOrder() {
	byKey := map[string][]Op{}
	for _, op := range c.ops {
		if op.Kind == Grant && op.Result == OK && op.Outcome != string(locker.Renewed) {
			byKey[op.Key] = append(byKey[op.Key], op)
		}
	}
	for key, grants := range byKey {
		byReturn := append([]Op(nil), grants...)
		sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		byCall := grants
		sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
		// best is the largest token returned before b was sent, and
		// bestExclusive the largest exclusive one.
		var best, bestExclusive Op
		haveBest, haveExclusive := false, false
		r := 0
		for _, b := range byCall {
			for r < len(byReturn) && byReturn[r].Return < b.Call {
				a := byReturn[r]
				if !haveBest || a.Token > best.Token {
					best, haveBest = a, true
				}
				if isExclusive(a) && (!haveExclusive || a.Token > bestExclusive.Token) {
					bestExclusive, haveExclusive = a, true
				}
				r++
			}
			prior, havePrior := best, haveBest
			if !isExclusive(b) {
				prior, havePrior = bestExclusive, haveExclusive
			}
			if havePrior && prior.Token >= b.Token {
				c.fail("real-time order on %q: token %d (client %d, returned at %s) came before token %d (client %d, sent at %s) was asked for",
					key, prior.Token, prior.Client, prior.Return, b.Token, b.Client, b.Call)
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
