package protocol_test

import (
	"strings"
	"testing"
	"time"
)

// enqueueArgs are distributed_lock_enqueue's arguments but the key; zero
// values are a minute's lease, a ten-second claim window, a record seen for
// thirty seconds, and the defaults.
type enqueueArgs struct {
	owner            string
	ttl, claim, seen time.Duration
	metadata         string
	actor, detail    string
	logGrants        bool
	lockDelay        time.Duration
	channel          string // the wake channel; "": NULL
}

func (a enqueueArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_enqueue(key => $1, owner => $2, ttl_us => $3, claim_us => $4,
		seen_for_us => $5, lease_metadata => $6::jsonb, event_actor => $7, event_detail => $8::jsonb,
		log_grants => $9, lock_delay_us => $10, wake_channel => $11)`,
		[]any{key, a.owner, or(a.ttl, time.Minute).Microseconds(), or(a.claim, 10*time.Second).Microseconds(),
			or(a.seen, 30*time.Second).Microseconds(), null(a.metadata), null(a.actor), null(a.detail), a.logGrants,
			a.lockDelay.Microseconds(), null(a.channel)}
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_enqueue")
	mine := enqueueArgs{owner: me}
	asking := enqueueArgs{owner: me, ttl: 2 * time.Minute, claim: 5 * time.Second, metadata: `{"pid": 42}`, actor: "svc", logGrants: true}
	granted := func(outcome string, row rowWant, events ...eventWant) want {
		token := drawnToken
		if outcome == "renewed" {
			token = keptToken
		}
		return want{outcome: outcome, owner: me, token: token, remaining: &span{}, row: row, events: events, check: dbNowReturned}
	}
	// queuedBehind: the caller's record is at the back, the row is
	// the holder's, and releases keep handing off for twice seen_for.
	queuedBehind := func(holder string, token tok, row rowWant, ahead ...string) want {
		return want{outcome: "queued", owner: holder, token: token, waiterID: me, row: row,
			waiters: append(waiters(ahead...), waiterWant{owner: me, seenFor: 30 * time.Second}), check: dbNowReturned,
			refusal: placeIn(len(ahead)+1, len(ahead)+1)}
	}
	delaying := enqueueArgs{owner: me, lockDelay: 20 * time.Second}
	heldRow := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: granted("acquired", grantTo(me, "acquired", time.Minute, noToken))},
		{name: "no row, logged", state: noRow(), call: asking.call, want: granted("acquired",
			func() rowWant {
				w := grantTo(me, "acquired", 2*time.Minute, noToken)
				w.metadata = `{"pid": 42}`
				return w
			}(),
			eventWant{kind: "acquired", owner: me, token: drawnToken, actor: "svc", detail: map[string]any{}})},
		{name: "free", state: free(), call: mine.call, want: granted("acquired",
			func() rowWant { w := grantTo(me, "acquired", time.Minute, keptToken); w.prevOwner = other; return w }())},
		{name: "held by the caller", state: heldBy(me), call: mine.call, want: granted("renewed",
			rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, renewals: 1})},
		{name: "held by another", state: heldBy(other), call: asking.call, want: func() want {
			w := queuedBehind(other, keptToken, heldRow)
			w.check = func(t *testing.T, result map[string]any, p prepared, after observed) {
				dbNowReturned(t, result, p, after)
				got := after.waiters[0]
				if show(got.TTL) != "2m0s" || show(got.Claim) != "5s" || !sameJSON(got.Metadata, `{"pid": 42}`) ||
					!got.LogGrants || show(got.Actor) != "svc" {
					t.Errorf("waiter record %+v; want the lease asked for: 2m, claim 5s, {\"pid\": 42}, logged by svc", got)
				}
			}
			return w
		}()},
		{name: "held by another, queued", state: heldBy(other).queued(w1), call: mine.call, want: queuedBehind(other, keptToken, untouched, w1)},
		{name: "held by another, another enqueue making releases hand off meanwhile: queued beside it once it commits",
			state: heldBy(other), call: mine.call, during: whileRowChanges(setWakeSQL),
			want: queuedBehind(other, keptToken, heldRow)},
		{name: "a running shared group: queued behind it", state: sharedBy(other), call: mine.call, want: func() want {
			row := rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, mode: "shared", wakes: &span{time.Minute - slack, time.Minute}}
			return queuedBehind(groupOwner, keptToken, row)
		}()},
		{name: "a group whose holders all lapsed: ended, then granted", state: sharedBy().holding(lapsedSlot(other)), call: mine.call,
			want: func() want {
				w := granted("acquired", func() rowWant {
					r := grantTo(me, "acquired", time.Minute, keptToken)
					r.prevOwner = groupOwner
					return r
				}())
				w.slots = []slotWant{slotReleasedNow(1, other)} // its lapsed lease ends with the group
				return w
			}()},
		{name: "a semaphore whose holders all lapsed, queued: ended, handed to the head, the caller behind it",
			state: semaphoreOf(2).holding(lapsedSlot(other)).queued(w1), call: mine.call, want: func() want {
				row := handedFromGroup(w1, 2)
				row.wakes = &span{time.Minute - slack, time.Minute}
				w := queuedBehind(w1, drawnToken, row)
				w.notify = []notifyWant{handOffTo(w1, "acquired")}
				w.slots = []slotWant{slotReleasedNow(1, other)}
				return w
			}()},
		{name: "promised to a waiter", state: promisedTo(w1), call: mine.call, want: queuedBehind(w1, keptToken, untouched)},
		{name: "free, queued: handed to the head first", state: free().queued(w1), call: mine.call, want: func() want {
			w := queuedBehind(w1, drawnToken, handedTo(w1, "acquired", other))
			w.notify = []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
		{name: "expired, another's", state: lapsed(other), call: mine.call, want: granted("stolen",
			func() rowWant { w := grantTo(me, "stolen", time.Minute, keptToken); w.prevOwner = other; return w }(),
			eventWant{kind: "stolen", owner: me, token: drawnToken, actor: me, prevOwner: other, prevToken: keptToken, detail: map[string]any{}})},
		{name: "expired, queued: handed to the head first, a steal", state: lapsed(other).queued(w1), call: mine.call, want: func() want {
			w := queuedBehind(w1, drawnToken, handedTo(w1, "stolen", other))
			w.events = []eventWant{grantEvent("stolen", w1, w1, other)}
			w.notify = []notifyWant{handOffTo(w1, "stolen")}
			return w
		}()},
		{name: "expired, the caller's own, queued: handed to the head", state: lapsed(me).queued(w1), call: mine.call, want: func() want {
			w := queuedBehind(w1, drawnToken, handedTo(w1, "stolen", me))
			w.events = []eventWant{grantEvent("stolen", w1, w1, me)}
			w.notify = []notifyWant{handOffTo(w1, "stolen")}
			return w
		}()},
		{name: "held by another, the caller queued: its record taken over in its place", call: asking.call,
			state: heldBy(other).queued(w1).withWaiter(waiterRow{owner: me, seenFor: 5 * time.Second, waitedFor: time.Second}).queued(w2),
			want: func() want {
				w := want{outcome: "queued", owner: other, token: keptToken, waiterID: me, row: untouched,
					waiters: []waiterWant{{owner: w1}, {owner: me, seenFor: 30 * time.Second}, {owner: w2}}, check: dbNowReturned,
					refusal: placeIn(2, 3)}
				w.check = func(t *testing.T, result map[string]any, p prepared, after observed) {
					dbNowReturned(t, result, p, after)
					got := after.waiters[1]
					if show(got.TTL) != "2m0s" || show(got.Claim) != "5s" || !sameJSON(got.Metadata, `{"pid": 42}`) ||
						!got.LogGrants || show(got.Actor) != "svc" {
						t.Errorf("waiter record %+v; want the lease now asked for: 2m, claim 5s, {\"pid\": 42}, logged by svc", got)
					}
				}
				return w
			}()},
		{name: "promised to the caller's record", state: promisedTo(me), call: mine.call, want: granted("renewed",
			rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, renewals: 1, handedTo: me})},
		{name: "expired, the caller queued at the head: handed to its record and claimed", state: lapsed(other).queued(me, w1),
			call: mine.call, want: func() want {
				row := handedTo(me, "stolen", other)
				row.expires, row.renewals = about(time.Minute), 1
				w := granted("stolen", row, grantEvent("stolen", me, me, other))
				w.waiters = waiters(w1)
				w.notify = []notifyWant{handOffTo(me, "stolen")}
				return w
			}()},
		{name: "lapsed hand-off, nobody queued", state: lapsedHandOffTo(w1), call: mine.call, want: granted("stolen",
			func() rowWant {
				w := grantTo(me, "stolen", time.Minute, keptToken)
				w.prevOwner, w.wakes = w1, &span{0, time.Minute}
				return w
			}(),
			eventWant{kind: "stolen", owner: me, token: drawnToken, actor: me, prevOwner: w1, prevToken: keptToken, detail: map[string]any{}})},

		{name: "held by another who waits for a key the caller holds: deadlock, not queued, the refusal logged",
			state: heldBy(other).and(also{name: "b", state: heldBy(me).queued(other)}), call: mine.call, want: want{
				outcome: "deadlock", owner: other, token: keptToken, row: heldRow, refusal: queueOf(0),
				events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					dbNowReturned(t, result, p, after)
					want := cycleOf(p, me, "", other, "b")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
					cycleLogged(t, p.set.main, after.events, me, me, want)
					if evs := p.other(t, "b").events; len(evs) != 0 {
						t.Errorf("b has events %+v; want none", evs)
					}
				}}},
		{name: "held by another who waits behind the caller's set: deadlock, logged by the caller's actor",
			state: heldBy(other).and(also{name: "b", state: free().queuedSet(me).queued(other)}),
			call:  enqueueArgs{owner: me, actor: "svc"}.call, want: want{
				outcome: "deadlock", owner: other, token: keptToken, row: heldRow, refusal: queueOf(0),
				events: []eventWant{refusedWait(me, "svc")},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					want := cycleOf(p, me, "", other, "b")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
					cycleLogged(t, p.set.main, after.events, me, "svc", want)
				}}},

		{name: "free, with a lock-delay: the grant carries it", state: free(), call: delaying.call, want: granted("acquired",
			func() rowWant {
				w := grantTo(me, "acquired", time.Minute, keptToken)
				w.prevOwner, w.lockDelay = other, 20*time.Second
				return w
			}())},
		{name: "held by another, with a lock-delay: the record carries it", state: heldBy(other).queued(w1), call: delaying.call,
			want: func() want {
				w := queuedBehind(other, keptToken, untouched, w1)
				w.check = func(t *testing.T, result map[string]any, p prepared, after observed) {
					dbNowReturned(t, result, p, after)
					if got := after.waiters[1].LockDelay; got != 20*time.Second {
						t.Errorf("waiter record's lock_delay %v; want the 20s asked for", got)
					}
				}
				return w
			}()},
		{name: "expired, in its lock-delay, queued: not handed to the head", state: delayedAfterExpiry(other).queued(w1), call: mine.call,
			want: func() want {
				w := queuedBehind(other, keptToken, untouched, w1)
				w.refusal.delay = &span{time.Minute - time.Second - slack, time.Minute - time.Second}
				return w
			}()},
		{name: "force-released, in its lock-delay: queued at the head", state: delayedAfterRelease(other), call: mine.call,
			want: func() want {
				w := queuedBehind(other, keptToken, rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute,
					released: stillReleased, kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious,
					lockDelay: time.Minute, delayUntil: &span{30*time.Second - slack, 30 * time.Second},
					wakes: &span{time.Minute - slack, time.Minute}})
				w.refusal.delay = &span{30*time.Second - slack, 30 * time.Second}
				return w
			}()},
		{name: "expired, its lock-delay over, the caller at the head: handed to it with its lock-delay and claimed",
			state: delayOver(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second}), call: delaying.call, want: func() want {
				row := handedTo(me, "stolen", other)
				row.expires, row.renewals, row.lockDelay = about(time.Minute), 1, 20*time.Second
				w := granted("stolen", row, grantEvent("stolen", me, me, other))
				w.notify = []notifyWant{handOffTo(me, "stolen")}
				return w
			}()},

		{name: "held by another, with a wake channel: the record names it", state: heldBy(other).queued(w1),
			call: enqueueArgs{owner: me, channel: chanA}.call, want: func() want {
				w := queuedBehind(other, keptToken, untouched, w1)
				w.waiters[1].channel = chanA
				return w
			}()},
		{name: "held by another, the caller queued: its record taken over, naming the caller's wake channel now",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 5 * time.Second, channel: chanB}),
			call:  enqueueArgs{owner: me, channel: chanA}.call, want: want{outcome: "queued", owner: other, token: keptToken,
				waiterID: me, row: untouched, waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second, channel: chanA}},
				check: dbNowReturned, refusal: placeIn(1, 1)}},
		{name: "held by another, the caller queued for a permit: its record taken over, waiting for the key now",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 5 * time.Second, mode: "semaphore", permits: 2}),
			call:  mine.call, want: want{outcome: "queued", owner: other, token: keptToken, waiterID: me, row: untouched,
				waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second}}, refusal: placeIn(1, 1),
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					t.Helper()
					dbNowReturned(t, result, p, after)
					if got := after.waiters[0]; got.Mode != nil || got.Permits != nil {
						t.Errorf("record waits for %s of %s permits; want the key itself (NULL, NULL)", show(got.Mode), show(got.Permits))
					}
				}}},
		{name: "free, queued, the caller with a wake channel: the head's hand-off on its own channel",
			state: free().queuedOn(chanB, w1), call: enqueueArgs{owner: me, channel: chanA}.call, want: func() want {
				w := queuedBehind(w1, drawnToken, handedTo(w1, "acquired", other))
				w.waiters[0].channel = chanA
				// The caller queues after the hand-off: its answer, not a
				// NOTIFY, tells it of the new lease.
				w.notify = []notifyWant{handOffTo(w1, "acquired").on(chanB)}
				return w
			}()},

		{name: "wake channel in upper case, queued", state: heldBy(other), call: enqueueArgs{owner: me, channel: "Distributed_lock_w_1"}.call, want: want{err: "23514"}},
		{name: "wake channel of 64 bytes, free: refused, not granted", state: free(), call: enqueueArgs{owner: me, channel: strings.Repeat("w", 64)}.call, want: want{err: "23514"}},
		{name: "wake channel not an identifier, no row", state: noRow(), call: enqueueArgs{owner: me, channel: "wake; up"}.call, want: want{err: "23514"}},
		{name: "lock-delay over a minute", state: heldBy(other), call: enqueueArgs{owner: me, lockDelay: 2 * time.Minute}.call, want: want{err: "23514"}},
		{name: "key of 256 bytes", key: keyOf(strings.Repeat("k", 256)), state: noRow(), call: mine.call, want: want{err: "23514"}},
		{name: "owner of 256 bytes, queued", state: heldBy(other), call: enqueueArgs{owner: strings.Repeat("o", 256)}.call, want: want{err: "23514"}},
		{name: "the reserved owner, free", state: free(), call: enqueueArgs{owner: "*"}.call, want: want{err: "23514"}},
		{name: "the reserved owner, queued", state: heldBy(other), call: enqueueArgs{owner: "*"}.call, want: want{err: "23514"}},
		{name: "negative TTL, queued", state: heldBy(other), call: enqueueArgs{owner: me, ttl: -time.Microsecond}.call, want: want{err: "23514"}},
		{name: "metadata an array, queued", state: heldBy(other), call: enqueueArgs{owner: me, metadata: "[1]"}.call, want: want{err: "23514"}},
		{name: "negative TTL, free", state: free(), call: enqueueArgs{owner: me, ttl: -time.Microsecond}.call, want: want{err: "23514"}},
		{name: "TTL over a year, queued", state: heldBy(other), call: enqueueArgs{owner: me, ttl: aYear + time.Microsecond}.call, want: want{err: "23514"}},
		{name: "claim window over a year, queued", state: heldBy(other), call: enqueueArgs{owner: me, claim: aYear + time.Microsecond}.call, want: want{err: "23514"}},
		{name: "record seen for over a year, queued", state: heldBy(other), call: enqueueArgs{owner: me, seen: aYear + time.Microsecond}.call, want: want{err: "23514"}},
		{name: "actor of 256 bytes, queued", state: heldBy(other), call: enqueueArgs{owner: me, actor: strings.Repeat("a", 256)}.call, want: want{err: "23514"}},
		{name: "metadata over 8 KiB, queued", state: heldBy(other), call: enqueueArgs{owner: me, metadata: overSizedJSON}.call, want: want{err: "23514"}},
	})
}

// dbNowReturned: db_now is the database's clock as the call returned.
func dbNowReturned(t *testing.T, result map[string]any, _ prepared, _ observed) {
	t.Helper()
	now, ok := result["db_now"].(time.Time)
	if !ok || now.IsZero() {
		t.Errorf("db_now %v; want the database's clock", result["db_now"])
	}
}
