package protocol_test

import (
	"testing"
	"time"
)

// enqueueSharedArgs are distributed_lock_enqueue_shared's arguments but the
// key; permits 0 is NULL (shared), the other zero values as enqueueArgs'.
type enqueueSharedArgs struct {
	owner   string
	permits int
}

func (a enqueueSharedArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_enqueue_shared(key => $1, owner => $2, ttl_us => $3, permits => $4,
		claim_us => $5, seen_for_us => $6, lease_metadata => NULL, event_actor => NULL, event_detail => NULL,
		log_grants => false, wake_channel => NULL)`,
		[]any{key, a.owner, time.Minute.Microseconds(), nonZero(a.permits), (10 * time.Second).Microseconds(),
			(30 * time.Second).Microseconds()}
}

func TestEnqueueShared(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_enqueue_shared")
	shared := enqueueSharedArgs{owner: me}
	permits := func(n int) enqueueSharedArgs { return enqueueSharedArgs{owner: me, permits: n} }
	granted := func(kind string, row rowWant, slots []slotWant) want {
		return want{outcome: kind, owner: me, token: drawnToken, remaining: &span{}, row: row, slots: slots, check: dbNowReturned}
	}
	// groupRow is the prepared group's row, its wake_until kept ahead of
	// the caller's record.
	groupRow := func(mode string, permits int) rowWant {
		return rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
			prevOwner: "earlier", prevToken: keptPrevious, mode: mode, permits: permits,
			wakes: &span{time.Minute - slack, time.Minute}}
	}
	// queuedAs: the caller's record at the back of the queue, waiting in
	// mode for permits, behind ahead.
	queuedAs := func(mode string, n int, row rowWant, ahead ...waiterWant) want {
		return want{outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me, row: row,
			waiters: append(ahead, waiterWant{owner: me, seenFor: 30 * time.Second, mode: mode, permits: n}),
			refusal: placeIn(len(ahead)+1, len(ahead)+1), check: dbNowReturned}
	}
	// claimed is a slot handed to the caller's record in the call, claimed
	// at once: its TTL from now, one renewal.
	claimed := func(kind string) slotWant {
		s := slotHandedTo(me, kind)
		s.expires, s.renewals = about(time.Minute), 1
		return s
	}
	f.run(t, []fnCase{
		{name: "no row: granted at once, the group formed", state: noRow(), call: shared.call, want: granted("acquired",
			formed("shared", 0, "acquired", "", noToken), []slotWant{slotGranted(me, "acquired", time.Minute)})},
		{name: "a running shared group: joined at once", state: sharedBy(other), call: shared.call,
			want: granted("acquired", untouched, []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)})},
		{name: "the caller a holder: renewed, same token", state: semaphoreOf(2, other, me), call: permits(2).call,
			want: want{outcome: "renewed", owner: me, token: slotTok(2), remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, time.Minute)}, check: dbNowReturned}},
		{name: "an exclusive lease ran out: stolen by the group's first holder", state: lapsed(other), call: shared.call,
			want: func() want {
				w := granted("stolen", formed("shared", 0, "stolen", other, keptToken), []slotWant{slotGranted(me, "stolen", time.Minute)})
				e := sharedGrantEvent("stolen", "shared", 0, 1, nil)
				e.prevOwner, e.prevToken = other, keptToken
				w.events = []eventWant{e}
				return w
			}()},
		{name: "a full semaphore: queued for a permit", state: semaphoreOf(2, other, w1), call: permits(2).call,
			want: func() want {
				w := queuedAs("semaphore", 2, groupRow("semaphore", 2))
				w.remaining = &span{50*time.Second - slack, 50 * time.Second}
				return w
			}()},
		{name: "shared, a writer queued: a reader queued behind it", state: sharedBy(other).queued(w1), call: shared.call,
			want: queuedAs("shared", 0, groupRow("shared", 0), waiterWant{owner: w1})},
		{name: "an exclusive lease runs: queued behind it", state: heldBy(other), call: shared.call,
			want: func() want {
				w := queuedAs("shared", 0, rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
					prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}})
				w.owner = other
				return w
			}()},
		{name: "a semaphore of other permits: conflict, nothing queued", state: semaphoreOf(2, other), call: permits(3).call,
			want: want{outcome: "conflict", owner: groupOwner, token: keptToken, row: untouched, check: dbNowReturned}},
		{name: "shared held, permits asked: conflict", state: sharedBy(other), call: permits(2).call,
			want: want{outcome: "conflict", owner: groupOwner, token: keptToken, row: untouched, check: dbNowReturned}},
		{name: "the caller's live record: taken over in its place", call: permits(1).call,
			state: semaphoreOf(1, other).withWaiter(permitWaiter(w1, 1)).
				withWaiter(waiterRow{owner: me, seenFor: 5 * time.Second, waitedFor: time.Second}).withWaiter(permitWaiter(w2, 1)),
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me, row: groupRow("semaphore", 1),
				waiters: []waiterWant{{owner: w1}, {owner: me, seenFor: 30 * time.Second, mode: "semaphore", permits: 1}, {owner: w2}},
				refusal: placeIn(2, 3), check: dbNowReturned}},
		{name: "the caller's record at the head, a permit free: handed to it and claimed", call: permits(2).call,
			state: semaphoreOf(2, other).holding(releasedSlot(w2)).withWaiter(permitWaiter(me, 2)),
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, claimed("acquired")}, notify: []notifyWant{slotHandOffTo(me, "acquired", "semaphore")},
				check: dbNowReturned}},
		{name: "room behind the head: the head served, then the caller's new record, claimed", call: permits(3).call,
			state: semaphoreOf(3, other).holding(lapsedSlot(w2)).withWaiter(permitWaiter(w1, 3)),
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotHandedTo(w1, "stolen"), func() slotWant { s := claimed("acquired"); s.slot = 3; return s }()},
				events: []eventWant{func() eventWant {
					e := holderGrantEvent("stolen", w1, "semaphore", 3, 2)
					e.prevOwner, e.prevToken = w2, slotTok(2)
					return e
				}()},
				notify: []notifyWant{slotHandOffTo(w1, "stolen", "semaphore"), slotHandOffTo(me, "acquired", "semaphore")},
				check:  dbNowReturned}},
		// Beside other enqueues: the row only for share, wake_until as the
		// releases already keep it.
		{name: "a full semaphore with waiters: queued beside another enqueue, the row only shared",
			state: semaphoreOf(2, other, w1).queued(w2), call: permits(2).call, during: whileRowShared,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
				waiterID: me, row: untouched,
				waiters: []waiterWant{{owner: w2}, {owner: me, seenFor: 30 * time.Second, mode: "semaphore", permits: 2}},
				refusal: placeIn(2, 2), check: dbNowReturned}},
		{name: "hand-offs promised for less than the record lives: the row for update, wake_until moved on",
			state: semaphoreOf(2, other, w1).queued(w2).with(func(r *lockRow) { r.wakeFor = 20 * time.Second }),
			call:  permits(2).call,
			want: func() want {
				w := queuedAs("semaphore", 2, groupRow("semaphore", 2), waiterWant{owner: w2})
				w.remaining = &span{50*time.Second - slack, 50 * time.Second}
				return w
			}()},
		{name: "the group ended between the look and the lock: busy, nothing queued",
			state: semaphoreOf(2, other, w1).queued(w2), call: permits(2).call,
			during: whileRowChanges(`UPDATE distributed_lock SET released_at = clock_timestamp(), expires_at = clock_timestamp()
				WHERE lock_key = $1 AND slot = 0`),
			want: want{outcome: "busy", row: rowWant{owner: groupOwner, token: keptToken, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, mode: "semaphore", permits: 2, released: releasedNow,
				expires: justNow, wakes: &span{time.Minute - slack, time.Minute}},
				waiters: []waiterWant{{owner: w2}}, slots: []slotWant{asPrepared, asPrepared}}},
		{name: "zero permits", state: noRow(), call: permits(-1).call, want: want{err: "23514"}},
		{name: "the reserved owner", state: sharedBy(other), call: enqueueSharedArgs{owner: "*"}.call, want: want{err: "23514"}},
	})
}
