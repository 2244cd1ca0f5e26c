package protocol_test

import (
	"strings"
	"testing"
	"time"
)

// acquireArgs are distributed_lock_acquire's arguments but the key; zero
// values are the defaults (NULL, false).
type acquireArgs struct {
	owner     string
	ttl       time.Duration
	metadata  string
	actor     string
	detail    string
	logGrants bool
	lockDelay time.Duration
}

func (a acquireArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_acquire(key => $1, owner => $2, ttl_us => $3,
		lease_metadata => $4::jsonb, event_actor => $5, event_detail => $6::jsonb, log_grants => $7,
		lock_delay_us => $8)`,
		[]any{key, a.owner, a.ttl.Microseconds(), null(a.metadata), null(a.actor), null(a.detail), a.logGrants,
			a.lockDelay.Microseconds()}
}

// rawUS is a's call with ttl_us and lock_delay_us as given: microseconds
// no time.Duration holds.
func (a acquireArgs) rawUS(ttlUS, delayUS int64) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		sql, args := a.call(key, p)
		args[2], args[7] = ttlUS, delayUS
		return sql, args
	}
}

// The bounds of what a caller stores: a lease from a millisecond to a year
// (locker.MaxTTL), JSON of at most 8 KiB (lockdb.MaxJSONBytes), as
// PostgreSQL stores it; past them by much, in text.
const (
	aYear    = 365 * 24 * time.Hour
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)

// overSizedJSON is a JSON object larger than the schema keeps.
var overSizedJSON = `{"x": "` + strings.Repeat("x", 8200) + `"}`

// keyOf is a case's key when it must be a given one (a bad one).
func keyOf(s string) *string { return &s }

// null is s, or SQL NULL for "".
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestAcquire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_acquire")
	mine := acquireArgs{owner: me, ttl: time.Minute}
	logged := acquireArgs{owner: me, ttl: time.Minute, actor: "svc", detail: `{"job": 7}`, logGrants: true}
	withTTL := func(a acquireArgs, d time.Duration) acquireArgs { a.ttl = d; return a }
	grant := func(kind, from string, fromToken tok) rowWant {
		w := grantTo(me, kind, time.Minute, fromToken)
		w.prevOwner = from
		return w
	}
	held := func(owner string) want {
		return want{outcome: "held", owner: owner, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: untouched, refusal: queueOf(0)}
	}
	queuedWant := func(owner string, left span, ws ...string) want {
		return want{outcome: "queued", owner: owner, token: keptToken, remaining: &left, row: untouched, waiters: waiters(ws...),
			refusal: queueOf(len(ws))}
	}
	delayedWant := func(owner string, left, delay span, ws ...string) want {
		return want{outcome: "delayed", owner: owner, token: keptToken, remaining: &left, row: untouched, waiters: waiters(ws...),
			refusal: &refusalWant{length: len(ws), delay: &delay}}
	}
	withDelay := func(a acquireArgs, d time.Duration) acquireArgs { a.lockDelay = d; return a }
	aMinuteOn := span{time.Minute - time.Second - slack, time.Minute - time.Second}
	halfAMinuteOn := span{30*time.Second - slack, 30 * time.Second}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: grantTo(me, "acquired", time.Minute, noToken)}},
		{name: "no row, logged", state: noRow(), call: logged.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row:    grantTo(me, "acquired", time.Minute, noToken),
			events: []eventWant{{kind: "acquired", owner: me, token: drawnToken, actor: "svc", detail: map[string]any{"job": 7}}}}},
		{name: "no row, metadata", state: noRow(), call: acquireArgs{owner: me, ttl: time.Minute, metadata: `{"pid": 42}`}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: func() rowWant {
				w := grantTo(me, "acquired", time.Minute, noToken)
				w.metadata = `{"pid": 42}`
				return w
			}()}},
		{name: "free", state: free(), call: mine.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: grant("acquired", other, keptToken)}},
		{name: "free, logged", state: free(), call: logged.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: grant("acquired", other, keptToken),
			events: []eventWant{{kind: "acquired", owner: me, token: drawnToken, actor: "svc",
				prevOwner: other, prevToken: keptToken, detail: map[string]any{"job": 7}}}}},
		{name: "held by the caller", state: heldBy(me), call: withTTL(mine, 2*time.Minute).call, want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(2 * time.Minute), ttl: 2 * time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}},
		{name: "held by the caller, logged: a renewal is not logged", state: heldBy(me), call: logged.call, want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}},
		{name: "held by another", state: heldBy(other), call: mine.call, want: held(other)},
		{name: "held by another, logged: a refusal is not logged", state: heldBy(other), call: logged.call, want: held(other)},
		{name: "expired, another's", state: lapsed(other), call: mine.call, want: want{
			outcome: "stolen", owner: me, token: drawnToken, remaining: &span{},
			row: grant("stolen", other, keptToken),
			events: []eventWant{{kind: "stolen", owner: me, token: drawnToken, actor: me,
				prevOwner: other, prevToken: keptToken, detail: map[string]any{}}}}},
		{name: "expired, the caller's own: a new grant, not a revival", state: lapsed(me), call: mine.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: grant("acquired", me, keptToken)}},
		{name: "held by another, queued", state: heldBy(other).queued(w1), call: mine.call, want: func() want {
			w := held(other)
			w.waiters, w.refusal = waiters(w1), queueOf(1)
			return w
		}()},
		{name: "held by the caller, queued", state: heldBy(me).queued(w1), call: mine.call, want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1, wakes: &span{0, time.Minute}},
			waiters: waiters(w1)}},
		{name: "free, queued", state: free().queued(w1, w2), call: mine.call, want: queuedWant(other, about(30*time.Second), w1, w2)},
		{name: "expired, queued", state: lapsed(other).queued(w1), call: mine.call, want: queuedWant(other, ranOut, w1)},
		{name: "expired, the caller's own, queued: the queue's", state: lapsed(me).queued(w1), call: mine.call, want: queuedWant(me, ranOut, w1)},
		{name: "free, its only waiter lapsed", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: mine.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row:     func() rowWant { w := grant("acquired", other, keptToken); w.wakes = &span{0, time.Minute}; return w }(),
			waiters: waiters(w1)}},
		{name: "promised to a waiter", state: promisedTo(w1).queued(w2), call: mine.call, want: want{
			outcome: "held", owner: w1, token: keptToken, remaining: &span{8*time.Second - slack, 8 * time.Second},
			row: untouched, waiters: waiters(w2), refusal: queueOf(1)}},
		{name: "lapsed hand-off", state: lapsedHandOffTo(w1), call: mine.call, want: want{
			outcome: "stolen", owner: me, token: drawnToken, remaining: &span{},
			row: func() rowWant { w := grant("stolen", w1, keptToken); w.wakes = &span{0, time.Minute}; return w }(),
			events: []eventWant{{kind: "stolen", owner: me, token: drawnToken, actor: me,
				prevOwner: w1, prevToken: keptToken, detail: map[string]any{}}}}},
		{name: "lapsed hand-off, queued", state: lapsedHandOffTo(w1).queued(w2), call: mine.call, want: queuedWant(w1, ranOut, w2)},

		{name: "free, with a lock-delay: the grant carries it", state: free(), call: withDelay(mine, 15*time.Second).call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: func() rowWant { w := grant("acquired", other, keptToken); w.lockDelay = 15 * time.Second; return w }()}},
		{name: "no row, with a lock-delay", state: noRow(), call: withDelay(mine, time.Minute).call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: func() rowWant {
				w := grantTo(me, "acquired", time.Minute, noToken)
				w.lockDelay = time.Minute
				return w
			}()}},
		{name: "held by the caller with a lock-delay: a renewal keeps it", state: heldWithDelay(me), call: mine.call, want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1, lockDelay: time.Minute}}},
		{name: "held by another with a lock-delay: held, no delay yet", state: heldWithDelay(other), call: mine.call, want: held(other)},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: mine.call,
			want: delayedWant(other, span{-time.Second - slack, -time.Second}, aMinuteOn)},
		{name: "expired, the caller's own, in its lock-delay", state: delayedAfterExpiry(me), call: mine.call,
			want: delayedWant(me, span{-time.Second - slack, -time.Second}, aMinuteOn)},
		{name: "expired, in its lock-delay, queued", state: delayedAfterExpiry(other).queued(w1, w2), call: mine.call,
			want: delayedWant(other, span{-time.Second - slack, -time.Second}, aMinuteOn, w1, w2)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: mine.call,
			want: delayedWant(other, span{0, 30 * time.Second}, halfAMinuteOn)},
		{name: "held at least a period by another: held", state: heldAtLeast(other), call: mine.call, want: held(other)},
		{name: "kept until its at-least point: delayed until then", state: keptBy(other), call: mine.call,
			want: delayedWant(other, span{0, 30 * time.Second}, about(4*time.Minute))},
		{name: "kept until its at-least point, by the caller's own release: delayed", state: keptBy(me), call: mine.call,
			want: delayedWant(me, span{0, 30 * time.Second}, about(4*time.Minute))},
		{name: "kept, its at-least point past: granted, a new token", call: mine.call,
			state: keptBy(other).with(func(r *lockRow) { r.delayFor, r.keptFor = -time.Second, -time.Second }),
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: func() rowWant {
					w := grant("acquired", other, keptToken)
					w.keptUntil = &span{-time.Second - slack, -time.Second}
					return w
				}()}},
		{name: "expired, its lock-delay over", state: delayOver(other), call: mine.call, want: want{
			outcome: "stolen", owner: me, token: drawnToken, remaining: &span{},
			row: grant("stolen", other, keptToken),
			events: []eventWant{{kind: "stolen", owner: me, token: drawnToken, actor: me,
				prevOwner: other, prevToken: keptToken, detail: map[string]any{}}}}},
		{name: "free, a force-release's delay over: the grant clears delay_until",
			state: delayedAfterRelease(other).with(func(r *lockRow) { r.freedAgo, r.delayFor = 2*time.Minute, -time.Minute }),
			call:  mine.call, want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: grant("acquired", other, keptToken)}},

		{name: "free, the row being changed", state: free(), call: mine.call, during: whileRowLocked, want: want{
			outcome: "free", owner: other, token: keptToken, remaining: &span{0, 30 * time.Second}, row: untouched, refusal: queueOf(0)}},
		{name: "expired, the row being changed", state: lapsed(other), call: mine.call, during: whileRowLocked, want: want{
			outcome: "expired", owner: other, token: keptToken, remaining: &ranOut, row: untouched, refusal: queueOf(0)}},
		{name: "no row, a first grant by another committing", state: noRow(), call: mine.call, during: whileFirstGrantCommits, want: want{
			outcome: "busy", row: rowWant{owner: other, token: drawnToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: drawnToken}}},

		{name: "a running shared group: held until its last holder's end", state: sharedBy(other).holding(liveSlot(w1)).holding(lapsedSlot(w2)),
			call: mine.call, want: want{outcome: "held", owner: groupOwner, token: keptToken,
				remaining: &span{50*time.Second - slack, 50 * time.Second}, row: untouched, refusal: queueOf(0)}},
		{name: "a running semaphore, the caller a holder: held (no upgrade)", state: semaphoreOf(2, me), call: mine.call,
			want: want{outcome: "held", owner: groupOwner, token: keptToken,
				remaining: &span{50*time.Second - slack, 50 * time.Second}, row: untouched, refusal: queueOf(0)}},
		{name: "a group whose holders all lapsed: ended, then granted", state: sharedBy().holding(lapsedSlot(other), releasedSlot(w1)),
			call: mine.call, want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: grant("acquired", groupOwner, keptToken),
				// The lapsed lease ends with its group.
				slots: []slotWant{slotReleasedNow(1, other), asPrepared}}},
		{name: "a semaphore whose holders all lapsed, queued: ended, handed to the head, the caller refused",
			state: semaphoreOf(2).holding(lapsedSlot(other)).queued(w1), call: mine.call, want: want{
				outcome: "held", owner: w1, token: drawnToken, remaining: &span{10*time.Second - slack, 10 * time.Second},
				row:    handedFromGroup(w1, 2),
				notify: []notifyWant{handOffTo(w1, "acquired")}, refusal: queueOf(0),
				slots: []slotWant{slotReleasedNow(1, other)}}},
		{name: "a semaphore's group ended: granted, its permits kept for the next group", state: groupEnded(3), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: func() rowWant { w := grant("acquired", groupOwner, keptToken); w.permits = 3; return w }()}},

		{name: "empty key", key: keyOf(""), state: noRow(), call: mine.call, want: want{err: "23514"}},
		{name: "key of 256 bytes", key: keyOf(strings.Repeat("k", 256)), state: noRow(), call: mine.call, want: want{err: "23514"}},
		{name: "key not UTF-8", key: keyOf("k\xff"), state: noRow(), call: mine.call, want: want{err: "22021"}},
		{name: "empty owner", state: free(), call: acquireArgs{owner: "", ttl: time.Minute}.call, want: want{err: "23514"}},
		// The group's owner (distributed_lock_reserved): no lease may pass
		// for a group's, nor renew one.
		{name: "the reserved owner, free", state: free(), call: acquireArgs{owner: "*", ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "the reserved owner, no row", state: noRow(), call: acquireArgs{owner: "*", ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "the reserved owner, a group running", state: sharedBy(other), call: acquireArgs{owner: "*", ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "owner of 256 bytes", state: free(), call: acquireArgs{owner: strings.Repeat("o", 256), ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "zero TTL", state: free(), call: withTTL(mine, 0).call, want: want{err: "23514"}},
		{name: "negative TTL", state: noRow(), call: withTTL(mine, -time.Second).call, want: want{err: "23514"}},
		{name: "negative TTL, held by the caller", state: heldBy(me), call: withTTL(mine, -time.Second).call, want: want{err: "23514"}},
		{name: "metadata an array", state: free(), call: acquireArgs{owner: me, ttl: time.Minute, metadata: `[1]`}.call, want: want{err: "23514"}},
		{name: "lock-delay over a minute", state: free(), call: withDelay(mine, time.Minute+time.Microsecond).call, want: want{err: "23514"}},
		{name: "negative lock-delay, no row", state: noRow(), call: withDelay(mine, -time.Second).call, want: want{err: "23514"}},
		{name: "TTL under a millisecond", state: free(), call: withTTL(mine, time.Millisecond-time.Microsecond).call, want: want{err: "23514"}},
		{name: "TTL over a year, no row", state: noRow(), call: withTTL(mine, aYear+time.Microsecond).call, want: want{err: "23514"}},
		{name: "TTL over a year, free", state: free(), call: withTTL(mine, aYear+time.Microsecond).call, want: want{err: "23514"}},
		{name: "TTL over a year, held by the caller", state: heldBy(me), call: withTTL(mine, aYear+time.Microsecond).call, want: want{err: "23514"}},
		// Refused by the domain, by name (23514), not "interval out of
		// range" (22008) or a lease to the year 287225.
		{name: "ttl_us 9e18, free", state: free(), call: mine.rawUS(9e18, 0), want: want{err: "23514"}},
		{name: "ttl_us 2^63-1, no row", state: noRow(), call: mine.rawUS(maxInt64, 0), want: want{err: "23514"}},
		{name: "ttl_us 2^63-1, free", state: free(), call: mine.rawUS(maxInt64, 0), want: want{err: "23514"}},
		{name: "ttl_us 2^63-1, held by the caller", state: heldBy(me), call: mine.rawUS(maxInt64, 0), want: want{err: "23514"}},
		{name: "ttl_us -2^63, free", state: free(), call: mine.rawUS(minInt64, 0), want: want{err: "23514"}},
		{name: "lock_delay_us 2^63-1, free", state: free(), call: mine.rawUS(time.Minute.Microseconds(), maxInt64), want: want{err: "23514"}},
		{name: "lock_delay_us 2^63-1, no row", state: noRow(), call: mine.rawUS(time.Minute.Microseconds(), maxInt64), want: want{err: "23514"}},
		{name: "metadata over 8 KiB", state: free(), call: acquireArgs{owner: me, ttl: time.Minute, metadata: overSizedJSON}.call, want: want{err: "23514"}},
		{name: "metadata over 8 KiB, no row", state: noRow(), call: acquireArgs{owner: me, ttl: time.Minute, metadata: overSizedJSON}.call, want: want{err: "23514"}},
		{name: "event detail over 8 KiB, logged", state: free(),
			call: acquireArgs{owner: me, ttl: time.Minute, detail: overSizedJSON, logGrants: true}.call, want: want{err: "23514"}},
	})
}
