package protocol_test

import (
	"testing"
	"time"
)

// leaveAllArgs: owner's waiting set leaves, from the case's key and the
// set's other keys.
type leaveAllArgs struct {
	waiter     string
	logRelease bool
}

func (a leaveAllArgs) call(key string, p prepared) (string, []any) {
	keys, ids := []string{key}, []int64{p.waiter(a.waiter)}
	for _, n := range p.setNames() {
		keys, ids = append(keys, p.set.keys[n]), append(ids, p.set.prepared[n].waiter(a.waiter))
	}
	return `SELECT distributed_lock_waiter_leave_all(keys => $1, ids => $2, log_release => $3, event_actor => NULL) AS result`,
		[]any{keys, ids, a.logRelease}
}

func TestWaiterLeaveAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waiter_leave_all")
	mine := leaveAllArgs{waiter: me}
	f.run(t, []fnCase{
		{name: "queued on every key: left", state: heldBy(other).queuedSet(me).and(also{name: "b", state: heldBy(w1).queuedSet(me).queued(w2)}),
			call: mine.call, want: want{outcome: "left", row: untouched,
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", w1, true, w2) }}},
		{name: "queued, logging its grants: its wait logged on each key",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 4 * time.Second, logGrants: true, inSet: true}).
				and(also{name: "b", state: heldBy(w1).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 4 * time.Second,
					logGrants: true, inSet: true})}),
			call: mine.call, want: want{outcome: "left", row: untouched, events: []eventWant{{kind: "gave_up", owner: me, actor: me,
				detail: map[string]any{"waited_ms": msWithin{4 * time.Second, 4*time.Second + slack}, "waiter_id": anyValue}}},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) {
					otherIs(t, p, "b", w1, true)
					if o := p.other(t, "b"); len(o.events) != 1 || o.events[0].Kind != "gave_up" {
						t.Errorf("%s: events %+v; want its gave_up", p.set.keys["b"], o.events)
					}
				}}},
		{name: "first in line on a free key: left, the key passed to the next",
			state: free().queuedSet(me).queued(w1).and(also{name: "b", state: heldBy(other).queuedSet(me)}),
			call:  mine.call, want: want{outcome: "left", row: handedTo(w1, "acquired", other),
				notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "handed every key, unclaimed: each released and passed on",
			state: promisedTo(me).queued(w2).and(also{name: "b", state: promisedTo(me)}),
			call:  leaveAllArgs{waiter: me, logRelease: true}.call, want: want{outcome: "passed_on", row: handedTo(w2, "acquired", me),
				events: []eventWant{
					{kind: "released", owner: me, token: keptToken, actor: me, detail: map[string]any{"unclaimed": true}},
				},
				notify: []notifyWant{handOffTo(w2, "acquired")},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) {
					otherIs(t, p, "b", me, false)
					if o := p.other(t, "b"); o.row.ReleasedAt == nil {
						t.Errorf("%s not released: %v", p.set.keys["b"], o.row)
					}
				}}},
		{name: "handed every key and claimed: kept", state: promisedTo(me).with(func(r *lockRow) { r.renewals = 1 }).and(
			also{name: "b", state: promisedTo(me).with(func(r *lockRow) { r.renewals = 1 })}),
			call: mine.call, want: want{outcome: "none", row: untouched,
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "its records gone", state: heldBy(other).and(also{name: "b", state: heldBy(other)}), call: mine.call,
			want: want{outcome: "none", row: untouched}},
	})
}
