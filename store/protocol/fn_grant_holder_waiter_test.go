package protocol_test

import (
	"testing"
	"time"
)

// sharedWaiter is a live waiter for a shared lease; permitWaiter one for
// one of n permits.
func sharedWaiter(owner string) waiterRow {
	return waiterRow{owner: owner, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, mode: "shared"}
}

func permitWaiter(owner string, n int) waiterRow {
	return waiterRow{owner: owner, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, mode: "semaphore", permits: n}
}

// slotHandedTo is a slot granted to waiter owner: a minute's lease running
// for its claim window (ten seconds) until its claim, naming the waiter.
func slotHandedTo(owner, kind string) slotWant {
	return slotWant{owner: owner, token: drawnToken, expires: about(10 * time.Second), ttl: time.Minute, kind: kind,
		handedTo: owner}
}

// slotHandOffTo is the NOTIFY of a slot's hand-off to waiter owner, which
// waits in mode.
func slotHandOffTo(owner, kind, mode string) notifyWant {
	n := handOffTo(owner, kind)
	n.mode = mode
	return n
}

// holderGrantEvent is the event of a slot's hand-off to waiter owner,
// logged as its own grant.
func holderGrantEvent(kind, owner, mode string, permits, slot int) eventWant {
	detail := map[string]any{"mode": mode, "slot": slot, "waited_ms": anyValue, "waiter_id": waiterRef(owner)}
	if permits != 0 {
		detail["permits"] = permits
	}
	return eventWant{kind: kind, owner: owner, token: drawnToken, actor: owner, detail: detail}
}

// The owner calls the internal function directly, with waiter w1's record.
func grantHolderWaiterCall(stole bool) func(string, prepared) (string, []any) {
	return func(_ string, p prepared) (string, []any) {
		return `SELECT distributed_lock_grant_holder_waiter(w => w, ts => clock_timestamp(), stole => $2) AS result
			FROM distributed_lock_waiter w WHERE w.waiter_id = $1`, []any{p.waiter(w1), stole}
	}
}

func TestGrantHolderWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_holder_waiter")
	grant, steal := grantHolderWaiterCall(false), grantHolderWaiterCall(true)
	f.run(t, []fnCase{
		{name: "a running shared group: a slot handed to it, its record consumed",
			state: sharedBy(other).withWaiter(sharedWaiter(w1)).withWaiter(sharedWaiter(w2)), call: grant,
			want: want{value: true, row: untouched, waiters: waiters(w2),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "shared")}}},
		{name: "a semaphore's released permit, logged under the waiter's actor",
			state: semaphoreOf(2, other).holding(releasedSlot(w2)).withWaiter(func() waiterRow {
				w := permitWaiter(w1, 2)
				w.logGrants, w.actor = true, "w1-svc"
				return w
			}()), call: grant,
			want: want{value: true, row: untouched, slots: []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				events: []eventWant{func() eventWant {
					e := holderGrantEvent("acquired", w1, "semaphore", 2, 2)
					e.actor = "w1-svc"
					return e
				}()},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "the group formed over a lapsed lease: a steal from it, logged", state: sharedBy().withWaiter(sharedWaiter(w1)), call: steal,
			want: want{value: true, row: untouched, slots: []slotWant{slotHandedTo(w1, "stolen")},
				events: []eventWant{func() eventWant {
					e := holderGrantEvent("stolen", w1, "shared", 0, 1)
					e.prevOwner, e.prevToken = "earlier", keptPrevious
					return e
				}()},
				notify: []notifyWant{slotHandOffTo(w1, "stolen", "shared")}}},
		{name: "every permit held: false, nothing changed", state: semaphoreOf(1, other).withWaiter(permitWaiter(w1, 1)), call: grant,
			want: want{value: false, row: untouched, waiters: []waiterWant{{owner: w1, mode: "semaphore", permits: 1}}}},
	})
}
