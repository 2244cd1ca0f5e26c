package protocol_test

import (
	"testing"
	"time"
)

// enqueueAllArgs call distributed_lock_enqueue_all for owner on the case's
// key set (or keys(key)) and read the row of the case's key.
type enqueueAllArgs struct {
	owner   string
	keys    func(key string) []string
	channel string // the wake channel; "": NULL
	// mode and permits: the lease asked for on the case's key (the others
	// exclusive); "": every key exclusive (modes NULL).
	mode    string
	permits int
}

func (a enqueueAllArgs) call(key string, p prepared) (string, []any) {
	keys := []string{key}
	if p.set != nil {
		keys = p.all()
	}
	if a.keys != nil {
		keys = a.keys(key)
	}
	var modes, permits []any
	if a.mode != "" {
		modes, permits = make([]any, len(keys)), make([]any, len(keys))
		modes[0], permits[0] = a.mode, nonZero(a.permits)
	}
	return `SELECT e.* FROM distributed_lock_enqueue_all(keys => $1, owner => $2, ttl_us => $3, claim_us => $4,
		seen_for_us => $5, lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => false,
		wake_channel => $7, modes => $8::text[], permits => $9::integer[]) e
		ORDER BY e.lock_key = $6 DESC LIMIT 1`,
		[]any{keys, a.owner, time.Minute.Microseconds(), (10 * time.Second).Microseconds(), (30 * time.Second).Microseconds(), key,
			null(a.channel), modes, permits}
}

// sameSet: the caller's records on the case's key and on other key name
// are one waiting set.
func sameSet(name string) func(t *testing.T, result map[string]any, p prepared, after observed) {
	return func(t *testing.T, result map[string]any, p prepared, after observed) {
		t.Helper()
		dbNowReturned(t, result, p, after)
		mine, theirs := waiterID(p, after, me), p.otherWaiter(t, name, me)
		if g, h := groupOf(t, p.set.db, mine), groupOf(t, p.set.db, theirs); g == 0 || g != h {
			t.Errorf("records %d and %d in groups %d and %d; want one group", mine, theirs, g, h)
		}
	}
}

