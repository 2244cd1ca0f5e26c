package protocol_test

import (
	"cmp"
	"testing"
	"time"
)

// releaseAllArgs: owner releases the case's key and the set's other keys,
// each with its prepared token (the case's key: token, when set).
type releaseAllArgs struct {
	owner string
	lazy  bool
	token tok
}

func (a releaseAllArgs) call(key string, p prepared) (string, []any) {
	keys, tokens := []string{key}, []int64{tokenArg(p, cmp.Or(a.token, keptToken))}
	for _, n := range p.setNames() {
		keys, tokens = append(keys, p.set.keys[n]), append(tokens, tokenArg(p.set.prepared[n], keptToken))
	}
	return `SELECT r.* FROM distributed_lock_release_all(keys => $1, owner => $2, tokens => $3,
		lazy_commit => $4, log_release => false, event_actor => NULL) r
		ORDER BY r.lock_key = $5 DESC LIMIT 1`, []any{keys, a.owner, tokens, a.lazy, key}
}

// otherFreed: the set's key name was released.
func otherFreed(name string) func(t *testing.T, _ map[string]any, p prepared, _ observed) {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		if o := p.other(t, name); o.row == nil || o.row.ReleasedAt == nil {
			t.Errorf("%s: %v; want released", p.set.keys[name], o.row)
		}
	}
}

func TestReleaseAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_release_all")
	freed := rowWant{owner: me, token: keptToken, keptExpiry: true, ttl: time.Minute, released: releasedNow,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	f.run(t, []fnCase{
		{name: "every lease current: every one released", state: heldBy(me).and(also{name: "b", state: heldBy(me)}),
			call: releaseAllArgs{owner: me, lazy: true}.call, want: want{outcome: "released", owner: me, token: keptToken,
				row: freed, check: otherFreed("b")}},
		{name: "queued: handed to the head", state: heldBy(me).queued(w1).and(also{name: "b", state: heldBy(me)}),
			call: releaseAllArgs{owner: me}.call, want: want{outcome: "released", owner: me, token: keptToken,
				row: handedTo(w1, "acquired", me), notify: []notifyWant{handOffTo(w1, "acquired")}, check: otherFreed("b")}},
		{name: "a set queued on every key, another behind it on one: the set handed every key, the other still waits",
			state: heldBy(me).queuedSet(other).and(also{name: "b", state: heldBy(me).queuedSet(other).queued(w1)}),
			call:  releaseAllArgs{owner: me}.call, want: want{outcome: "released", owner: me, token: keptToken,
				row: handedTo(other, "acquired", me), notify: []notifyWant{handOffTo(other, "acquired")},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", other, true, w1) }}},
		{name: "a holder's slot and a lease: both released, the group ended and handed on",
			state: sharedBy(me).queued(w1).and(also{name: "b", state: heldBy(me)}),
			call:  releaseAllArgs{owner: me, token: slotTok(1)}.call, want: want{outcome: "released", owner: me, token: slotTok(1),
				row: handedFromGroup(w1, 0), slots: []slotWant{slotReleasedNow(1, me)},
				notify: []notifyWant{handOffTo(w1, "acquired")}, check: otherFreed("b")}},
		{name: "a running group's own token, as its owner '*': not held", state: sharedBy(other).and(also{name: "b", state: free()}),
			call: releaseAllArgs{owner: groupOwner}.call, want: want{outcome: "not_held", row: untouched}},
		{name: "another's lease: not held, the other released all the same", state: heldBy(other).and(also{name: "b", state: heldBy(me)}),
			call: releaseAllArgs{owner: me}.call, want: want{outcome: "not_held", row: untouched, check: otherFreed("b")}},
	})
}
