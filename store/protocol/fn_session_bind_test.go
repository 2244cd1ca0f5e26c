package protocol_test

import (
	"testing"
	"time"
)

// bindArgs: owner binds leaseOwner's grants to the case's session
// (noSession: to an id no session has); tokens is how many tokens to name
// (0: one per key). owner "": NULL.
type bindArgs struct {
	owner, leaseOwner string
	noSession         bool
	leases            []binding
	tokens            int
}

func (a bindArgs) call(_ string, p prepared) (string, []any) {
	keys, tokens := []string{}, []int64{}
	for _, b := range a.leases {
		key, token := p.ref(b)
		keys, tokens = append(keys, key), append(tokens, token)
	}
	if a.tokens > 0 {
		tokens = tokens[:a.tokens]
	}
	return `SELECT * FROM distributed_lock_session_bind(session => $1, session_owner => $2, lease_owner => $3,
		keys => $4, tokens => $5)`, []any{caseSession(p, a.noSession), null(a.owner), a.leaseOwner, keys, tokens}
}

// binds is a bind of my leases to my session.
func binds(leases ...binding) func(string, prepared) (string, []any) {
	return bindArgs{owner: me, leaseOwner: me, leases: leases}.call
}

// bindColumns: the bind's expires_at and ttl are session i's (i < 0:
// NULL), and not_held names the key of that grant (nil: NULL).
func bindColumns(i int, notHeld *binding) check {
	return checks(sessionColumns(i), func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		var want any
		if notHeld != nil {
			want, _ = p.ref(*notHeld)
		}
		if result["not_held"] != want {
			t.Errorf("not_held %v; want %v", result["not_held"], want)
		}
	})
}

