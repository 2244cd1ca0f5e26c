package protocol_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// refusedWait is the event a wait refused as a deadlock leaves on each key
// it waited for: owner's, with no token, by actor (its record's, else the
// owner); the cycle in its detail is the case's to check (cycleLogged).
func refusedWait(owner, actor string) eventWant {
	return eventWant{kind: lockdb.EventDeadlockRefused, owner: owner, token: noToken, actor: actor,
		detail: map[string]any{"cycle": anyValue}}
}

// cycleOf is a cycle as the refusal returns it: owner, key, owner, key, …
// (keys by also name, "" the case's key).
func cycleOf(p prepared, ownerKeys ...string) []any {
	var c []any
	for i := 0; i+1 < len(ownerKeys); i += 2 {
		key := p.set.main
		if n := ownerKeys[i+1]; n != "" {
			key = p.set.keys[n]
		}
		c = append(c, map[string]any{"owner": ownerKeys[i], "key": key})
	}
	return c
}

// cycleLogged checks where's events (one key's) hold exactly one
// deadlock_refused event, owner's by actor, naming cycle.
func cycleLogged(t *testing.T, where string, events []eventState, owner, actor string, cycle []any) {
	t.Helper()
	var refused []eventState
	for _, e := range events {
		if e.Kind == lockdb.EventDeadlockRefused {
			refused = append(refused, e)
		}
	}
	if len(refused) != 1 {
		t.Errorf("%s: %d %s events %+v; want one", where, len(refused), lockdb.EventDeadlockRefused, refused)
		return
	}
	e := refused[0]
	if show(e.Owner) != owner || e.Actor != actor || e.Token != nil || !sameJSON(e.Detail["cycle"], cycle) {
		t.Errorf("%s: %s event owner %s, actor %s, token %s, detail %v; want %s, %s, NULL, cycle %v",
			where, e.Kind, show(e.Owner), e.Actor, show(e.Token), e.Detail, owner, actor, cycle)
	}
}

// refuseArgs: owner's records on the case's key and the set's keys named;
// keep: the caller holds no row, and nothing is handed on (hand_on false).
type refuseArgs struct {
	owner string
	names []string
	keep  bool
}

func (a refuseArgs) call(key string, p prepared) (string, []any) {
	var ids []int64
	if id, ok := p.waiterIDs[a.owner]; ok {
		ids = append(ids, id)
	}
	for _, n := range a.names {
		ids = append(ids, p.set.prepared[n].waiterIDs[a.owner])
	}
	return `SELECT distributed_lock_refuse_deadlock(owner => $1, ids => $2, ts => clock_timestamp(), hand_on => $3) AS result`,
		[]any{a.owner, ids, !a.keep}
}

func TestRefuseDeadlock(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_refuse_deadlock")
	refused := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] == nil {
			t.Error("no cycle; want the one the wait closes")
		}
	}
	stands := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] != nil {
			t.Errorf("cycle %v; want the wait to stand", result["result"])
		}
	}
	cycle := heldBy(other).queued(me).and(also{name: "b", state: heldBy(me).queued(other)})
	// The refusal is logged on the key waited for, with the cycle it
	// returned.
	loggedOn := func(actor string) func(t *testing.T, result map[string]any, p prepared, after observed) {
		return func(t *testing.T, result map[string]any, p prepared, after observed) {
			t.Helper()
			refused(t, result, p, after)
			want := cycleOf(p, me, "", other, "b")
			if !sameJSON(result["result"], want) {
				t.Errorf("cycle %v; want %v", result["result"], want)
			}
			cycleLogged(t, p.set.main, after.events, me, actor, want)
		}
	}
	setOnFreeKey := free().queuedSet(me).queued(w1).and(also{name: "c", state: heldBy(me).queued(other)},
		also{name: "d", state: heldBy(other).queuedSet(me)})
	f.run(t, []fnCase{
		{name: "the youngest wait on a cycle: refused, its record removed, the refusal logged", state: cycle,
			call: refuseArgs{owner: me}.call,
			want: want{row: untouched, events: []eventWant{refusedWait(me, me)}, check: loggedOn(me)}},
		{name: "the youngest wait on a cycle, its record with an actor: logged by that actor",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, actor: "svc@host"}).
				and(also{name: "b", state: heldBy(me).queued(other)}),
			call: refuseArgs{owner: me}.call,
			want: want{row: untouched, events: []eventWant{refusedWait(me, "svc@host")}, check: loggedOn("svc@host")}},
		{name: "an older wait on a cycle: it stands", state: cycle, call: refuseArgs{owner: other, names: []string{"b"}}.call,
			want: want{row: untouched, waiters: waiters(me), check: func(t *testing.T, result map[string]any, p prepared, a observed) {
				stands(t, result, p, a)
				if evs := p.other(t, "b").events; len(evs) != 0 {
					t.Errorf("b has events %+v; want none", evs)
				}
			}}},
		{name: "no cycle", state: heldBy(other).queued(me), call: refuseArgs{owner: me}.call,
			want: want{row: untouched, waiters: waiters(me), check: stands}},
		{name: "a waiting set first on a free key, nothing handed on (a waiter beside the others holds no row): refused on every key, the key kept",
			state: setOnFreeKey, call: refuseArgs{owner: me, names: []string{"d"}, keep: true}.call,
			want: want{row: untouched, waiters: waiters(w1), events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					refused(t, result, p, after)
					otherIs(t, p, "d", other, true)
				}}},
		{name: "a waiting set first on a free key: refused on every key, the key handed to the next",
			state: setOnFreeKey, call: refuseArgs{owner: me, names: []string{"d"}}.call,
			want: want{row: handedTo(w1, "acquired", other), notify: []notifyWant{handOffTo(w1, "acquired")},
				events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					refused(t, result, p, after)
					otherIs(t, p, "d", other, true)
					want := cycleOf(p, me, "d", other, "c")
					if !sameJSON(result["result"], want) {
						t.Errorf("cycle %v; want %v", result["result"], want)
					}
					cycleLogged(t, p.set.main, after.events, me, me, want)
					cycleLogged(t, p.set.keys["d"], p.other(t, "d").events, me, me, want)
					if evs := p.other(t, "c").events; len(evs) != 0 {
						t.Errorf("c, which the set did not wait for, has events %+v; want none", evs)
					}
				}}},
	})
}
