package protocol_test

import (
	"testing"
	"time"
)

// beatArgs: owner's heartbeat of the case's session (noSession: of an id
// no session has), dropping the bindings drop first and asking which of
// keep it did not keep. owner "": NULL.
type beatArgs struct {
	owner     string
	noSession bool
	drop      []binding
	keep      []binding
}

func (a beatArgs) call(_ string, p prepared) (string, []any) {
	dropKeys, dropTokens := p.refArrays(a.drop)
	keepKeys, keepTokens := p.refArrays(a.keep)
	return `SELECT * FROM distributed_lock_session_heartbeat(session => $1, owner => $2, drop_keys => $3, drop_tokens => $4,
		keep_keys => $5, keep_tokens => $6)`,
		[]any{caseSession(p, a.noSession), null(a.owner), dropKeys, dropTokens, keepKeys, keepTokens}
}

// refArrays names bindings as a statement takes them: keys and tokens.
func (p prepared) refArrays(bindings []binding) (keys []string, tokens []int64) {
	for _, b := range bindings {
		key, token := p.ref(b)
		keys, tokens = append(keys, key), append(tokens, token)
	}
	return keys, tokens
}

// caseSession is the id of the case's session, or with none one that no
// session has.
func caseSession(p prepared, none bool) int64 {
	if none {
		return -1
	}
	return p.sessions[0]
}

// beat: the heartbeat's columns: the session's end and TTL (session i's
// after the call; i < 0: NULL), how many leases it kept, and the bindings
// it reports lost.
func beat(i, leases int, lost ...binding) check {
	return checks(sessionColumns(i), func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		if !sameJSON(result["leases"], leases) {
			t.Errorf("leases %v; want %d", result["leases"], leases)
		}
		want := p.refs(lost)
		if want == nil {
			want = []boundRef{}
		}
		if !sameJSON(result["lost"], want) {
			t.Errorf("lost %v; want %v", result["lost"], want)
		}
	})
}