// A bind ties leases to a session, all or none: each then ends when the
// session does, with its TTL, sooner or later than it would have.
func TestSessionBind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_session_bind")
	boundRow := rowWant{owner: me, token: keptToken, expires: about(sessionLeft), ttl: sessionTTL, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}
	bound := func(row rowWant, c check, sessions ...sessionWant) want {
		return want{outcome: "bound", row: row, sessions: sessions, check: c}
	}
	notHeld := func(b binding, c ...check) want {
		return want{outcome: "not_held", row: untouched, check: checks(append(c, bindColumns(-1, &b))...)}
	}
	refused := func(outcome string) want {
		return want{outcome: outcome, row: untouched, check: bindColumns(-1, nil)}
	}
	f.run(t, []fnCase{
		{name: "a lease held: bound, it ends with the session, sooner", state: heldBy(me).inSession(liveSession()), call: binds(theGrant),
			want: bound(boundRow, checks(bindColumns(0, nil), endsWithSession(0, false, "")), keptSession(theGrant))},
		{name: "a lease ending before the session: bound, it ends with it, later", call: binds(theGrant),
			state: heldBy(me).with(func(r *lockRow) { r.expiresIn, r.ttl = 10*time.Second, 30*time.Second }).inSession(liveSession()),
			want:  bound(boundRow, checks(bindColumns(0, nil), endsWithSession(0, false, "")), keptSession(theGrant))},
		{name: "two leases, named out of key order: both bound", call: binds(theGrant, grantOf("a")),
			state: heldBy(me).and(also{name: "a", first: true, state: heldBy(me)}).inSession(liveSession()),
			want: bound(boundRow, checks(bindColumns(0, nil), endsWithSession(0, false, "", "a")),
				keptSession(theGrant, grantOf("a")))},
		{name: "another owner's lease, named as its owner: bound", state: heldBy(other).inSession(liveSession()),
			call: bindArgs{owner: me, leaseOwner: other, leases: []binding{theGrant}}.call,
			want: func() want {
				row := boundRow
				row.owner = other
				return bound(row, checks(bindColumns(0, nil), endsWithSession(0, false, "")), keptSession(theGrant))
			}()},
		{name: "a hand-off in its claim window: claimed until the session ends", state: promisedTo(me).inSession(liveSession()), call: binds(theGrant),
			want: func() want {
				row := boundRow
				row.handedTo = me
				return bound(row, checks(bindColumns(0, nil), endsWithSession(0, false, "")), keptSession(theGrant))
			}()},
		{name: "bound to another session: moved to this one", state: heldBy(me).inSession(liveSession()).inSession(liveSession(theGrant)),
			call: binds(theGrant),
			want: bound(boundRow, checks(bindColumns(0, nil), endsWithSession(0, false, "")), keptSession(theGrant), keptSession())},
		{name: "two of three not held: the first in key order named, nothing bound, nothing changed",
			state: heldBy(me).and(also{name: "a", first: true, state: lapsed(me)}, also{name: "b", state: heldBy(other)}).inSession(liveSession()),
			call:  binds(theGrant, grantOf("b"), grantOf("a")), want: notHeld(grantOf("a"), othersUntouched("a", "b"))},
		{name: "an older grant's token", state: heldBy(me).inSession(liveSession()), call: binds(olderGrant), want: notHeld(olderGrant)},
		{name: "another owner's lease", state: heldBy(other).inSession(liveSession()), call: binds(theGrant), want: notHeld(theGrant)},
		{name: "a lease released", state: free().with(func(r *lockRow) { r.owner = me }).inSession(liveSession()), call: binds(theGrant),
			want: notHeld(theGrant)},
		{name: "a lease run out", state: lapsed(me).inSession(liveSession()), call: binds(theGrant), want: notHeld(theGrant)},
		{name: "a hand-off whose claim window ran out", state: lapsedHandOffTo(me).inSession(liveSession()), call: binds(theGrant),
			want: notHeld(theGrant)},
		{name: "a key with no row", state: noRow().inSession(liveSession()), call: binds(theGrant), want: notHeld(theGrant)},
		// Any lease: a holder's slot is bound as a key's own lease is.
		{name: "a shared holder's lease: bound, its slot ends with the session, the group's row left alone",
			state: sharedBy(me).inSession(liveSession()), call: binds(binding{token: slotTok(1)}),
			want: want{outcome: "bound", row: untouched, check: bindColumns(0, nil),
				slots:    []slotWant{{owner: me, token: slotTok(1), expires: about(sessionLeft), ttl: sessionTTL, renewals: 1}},
				sessions: []sessionWant{keptSession(binding{token: slotTok(1)})}}},
		{name: "a semaphore holder's lease, another's too: only the caller's named; another's slot not held",
			state: semaphoreOf(2, other, me).inSession(liveSession()), call: binds(binding{token: slotTok(1)}),
			want: notHeld(binding{token: slotTok(1)})},
		{name: "the session lapsed: expired, nothing bound", state: heldBy(me).inSession(lapsedSession()), call: binds(theGrant),
			want: refused("expired")},
		{name: "another owner's session: gone", state: heldBy(me).inSession(liveSession().of(other)), call: binds(theGrant),
			want: refused("gone")},
		{name: "the caller's owner's session, opened by another role: gone",
			state: heldBy(me).inSession(liveSession()).ofAnotherRole(), call: binds(theGrant), want: refused("gone")},
		{name: "the caller's owner's lease, taken by another role: not held",
			state: heldBy(me).ofAnotherRole().inSession(liveSession()), call: binds(theGrant), want: notHeld(theGrant)},
		{name: "no session owner named: gone", state: heldBy(me).inSession(liveSession()),
			call: bindArgs{leaseOwner: me, leases: []binding{theGrant}}.call, want: refused("gone")},
		{name: "no such session: gone", state: heldBy(me),
			call: bindArgs{owner: me, leaseOwner: me, noSession: true, leases: []binding{theGrant}}.call, want: refused("gone")},
		{name: "a token short", state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession()),
			call: bindArgs{owner: me, leaseOwner: me, leases: []binding{theGrant, grantOf("b")}, tokens: 1}.call, want: want{err: "22023"}},
		// The group's owner names the group's own lease, which no session
		// may keep.
		{name: "the reserved owner's lease", state: sharedBy(other).inSession(liveSession()),
			call: bindArgs{owner: me, leaseOwner: "*", leases: []binding{theGrant}}.call, want: want{err: "23514"}},
	})
}