func TestEnqueueAll(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_enqueue_all")
	mine := enqueueAllArgs{owner: me}
	freeRowWaking := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, released: stillReleased,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}}
	heldRowWaking := freeRowWaking
	heldRowWaking.released = notReleased
	queuedHere := func(owner string, token tok, row rowWant, others string) want {
		return want{outcome: "queued", owner: owner, token: token, waiterID: me, row: row, refusal: placeIn(1, 1),
			waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second}}, check: sameSet(others)}
	}
	f.run(t, []fnCase{
		{name: "a group whose holders all lapsed and a free key: the group ended, both granted",
			state: sharedBy().holding(lapsedSlot(other)).and(also{name: "b", state: free()}), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: func() rowWant {
					w := grantTo(me, "acquired", time.Minute, keptToken)
					w.prevOwner = groupOwner
					return w
				}(),
				slots: []slotWant{slotReleasedNow(1, other)}, // its lapsed lease ends with the group
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "mixed: the key shared in a running group, the other free: both granted at once",
			state: sharedBy(other).and(also{name: "b", state: free()}), call: enqueueAllArgs{owner: me, mode: "shared"}.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "mixed: the key shared in a running group, the other held: queued on both, the record shared",
			state: sharedBy(other).and(also{name: "b", state: heldBy(w1)}), call: enqueueAllArgs{owner: me, mode: "shared"}.call,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me, refusal: placeIn(1, 1),
				remaining: &span{50*time.Second - slack, 50 * time.Second},
				row: rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
					prevOwner: "earlier", prevToken: keptPrevious, mode: "shared", wakes: &span{time.Minute - slack, time.Minute}},
				waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second, mode: "shared"}}, check: sameSet("b")}},
		{name: "mixed: a full semaphore, the other free: queued, nothing held",
			state: semaphoreOf(1, other).and(also{name: "b", state: free()}),
			call:  enqueueAllArgs{owner: me, mode: "semaphore", permits: 1}.call,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me, refusal: placeIn(1, 1),
				remaining: &span{50*time.Second - slack, 50 * time.Second},
				row: rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
					prevOwner: "earlier", prevToken: keptPrevious, mode: "semaphore", permits: 1,
					wakes: &span{time.Minute - slack, time.Minute}},
				waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second, mode: "semaphore", permits: 1}},
				check:   sameSet("b")}},
		{name: "every key may be taken: granted", state: free().and(also{name: "b", state: noRow()}), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row:   func() rowWant { w := grantTo(me, "acquired", time.Minute, keptToken); w.prevOwner = other; return w }(),
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "held by the caller, the other free: renewed", state: heldBy(me).and(also{name: "b", state: free()}), call: mine.call,
			want: want{outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
				row: rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
					kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}},
		{name: "expired, another's, the other free: stolen", state: lapsed(other).and(also{name: "b", state: free()}), call: mine.call,
			want: want{outcome: "stolen", owner: me, token: drawnToken, remaining: &span{},
				row:    func() rowWant { w := grantTo(me, "stolen", time.Minute, keptToken); w.prevOwner = other; return w }(),
				events: []eventWant{{kind: "stolen", owner: me, token: drawnToken, actor: me, prevOwner: other, prevToken: keptToken, detail: map[string]any{}}}}},
		{name: "free, another key held: queued on both, the free key kept for the set", state: free().and(also{name: "b", state: heldBy(w1)}),
			call: mine.call, want: queuedHere(other, keptToken, freeRowWaking, "b")},
		{name: "held, another key without a row: a free row to queue on", state: heldBy(other).and(also{name: "b", state: noRow()}),
			call: mine.call, want: func() want {
				w := queuedHere(other, keptToken, heldRowWaking, "b")
				same := w.check
				w.check = func(t *testing.T, result map[string]any, p prepared, after observed) {
					same(t, result, p, after)
					otherIs(t, p, "b", me, false, me)
				}
				return w
			}()},
		{name: "free, queued, another key held: handed to the head first", state: free().queued(w1).and(also{name: "b", state: heldBy(w2)}),
			call: mine.call, want: func() want {
				w := queuedHere(w1, drawnToken, handedTo(w1, "acquired", other), "b")
				w.notify = []notifyWant{handOffTo(w1, "acquired")}
				return w
			}()},
		{name: "held by another who waits for a key the caller holds: deadlock",
			state: heldBy(other).and(also{name: "b", state: heldBy(me).queued(other)}),
			call:  enqueueAllArgs{owner: me, keys: func(key string) []string { return []string{key, key + "/c"} }}.call,
			want: want{outcome: "deadlock", owner: other, token: keptToken, row: heldRowWaking, refusal: queueOf(0),
				events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					t.Helper()
					want := cycleOf(p, me, "", other, "b")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
					otherIs(t, p, "b", me, true, other)
					// Logged on each key the set waited for.
					cycleLogged(t, p.set.main, after.events, me, me, want)
					c := p.set.main + "/c"
					cycleLogged(t, c, observe(t, p.set.db, c).events, me, me, want)
				}}},

		{name: "free, another key held, with a wake channel: every record of the set names it",
			state: free().and(also{name: "b", state: heldBy(w1)}), call: enqueueAllArgs{owner: me, channel: chanA}.call,
			want: func() want {
				w := queuedHere(other, keptToken, freeRowWaking, "b")
				w.waiters[0].channel = chanA
				same := w.check
				w.check = func(t *testing.T, result map[string]any, p prepared, after observed) {
					same(t, result, p, after)
					var channel *string
					if err := p.set.db.QueryRow(t.Context(), `SELECT wake_channel FROM distributed_lock_waiter WHERE waiter_id = $1`,
						p.otherWaiter(t, "b", me)).Scan(&channel); err != nil || show(channel) != chanA {
						t.Errorf("the set's record on b names wake channel %s (%v); want %s", show(channel), err, chanA)
					}
				}
				return w
			}()},
		{name: "a wake channel that is no identifier, every key free: refused, nothing granted",
			state: free().and(also{name: "b", state: free()}), call: enqueueAllArgs{owner: me, channel: "1wake"}.call,
			want: want{err: "23514"}},
		{name: "a key named twice", state: free(), call: enqueueAllArgs{owner: me, keys: func(key string) []string {
			return []string{key, key}
		}}.call, want: want{err: "22023"}},
		{name: "129 keys", state: free(), call: enqueueAllArgs{owner: me, keys: manyKeys(129)}.call, want: want{err: "22023"}},
		{name: "the reserved owner, every key free: refused, nothing granted", state: free().and(also{name: "b", state: free()}),
			call: enqueueAllArgs{owner: "*"}.call, want: want{err: "23514"}},
	})
}
