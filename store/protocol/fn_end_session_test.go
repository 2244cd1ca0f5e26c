package protocol_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// endSessionArgs: an operator ends the case's session (noSession: an id no
// session has). actor, reason "": NULL.
type endSessionArgs struct {
	actor, reason string
	noSession     bool
}

func (a endSessionArgs) call(_ string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_end_session(session => $1, event_actor => $2, reason => $3)`,
		[]any{caseSession(p, a.noSession), null(a.actor), null(a.reason)}
}

// expiredLeases: the call force-expired n leases.
func expiredLeases(n int) check {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if !sameJSON(result["expired"], n) {
			t.Errorf("expired %v; want %d", result["expired"], n)
		}
	}
}

// The session_ended events of a session: they name no key, so they are
// found by the session's id.
const sessionEndedSQL = `
SELECT e.event_id, e.kind, e.owner_id, e.fence_token, e.actor, e.previous_owner, e.previous_token, e.detail
FROM distributed_lock_event e
WHERE e.lock_key = '' AND (e.detail->>'session_id')::bigint = $1 ORDER BY e.event_id`

// sessionEnded: one session_ended event records the end of the case's
// session (owner's, on web-3 as pid 4242) by actor, with the leases it
// force-expired and the reason given ("": none).
func sessionEnded(owner, actor string, leases int, reason string) check {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		rows, _ := p.db.Query(context.Background(), sessionEndedSQL, p.sessions[0])
		events, err := pgx.CollectRows(rows, pgx.RowToStructByName[eventState])
		if err != nil {
			t.Fatal(err)
		}
		detail := map[string]any{"session_id": p.sessions[0], "host": "web-3", "pid": 4242, "leases": leases}
		if reason != "" {
			detail["reason"] = reason
		}
		if len(events) != 1 {
			t.Fatalf("session_ended events %+v; want one", events)
		}
		e := events[0]
		if e.Kind != "session_ended" || show(e.Owner) != owner || e.Actor != actor || e.Token != nil ||
			e.PreviousOwner != nil || e.PreviousToken != nil || !sameJSON(e.Detail, detail) {
			t.Errorf("event %+v (owner %s, detail %v); want session_ended by %s, owner %s, no token, detail %v",
				e, show(e.Owner), e.Detail, actor, owner, detail)
		}
	}
}

// reasonNamesSession: with no reason given, the lease's force_expired event
// says which session ended.
func reasonNamesSession(t *testing.T, _ map[string]any, p prepared, after observed) {
	t.Helper()
	want := fmt.Sprintf("session %d ended", p.sessions[0])
	if len(after.events) == 0 || after.events[0].Detail["reason"] != want {
		t.Errorf("events %+v; want a force_expired event with reason %q", after.events, want)
	}
}

// forcedOf: the other keys of the set named were force-expired by the call,
// each with its event.
func forcedOf(actor string, names ...string) check {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		for _, name := range names {
			o := p.other(t, name)
			if o.row == nil || !justNow.holds(o.row.ExpiresIn) || len(o.events) != 1 ||
				o.events[0].Kind != "force_expired" || o.events[0].Actor != actor {
				t.Errorf("%s: %v, events %+v; want force-expired by %s just now", p.set.keys[name], deref(o.row), o.events, actor)
			}
		}
	}
}

// An operator's end of a session force-expires every lease it keeps
// running, with their events and lock-delays, deletes it, and logs a
// session_ended event. That event names no key (its lock_key is empty), so
// the cases have a schema of their own: on the shared one, the case of the
// empty key would see it as its key's.
func TestEndSession(t *testing.T) {
	t.Parallel()
	f := newIsolatedFixture(t, "distributed_lock_end_session")
	op := endSessionArgs{actor: "alice", reason: "hung"}
	forced := rowWant{owner: me, token: keptToken, expires: justNow, ttl: time.Minute, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious}
	forceEvent := func(owner, actor string, detail map[string]any) eventWant {
		return eventWant{kind: "force_expired", owner: owner, token: keptToken, actor: actor, detail: detail}
	}
	byAlice := forceEvent(me, "alice", map[string]any{"reason": "hung"})
	ended := func(row rowWant, expired int, c check, events ...eventWant) want {
		return want{outcome: "ended", row: row, events: events, sessions: []sessionWant{goneSession},
			check: checks(expiredLeases(expired), c)}
	}
	f.run(t, []fnCase{
		{name: "a lease running: force-expired, the session ended", state: heldBy(me).inSession(liveSession(theGrant)), call: op.call,
			want: ended(forced, 1, sessionEnded(me, "alice", 1, "hung"), byAlice)},
		{name: "a lease with a lock-delay: the delay starts now", state: heldWithDelay(me).inSession(liveSession(theGrant)), call: op.call,
			want: func() want {
				row := forced
				row.lockDelay = time.Minute
				return ended(row, 1, checks(sessionEnded(me, "alice", 1, "hung"), delayedFor(time.Minute)),
					forceEvent(me, "alice", map[string]any{"reason": "hung", "delay_until": anyValue}))
			}()},
		{name: "a lease with waiters: woken, not handed the key", state: heldBy(me).queued(w1).inSession(liveSession(theGrant)), call: op.call,
			want: func() want {
				row := forced
				row.wakes = &span{0, time.Minute}
				w := ended(row, 1, sessionEnded(me, "alice", 1, "hung"), byAlice)
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
		{name: "no actor or reason: the role that logged in, the session named", state: heldBy(me).inSession(liveSession(theGrant)),
			call: endSessionArgs{}.call,
			want: ended(forced, 1, checks(sessionEnded(me, sessionUser(t, f), 1, ""), reasonNamesSession),
				forceEvent(me, sessionUser(t, f), map[string]any{"reason": anyValue}))},
		{name: "two leases: both force-expired",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession(theGrant, grantOf("b"))), call: op.call,
			want: ended(forced, 2, checks(sessionEnded(me, "alice", 2, "hung"), forcedOf("alice", "b")), byAlice)},
		{name: "its leases released, run out or granted anew since: left alone",
			state: free().with(func(r *lockRow) { r.owner = me }).
				and(also{name: "b", state: lapsed(me)}, also{name: "c", state: heldBy(other)}).
				inSession(liveSession(theGrant, grantOf("b"), binding{name: "c", token: keptPrevious})),
			call: op.call, want: ended(untouched, 0, checks(sessionEnded(me, "alice", 0, "hung"), othersUntouched("b", "c")))},
		{name: "an unbound lease and another session's: left alone",
			state: heldBy(me).and(also{name: "b", state: heldBy(me)}).inSession(liveSession()).inSession(liveSession(grantOf("b"))),
			call:  op.call, want: func() want {
				w := ended(untouched, 0, checks(sessionEnded(me, "alice", 0, "hung"), othersUntouched("b")))
				w.sessions = []sessionWant{goneSession, untouchedSession}
				return w
			}()},
		{name: "a lapsed session: ended, its lapsed lease left alone", state: lapsed(me).inSession(lapsedSession(theGrant)), call: op.call,
			want: ended(untouched, 0, sessionEnded(me, "alice", 0, "hung"))},
		{name: "another owner's session: ended all the same", state: heldBy(other).inSession(liveSession(theGrant).of(other)), call: op.call,
			want: func() want {
				row := forced
				row.owner = other
				return ended(row, 1, sessionEnded(other, "alice", 1, "hung"), forceEvent(other, "alice", map[string]any{"reason": "hung"}))
			}()},
		{name: "no such session: gone", state: heldBy(me), call: endSessionArgs{actor: "alice", noSession: true}.call,
			want: want{outcome: "gone", row: untouched, check: expiredLeases(0)}},
		{name: "an actor of 256 bytes: refused, nothing forced", state: heldBy(me).inSession(liveSession(theGrant)),
			call: endSessionArgs{actor: strings.Repeat("a", 256)}.call, want: want{err: "23514"}},
	})
}