// A heartbeat moves the session's end and every bound lease still held to
// one instant, two minutes on; a lease that ended is not revived but let
// go; of the leases the caller names to keep, it reports each it did not
// keep, ended or not bound to the session (dropped before: by a heartbeat
// whose reply was lost, say); a lapsed session revives nothing.
func TestSessionHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_session_heartbeat")
	mine := beatArgs{owner: me, keep: []binding{theGrant}}
	keeping := func(keep ...binding) func(string, prepared) (string, []any) {
		return beatArgs{owner: me, keep: keep}.call
	}
	kept := rowWant{owner: me, token: keptToken, expires: about(sessionTTL), ttl: sessionTTL, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}
	renewed := func(row rowWant, c check, sessions ...sessionWant) want {
		return want{outcome: "renewed", row: row, sessions: sessions, check: c}
	}
	expired := want{outcome: "expired", row: untouched, check: beat(-1, 0)}
	gone := want{outcome: "gone", row: untouched, check: beat(-1, 0)}
	releasedByMe := free().with(func(r *lockRow) { r.owner = me })
	f.run(t, []fnCase{
		{name: "its lease held: both renewed to one instant", state: heldBy(me).inSession(liveSession(theGrant)), call: mine.call,
			want: renewed(kept, checks(beat(0, 1), endsWithSession(0, true, "")), renewedSession(theGrant))},
		{name: "its lease revoked with a deadline: renewed up to it, the session on", call: mine.call,
			state: heldBy(me).inSession(liveSession(theGrant)).revoked(revokeRow{forceIn: deadlineIn(20 * time.Second)}),
			want: func() want {
				row := kept
				row.expires = about(20 * time.Second)
				return renewed(row, beat(0, 1), renewedSession(theGrant))
			}()},
		{name: "its lease of ten minutes: two, as the session", call: mine.call,
			state: heldBy(me).with(func(r *lockRow) { r.expiresIn, r.ttl = 9*time.Minute, 10*time.Minute }).inSession(liveSession(theGrant)),
			want:  renewed(kept, checks(beat(0, 1), endsWithSession(0, true, "")), renewedSession(theGrant))},
		{name: "its shared holder's lease: its slot renewed with the session, the group's row left alone",
			state: sharedBy(me).inSession(liveSession(binding{token: slotTok(1)})), call: keeping(binding{token: slotTok(1)}),
			want: want{outcome: "renewed", row: untouched, check: beat(0, 1),
				slots:    []slotWant{{owner: me, token: slotTok(1), expires: about(sessionTTL), ttl: sessionTTL, renewals: 1}},
				sessions: []sessionWant{renewedSession(binding{token: slotTok(1)})}}},
		{name: "its lease promised to me, unclaimed: renewed with it", state: promisedTo(me).inSession(liveSession(theGrant)), call: mine.call,
			want: func() want {
				row := kept
				row.handedTo = me
				return renewed(row, checks(beat(0, 1), endsWithSession(0, true, "")), renewedSession(theGrant))
			}()},
		{name: "two leases bound, one not, one of another session: the two renewed, the others left alone",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}, also{name: "c", state: heldBy(me)}, also{name: "d", state: heldBy(me)}).
				inSession(liveSession(theGrant, grantOf("b"))).inSession(liveSession(grantOf("d"))),
			call: keeping(theGrant, grantOf("b")),
			want: renewed(kept, checks(beat(0, 2), endsWithSession(0, true, "", "b"), othersUntouched("c", "d")),
				renewedSession(theGrant, grantOf("b")), untouchedSession)},
		{name: "its lease released: not revived, lost", state: releasedByMe.inSession(liveSession(theGrant)), call: mine.call,
			want: renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "its lease ran out: not revived, lost", state: lapsed(me).inSession(liveSession(theGrant)), call: mine.call,
			want: renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "its lease force-expired into a lock-delay: not revived, lost", state: delayedAfterExpiry(me).inSession(liveSession(theGrant)),
			call: mine.call, want: renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "its lease force-released: not revived, lost", state: delayedAfterRelease(me).inSession(liveSession(theGrant)),
			call: mine.call, want: renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "its key granted to another since: the new lease left alone, the old one lost",
			state: heldBy(other).inSession(liveSession(olderGrant)), call: keeping(olderGrant),
			want: renewed(untouched, beat(0, 0, olderGrant), renewedSession())},
		{name: "its key granted to me again since: the new grant, not bound, left alone",
			state: heldBy(me).inSession(liveSession(olderGrant)), call: keeping(olderGrant),
			want: renewed(untouched, beat(0, 0, olderGrant), renewedSession())},
		{name: "one of two leases ran out: the other renewed, that one lost",
			state: heldBy(me).and(also{name: "b", state: lapsed(me)}).inSession(liveSession(theGrant, grantOf("b"))),
			call:  keeping(theGrant, grantOf("b")),
			want: renewed(kept, checks(beat(0, 1, grantOf("b")), endsWithSession(0, true, ""), othersUntouched("b")),
				renewedSession(theGrant))},
		{name: "its lease dropped: let go first, not extended", state: heldBy(me).inSession(liveSession(theGrant)),
			call: beatArgs{owner: me, drop: []binding{theGrant}}.call, want: renewed(untouched, beat(0, 0), renewedSession())},
		{name: "one of two leases dropped: the other renewed",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession(theGrant, grantOf("b"))),
			call:  beatArgs{owner: me, drop: []binding{grantOf("b")}, keep: []binding{theGrant}}.call,
			want: renewed(kept, checks(beat(0, 1), endsWithSession(0, true, ""), othersUntouched("b")),
				renewedSession(theGrant))},
		{name: "dropping another session's binding: it stays that session's",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession(theGrant)).inSession(liveSession(grantOf("b"))),
			call:  beatArgs{owner: me, drop: []binding{grantOf("b")}, keep: []binding{theGrant}}.call,
			want: renewed(kept, checks(beat(0, 1), endsWithSession(0, true, ""), othersUntouched("b")),
				renewedSession(theGrant), untouchedSession)},
		{name: "a lease named to keep but not bound (dropped by a heartbeat whose reply was lost): lost, not extended",
			state: heldBy(me).inSession(liveSession()), call: mine.call,
			want: renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "a lease named to keep, bound to another session since: lost, left to that session",
			state: heldBy(me).inSession(liveSession()).inSession(liveSession(theGrant)), call: mine.call,
			want: renewed(untouched, beat(0, 0, theGrant), renewedSession(), untouchedSession)},
		{name: "one of two leases named, both bound: both renewed, none lost",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession(theGrant, grantOf("b"))),
			call:  keeping(grantOf("b")),
			want: renewed(kept, checks(beat(0, 2), endsWithSession(0, true, "", "b")),
				renewedSession(theGrant, grantOf("b")))},
		{name: "nothing named: the bound lease renewed, none lost", state: heldBy(me).inSession(liveSession(theGrant)),
			call: keeping(), want: renewed(kept, checks(beat(0, 1), endsWithSession(0, true, "")), renewedSession(theGrant))},
		{name: "a lease named to keep and dropped in one call: dropped first, lost",
			state: heldBy(me).inSession(liveSession(theGrant)),
			call:  beatArgs{owner: me, drop: []binding{theGrant}, keep: []binding{theGrant}}.call,
			want:  renewed(untouched, beat(0, 0, theGrant), renewedSession())},
		{name: "the session lapsed, its lease with it: expired, nothing revived", state: lapsed(me).inSession(lapsedSession(theGrant)),
			call: mine.call, want: expired},
		{name: "the session lapsed, its lease renewed on its own: expired, the lease not extended",
			state: heldBy(me).inSession(lapsedSession(theGrant)), call: mine.call, want: expired},
		{name: "another owner's session: gone", state: heldBy(other).inSession(liveSession(theGrant).of(other)), call: mine.call, want: gone},
		{name: "no owner named: gone", state: heldBy(me).inSession(liveSession(theGrant)), call: beatArgs{}.call, want: gone},
		{name: "no such session: gone", state: heldBy(me), call: beatArgs{owner: me, noSession: true}.call, want: gone},
	})
}
