package protocol_test

import (
	"testing"
	"time"
)

// closeArgs: owner closes the case's session (noSession: an id no session
// has). owner "": NULL.
type closeArgs struct {
	owner     string
	noSession bool
}

func (a closeArgs) call(_ string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_close_session(session => $1, owner => $2)`,
		[]any{caseSession(p, a.noSession), null(a.owner)}
}

// releasedLeases: the call released n leases.
func releasedLeases(n int) check {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if !sameJSON(result["released"], n) {
			t.Errorf("released %v; want %d", result["released"], n)
		}
	}
}

// releasedNowOf: the other keys of the set named were released by the call.
func releasedNowOf(names ...string) check {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		for _, name := range names {
			l := p.other(t, name).row
			if l == nil || l.ReleasedAgo == nil || !justNow.holds(-*l.ReleasedAgo) {
				t.Errorf("%s: %v; want released by the call", p.set.keys[name], deref(l))
			}
		}
	}
}

// Closing a session is its process's way out: each bound lease still
// running is released as its holder would (no lock-delay, the key handed to
// its queue), a lapsed one left to its lapse, and the session and its
// bindings are gone.
func TestCloseSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_close_session")
	mine := closeArgs{owner: me}
	freed := rowWant{owner: me, token: keptToken, keptExpiry: true, ttl: time.Minute, released: releasedNow,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	closed := func(row rowWant, released int, c ...check) want {
		return want{outcome: "closed", row: row, sessions: []sessionWant{goneSession},
			check: checks(append(c, releasedLeases(released))...)}
	}
	gone := want{outcome: "gone", row: untouched, check: releasedLeases(0)}
	f.run(t, []fnCase{
		{name: "a lease held: released, the session gone", state: heldBy(me).inSession(liveSession(theGrant)), call: mine.call,
			want: closed(freed, 1)},
		{name: "a lease with a lock-delay: released cleanly, no delay", state: heldWithDelay(me).inSession(liveSession(theGrant)),
			call: mine.call, want: func() want {
				row := freed
				row.lockDelay = time.Minute
				return closed(row, 1)
			}()},
		{name: "a lease with waiters: handed to the head", state: heldBy(me).queued(w1, w2).inSession(liveSession(theGrant)), call: mine.call,
			want: func() want {
				w := closed(handedTo(w1, "acquired", me), 1)
				w.waiters, w.notify = waiters(w2), []notifyWant{handOffTo(w1, "acquired")}
				return w
			}()},
		{name: "two leases: both released",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession(theGrant, grantOf("b"))), call: mine.call,
			want: closed(freed, 2, releasedNowOf("b"))},
		{name: "a lease run out: left to its lapse", state: lapsed(me).inSession(liveSession(theGrant)), call: mine.call,
			want: closed(untouched, 0)},
		{name: "a lease run out in its lock-delay: the delay runs on", state: delayedAfterExpiry(me).inSession(liveSession(theGrant)),
			call: mine.call, want: closed(untouched, 0)},
		{name: "a lease released already: left as it was", state: free().with(func(r *lockRow) { r.owner = me }).inSession(liveSession(theGrant)),
			call: mine.call, want: closed(untouched, 0)},
		{name: "its key granted to another since: the new lease left alone", state: heldBy(other).inSession(liveSession(olderGrant)),
			call: mine.call, want: closed(untouched, 0)},
		{name: "an unbound lease: left alone", state: heldBy(me).inSession(liveSession()), call: mine.call, want: closed(untouched, 0)},
		{name: "another session's lease: left alone",
			state: heldBy(me).inSession(liveSession()).inSession(liveSession(theGrant)), call: mine.call,
			want: func() want {
				w := closed(untouched, 0)
				w.sessions = []sessionWant{goneSession, untouchedSession}
				return w
			}()},
		{name: "the session lapsed: closed, its lapsed lease left as it is", state: lapsed(me).inSession(lapsedSession(theGrant)), call: mine.call,
			want: closed(untouched, 0)},
		{name: "another owner's session: gone, nothing released", state: heldBy(other).inSession(liveSession(theGrant).of(other)),
			call: mine.call, want: gone},
		{name: "no owner named: gone, nothing released", state: heldBy(me).inSession(liveSession(theGrant)), call: closeArgs{}.call, want: gone},
		{name: "no such session: gone", state: heldBy(me), call: closeArgs{owner: me, noSession: true}.call, want: gone},
	})
}
