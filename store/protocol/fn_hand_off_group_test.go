package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly, with the head record of
// the case's key (owner me's, a waiting set's).
func handOffGroupCall(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_hand_off_group(key => $1, head => w, ts => clock_timestamp()) AS result
		FROM distributed_lock_waiter w WHERE w.waiter_id = $2`, []any{key, p.waiter(me)}
}

// whileOtherRowLocked makes the call while another transaction holds the
// row of the set's key "b" locked.
var whileOtherRowLocked = whileLocked(`SELECT FROM distributed_lock WHERE lock_key = $1 || '/b' AND slot = 0 FOR UPDATE`, false)

func TestHandOffGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_hand_off_group")
	bHeldByMe := func(t *testing.T, result map[string]any, p prepared, after observed) {
		handedBy(me)(t, result, p, after)
		otherIs(t, p, "b", me, true)
	}
	notGranted := func(t *testing.T, result map[string]any, p prepared, after observed) {
		handedBy("")(t, result, p, after)
	}
	f.run(t, []fnCase{
		{name: "every key free, the set first on each: every key granted",
			state: free().queuedSet(me).and(also{name: "b", state: free().queuedSet(me)}), call: handOffGroupCall,
			want: want{row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")}, check: bHeldByMe}},
		{name: "the set's owner holds the other key: granted anew",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(me).queuedSet(me)}), call: handOffGroupCall,
			want: want{row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")}, check: bHeldByMe}},
		{name: "the set's owner holds the other key, another queued ahead of the set on it: granted anew, the other still waits",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(me).queued(w1).queuedSet(me)}), call: handOffGroupCall,
			want: want{row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					handedBy(me)(t, result, p, after)
					otherIs(t, p, "b", me, true, w1)
				}}},
		// A set whose record on "b" asks for a shared lease or a permit.
		{name: "mixed: the other key a running shared group, the set's record there shared: every key granted",
			state: free().queuedSet(me).and(also{name: "b", state: sharedBy(other).withWaiter(
				waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "shared"})}), call: handOffGroupCall,
			want: want{row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					handedBy(me)(t, result, p, after)
					heldSlotOf(t, p, "b", me)
				}}},
		{name: "mixed: the other key free, the set's record there shared: the group formed for it",
			state: free().queuedSet(me).and(also{name: "b", state: free().withWaiter(
				waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "shared"})}), call: handOffGroupCall,
			want: want{row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					handedBy(me)(t, result, p, after)
					heldSlotOf(t, p, "b", me)
				}}},
		{name: "mixed: the other key held exclusively, the set's record there shared: nothing granted",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(other).withWaiter(
				waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "shared"})}), call: handOffGroupCall,
			want: want{row: untouched, waiters: waiters(me), check: notGranted}},
		{name: "mixed: the other key a full semaphore: nothing granted, no grant kept",
			state: free().queuedSet(me).and(also{name: "b", state: semaphoreOf(1, other).withWaiter(
				waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "semaphore", permits: 1})}), call: handOffGroupCall,
			want: want{row: untouched, waiters: waiters(me), check: func(t *testing.T, r map[string]any, p prepared, a observed) {
				notGranted(t, r, p, a)
				if o := p.other(t, "b"); len(o.waiters) != 1 || o.waiters[0].Owner != me || len(o.slots) != 1 {
					t.Errorf("b: waiters %v, slots %v; want the set's record kept, the one holder alone", o.waiters, o.slots)
				}
			}}},
		{name: "another key held: nothing granted, the key kept for the set",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(other).queuedSet(me)}), call: handOffGroupCall,
			want: want{row: untouched, waiters: waiters(me), check: func(t *testing.T, r map[string]any, p prepared, a observed) {
				notGranted(t, r, p, a)
				otherIs(t, p, "b", other, true, me)
			}}},
		{name: "another key in its lock-delay: nothing granted",
			state: free().queuedSet(me).and(also{name: "b", state: delayedAfterExpiry(other).queuedSet(me)}), call: handOffGroupCall,
			want: want{row: untouched, waiters: waiters(me), check: notGranted}},
		{name: "every key free, the set's records asking for a lock-delay: every grant carries it",
			state: free().withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, lockDelay: 20 * time.Second}).and(
				also{name: "b", state: free().withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, lockDelay: 20 * time.Second})}),
			call: handOffGroupCall, want: want{
				row:    func() rowWant { w := handedTo(me, "acquired", other); w.lockDelay = 20 * time.Second; return w }(),
				notify: []notifyWant{handOffTo(me, "acquired")}, check: bHeldByMe}},
		{name: "another waits ahead of the set on another key: nothing granted",
			state: free().queuedSet(me).and(also{name: "b", state: free().queued(w1).queuedSet(me)}), call: handOffGroupCall,
			want: want{row: untouched, waiters: waiters(me), check: notGranted}},
		{name: "another key's row locked: nothing granted, the set woken to check",
			state: free().queuedSet(me).and(also{name: "b", state: free().queuedSet(me)}), call: handOffGroupCall, during: whileOtherRowLocked,
			want: want{row: untouched, waiters: waiters(me), notify: []notifyWant{wakeUp}, check: notGranted}},
		{name: "another key's row locked, the set on a wake channel: woken there alone",
			state: free().withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, channel: chanA}).queuedOn(chanB, w1).and(
				also{name: "b", state: free().withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, channel: chanA})}),
			call: handOffGroupCall, during: whileOtherRowLocked,
			want: want{row: untouched, waiters: []waiterWant{{owner: me, channel: chanA}, {owner: w1, channel: chanB}},
				notify: []notifyWant{wakeUp.on(chanA)}, check: notGranted}},
	})
}

// heldSlotOf: owner holds a slot of the set's key name after the call, and
// its record there is consumed.
func heldSlotOf(t *testing.T, p prepared, name, owner string) {
	t.Helper()
	o := p.other(t, name)
	for _, w := range o.waiters {
		if w.Owner == owner {
			t.Errorf("%s: %s's record is still queued", p.set.keys[name], owner)
		}
	}
	for _, slot := range o.slots {
		if slot.Owner == owner && slot.ReleasedAt == nil {
			return
		}
	}
	t.Errorf("%s: no slot of %s's; want one", p.set.keys[name], owner)
}
