package protocol_test

import (
	"testing"
	"time"
)

// grantSlotArgs: who is granted a slot of a group of mode and permits (0:
// NULL), and whether the group was formed over the key's row as prepared
// (over), a lease that ran out unreleased.
type grantSlotArgs struct {
	owner   string
	mode    string
	permits int
	over    bool
}

// The owner calls the internal function directly, as acquire_shared does
// with the group's row held.
func (a grantSlotArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_grant_slot(key => $1, owner => $2, ttl_us => $3, mode => $4, n => $5,
		lease_metadata => NULL, ts => clock_timestamp(),
		over => (SELECT l FROM distributed_lock l WHERE l.lock_key = $1 AND $6),
		event_actor => NULL, event_detail => NULL, log_grants => false)`,
		[]any{key, a.owner, time.Minute.Microseconds(), a.mode, nonZero(a.permits), a.over}
}

func TestGrantSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_slot")
	shared := grantSlotArgs{owner: me, mode: "shared"}
	ofTwo := grantSlotArgs{owner: me, mode: "semaphore", permits: 2}
	granted := func(kind string, slots []slotWant, events ...eventWant) want {
		return want{outcome: kind, owner: me, token: drawnToken, remaining: &span{}, row: untouched, slots: slots, events: events}
	}
	f.run(t, []fnCase{
		{name: "the caller's own running slot: renewed, same token", state: sharedBy(other, me), call: shared.call,
			want: want{outcome: "renewed", owner: me, token: slotTok(2), remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, time.Minute)}}},
		{name: "a free slot: taken", state: semaphoreOf(2, other).holding(releasedSlot(w1)), call: ofTwo.call,
			want: granted("acquired", []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)})},
		{name: "room: a new slot", state: sharedBy(other), call: shared.call,
			want: granted("acquired", []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)})},
		{name: "another's lapsed slot: stolen, logged", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: ofTwo.call,
			want: func() want {
				e := sharedGrantEvent("stolen", "semaphore", 2, 2, nil)
				e.prevOwner, e.prevToken = w1, slotTok(2)
				return granted("stolen", []slotWant{asPrepared, slotGranted(me, "stolen", time.Minute)}, e)
			}()},
		{name: "formed over a lease that ran out: the first holder's grant a steal from it",
			state: sharedBy(), call: grantSlotArgs{owner: me, mode: "shared", over: true}.call, want: func() want {
				e := sharedGrantEvent("stolen", "shared", 0, 1, nil)
				e.prevOwner, e.prevToken = groupOwner, keptToken
				return granted("stolen", []slotWant{slotGranted(me, "stolen", time.Minute)}, e)
			}()},
		{name: "every permit held: held, until the first ends", state: semaphoreOf(2, other).holding(holderRow{owner: w1, expiresIn: 20 * time.Second}),
			call: ofTwo.call, want: want{outcome: "held", owner: w1, token: slotTok(2),
				remaining: &span{20*time.Second - slack, 20 * time.Second}, row: untouched, refusal: queueOf(0)}},
		{name: "every permit held, a waiter queued: held, the queue counted", state: semaphoreOf(2, other, w1).queued(w2),
			call: ofTwo.call, want: want{outcome: "held", owner: other, token: slotTok(1), row: untouched,
				waiters: waiters(w2), refusal: queueOf(1)}},
	})
}
