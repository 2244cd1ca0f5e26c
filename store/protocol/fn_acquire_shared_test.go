package protocol_test

import (
	"testing"
	"time"
)

// acquireSharedArgs are distributed_lock_acquire_shared's arguments but the
// key; permits nil is NULL (shared), and the other zero values the
// defaults.
type acquireSharedArgs struct {
	owner     string
	ttl       time.Duration
	permits   any
	metadata  string
	actor     string
	detail    string
	logGrants bool
}

func (a acquireSharedArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_acquire_shared(key => $1, owner => $2, ttl_us => $3, permits => $4,
		lease_metadata => $5::jsonb, event_actor => $6, event_detail => $7::jsonb, log_grants => $8)`,
		[]any{key, a.owner, a.ttl.Microseconds(), a.permits, null(a.metadata), null(a.actor), null(a.detail), a.logGrants}
}

// keyIs checks the columns acquire_shared adds to a lease's: the key's mode
// and permits (0: NULL; mode "": NULL), and how many leases hold it (-1:
// NULL, as on a grant).
func keyIs(mode string, permits, holders int) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		var wantMode, wantPermits, wantHolders any
		if mode != "" {
			wantMode = mode
		}
		if permits != 0 {
			wantPermits = permits
		}
		if holders >= 0 {
			wantHolders = holders
		}
		if !sameJSON(result["lock_mode"], wantMode) || !sameJSON(result["key_permits"], wantPermits) ||
			!sameJSON(result["holders"], wantHolders) {
			t.Errorf("lock_mode %v, key_permits %v, holders %v; want %v, %v, %v", result["lock_mode"],
				result["key_permits"], result["holders"], wantMode, wantPermits, wantHolders)
		}
	}
}

// formed is a group's row formed by the call over a row of from's whose
// token was fromToken: mode, permits (0: shared), its own drawn token.
func formed(mode string, permits int, kind, from string, fromToken tok) rowWant {
	return rowWant{owner: groupOwner, token: drawnToken, groupEnd: true, ttl: time.Minute, kind: kind,
		prevOwner: from, prevToken: fromToken, mode: mode, permits: permits}
}

// sharedGrantEvent is the event of a logged or stolen grant of slot n.
func sharedGrantEvent(kind, mode string, permits, slot int, extra map[string]any) eventWant {
	detail := map[string]any{"mode": mode, "slot": slot}
	if permits != 0 {
		detail["permits"] = permits
	}
	for k, v := range extra {
		detail[k] = v
	}
	return eventWant{kind: kind, owner: me, token: drawnToken, actor: me, detail: detail}
}

func TestAcquireShared(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_acquire_shared")
	shared := acquireSharedArgs{owner: me, ttl: time.Minute}
	permits := func(n int) acquireSharedArgs { a := shared; a.permits = n; return a }
	withTTL := func(a acquireSharedArgs, d time.Duration) acquireSharedArgs { a.ttl = d; return a }
	granted := func(kind string, row rowWant, slots []slotWant, check func(*testing.T, map[string]any, prepared, observed)) want {
		return want{outcome: kind, owner: me, token: drawnToken, remaining: &span{}, row: row, slots: slots, check: check}
	}
	// joined is a grant into the running group, in a slot after n kept ones.
	joined := func(mode string, permits, n int) want {
		return granted("acquired", untouched, append(slotsKept(n), slotGranted(me, "acquired", time.Minute)),
			keyIs(mode, permits, -1))
	}
	conflict := func(mode string, permits, holders int) want {
		return want{outcome: "conflict", owner: groupOwner, token: keptToken, row: untouched, refusal: queueOf(0),
			check: keyIs(mode, permits, holders)}
	}
	exclusiveHeld := func(owner string) want {
		return want{outcome: "held", owner: owner, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: untouched, refusal: queueOf(0), check: keyIs("exclusive", 0, 1)}
	}
	soonest := holderRow{owner: w1, expiresIn: 20 * time.Second}
	f.run(t, []fnCase{
		{name: "no row: the first holder forms a shared group (a row made for it, no lease before)", state: noRow(),
			call: shared.call, want: granted("acquired", formed("shared", 0, "acquired", "", noToken), []slotWant{slotGranted(me, "acquired", time.Minute)},
				keyIs("shared", 0, -1))},
		{name: "no row, as one of 3 permits: a semaphore", state: noRow(), call: permits(3).call, want: granted("acquired",
			formed("semaphore", 3, "acquired", "", noToken), []slotWant{slotGranted(me, "acquired", time.Minute)},
			keyIs("semaphore", 3, -1))},
		{name: "free: the group formed over it", state: free(), call: shared.call, want: granted("acquired",
			formed("shared", 0, "acquired", other, keptToken), []slotWant{slotGranted(me, "acquired", time.Minute)},
			keyIs("shared", 0, -1))},
		{name: "free, logged: the grant's event names mode and slot", state: free(),
			call: acquireSharedArgs{owner: me, ttl: time.Minute, permits: 2, actor: "svc", detail: `{"job": 7}`, logGrants: true}.call,
			want: func() want {
				w := granted("acquired", formed("semaphore", 2, "acquired", other, keptToken),
					[]slotWant{slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))
				e := sharedGrantEvent("acquired", "semaphore", 2, 1, map[string]any{"job": 7})
				e.actor = "svc"
				w.events = []eventWant{e}
				return w
			}()},
		{name: "free, metadata: the slot's", state: free(), call: acquireSharedArgs{owner: me, ttl: time.Minute, metadata: `{"pid": 42}`}.call,
			want: func() want {
				s := slotGranted(me, "acquired", time.Minute)
				s.metadata = `{"pid": 42}`
				return granted("acquired", formed("shared", 0, "acquired", other, keptToken), []slotWant{s}, keyIs("shared", 0, -1))
			}()},
		{name: "shared, running: joined in a new slot", state: sharedBy(other, w1), call: shared.call, want: joined("shared", 0, 2)},
		{name: "semaphore of 3, one held: joined", state: semaphoreOf(3, other), call: permits(3).call, want: joined("semaphore", 3, 1)},
		{name: "shared, the caller a holder: renewed, same token", state: sharedBy(other, me), call: withTTL(shared, 2*time.Minute).call,
			want: want{outcome: "renewed", owner: me, token: slotTok(2), remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, 2*time.Minute)}, check: keyIs("shared", 0, -1)}},
		{name: "semaphore full, the caller a holder: renewed", state: semaphoreOf(2, other, me), call: permits(2).call,
			want: want{outcome: "renewed", owner: me, token: slotTok(2), remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, time.Minute)}, check: keyIs("semaphore", 2, -1)}},
		{name: "semaphore full: held until the first permit ends", state: semaphoreOf(2, other).holding(soonest), call: permits(2).call,
			want: want{outcome: "held", owner: w1, token: slotTok(2), remaining: &span{20*time.Second - slack, 20 * time.Second},
				row: untouched, refusal: queueOf(0), check: keyIs("semaphore", 2, 2)}},
		{name: "semaphore, a released permit: its slot reused", state: semaphoreOf(2, other).holding(releasedSlot(w1)), call: permits(2).call,
			want: granted("acquired", untouched, []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))},
		{name: "semaphore, a released permit, logged: its slot reused, the grant's event", state: semaphoreOf(2, other).holding(releasedSlot(w1)),
			call: acquireSharedArgs{owner: me, ttl: time.Minute, permits: 2, logGrants: true}.call,
			want: func() want {
				w := granted("acquired", untouched, []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))
				w.events = []eventWant{sharedGrantEvent("acquired", "semaphore", 2, 2, nil)}
				return w
			}()},
		{name: "shared, a released slot, the reserved owner", state: sharedBy(other).holding(releasedSlot(w1)),
			call: acquireSharedArgs{owner: "*", ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "semaphore, a lapsed permit: taken over", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: permits(2).call,
			want: func() want {
				w := granted("stolen", untouched, []slotWant{asPrepared, slotGranted(me, "stolen", time.Minute)}, keyIs("semaphore", 2, -1))
				e := sharedGrantEvent("stolen", "semaphore", 2, 2, nil)
				e.prevOwner, e.prevToken = w1, slotTok(2)
				w.events = []eventWant{e}
				return w
			}()},
		{name: "shared, every holder lapsed: the group runs on, the first slot taken over", state: sharedBy().holding(lapsedSlot(other), lapsedSlot(w1)),
			call: shared.call, want: func() want {
				w := granted("stolen", untouched, []slotWant{slotGranted(me, "stolen", time.Minute), asPrepared}, keyIs("shared", 0, -1))
				e := sharedGrantEvent("stolen", "shared", 0, 1, nil)
				e.prevOwner, e.prevToken = other, slotTok(1)
				w.events = []eventWant{e}
				return w
			}()},
		{name: "semaphore, the caller's own permit lapsed: acquired anew, not stolen", state: semaphoreOf(2, other).holding(lapsedSlot(me)),
			call: permits(2).call,
			want: granted("acquired", untouched, []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))},
		{name: "semaphore of 2 held, 3 permits asked: conflict", state: semaphoreOf(2, other), call: permits(3).call,
			want: conflict("semaphore", 2, 1)},
		{name: "shared held, permits asked: conflict", state: sharedBy(other, w1), call: permits(2).call, want: conflict("shared", 0, 2)},
		{name: "semaphore held, shared asked: conflict", state: semaphoreOf(2, other), call: shared.call, want: conflict("semaphore", 2, 1)},
		{name: "a semaphore's group ended, re-formed with other permits: logged", state: groupEnded(2), call: permits(3).call,
			want: func() want {
				w := granted("acquired", formed("semaphore", 3, "acquired", groupOwner, keptToken),
					[]slotWant{slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 3, -1))
				w.events = []eventWant{{kind: "permits_changed", actor: me, detail: map[string]any{"permits": 3, "previous_permits": 2}}}
				return w
			}()},
		{name: "a semaphore's group ended, the same permits: not logged", state: groupEnded(2), call: permits(2).call,
			want: granted("acquired", formed("semaphore", 2, "acquired", groupOwner, keptToken),
				[]slotWant{slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))},
		{name: "a shared group ended, taken as a semaphore", state: groupEnded(0), call: permits(2).call,
			want: granted("acquired", formed("semaphore", 2, "acquired", groupOwner, keptToken),
				[]slotWant{slotGranted(me, "acquired", time.Minute)}, keyIs("semaphore", 2, -1))},
		{name: "a semaphore whose holders all lapsed, other permits: re-formed, the lapsed permit taken over",
			state: semaphoreOf(2).holding(lapsedSlot(other)), call: permits(3).call, want: func() want {
				w := granted("stolen", formed("semaphore", 3, "acquired", groupOwner, keptToken),
					[]slotWant{slotGranted(me, "stolen", time.Minute)}, keyIs("semaphore", 3, -1))
				e := sharedGrantEvent("stolen", "semaphore", 3, 1, nil)
				e.prevOwner, e.prevToken = other, slotTok(1)
				w.events = []eventWant{
					{kind: "permits_changed", actor: me, detail: map[string]any{"permits": 3, "previous_permits": 2}},
					e,
				}
				return w
			}()},
		{name: "held exclusively by another: held", state: heldBy(other), call: shared.call, want: exclusiveHeld(other)},
		{name: "held exclusively by the caller: held", state: heldBy(me), call: permits(2).call, want: exclusiveHeld(me)},
		{name: "an exclusive lease in its lock-delay: delayed", state: delayedAfterExpiry(other), call: shared.call, want: want{
			outcome: "delayed", owner: other, token: keptToken, remaining: &span{-time.Second - slack, -time.Second},
			row: untouched, refusal: queueOf(0), check: keyIs("exclusive", 0, 0)}},
		{name: "an exclusive lease ran out: stolen by the group's first holder", state: lapsed(other), call: shared.call,
			want: func() want {
				w := granted("stolen", formed("shared", 0, "stolen", other, keptToken),
					[]slotWant{slotGranted(me, "stolen", time.Minute)}, keyIs("shared", 0, -1))
				e := sharedGrantEvent("stolen", "shared", 0, 1, nil)
				e.prevOwner, e.prevToken = other, keptToken
				w.events = []eventWant{e}
				return w
			}()},
		{name: "the caller's own exclusive lease ran out: acquired, not stolen", state: lapsed(me), call: shared.call,
			want: granted("acquired", formed("shared", 0, "stolen", me, keptToken),
				[]slotWant{slotGranted(me, "acquired", time.Minute)}, keyIs("shared", 0, -1))},
		{name: "shared, a writer queued: readers do not overtake it", state: sharedBy(other).queued(w1), call: shared.call,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: queueOf(1), check: keyIs("shared", 0, 1)}},
		{name: "shared, a writer queued, the caller a holder: renewed all the same", state: sharedBy(me).queued(w1), call: shared.call,
			want: want{outcome: "renewed", owner: me, token: slotTok(1), remaining: &span{}, row: untouched, waiters: waiters(w1),
				slots: []slotWant{slotRenewed(1, me, time.Minute)}, check: keyIs("shared", 0, -1)}},
		{name: "shared held, a writer queued, permits asked: conflict", state: sharedBy(other).queued(w1), call: permits(2).call,
			want: func() want {
				w := conflict("shared", 0, 1)
				w.waiters, w.refusal = waiters(w1), queueOf(1)
				return w
			}()},
		{name: "a shared group whose holders lapsed, a writer queued, permits asked: queued",
			state: sharedBy().holding(lapsedSlot(other)).queued(w1), call: permits(2).call, want: want{
				outcome: "queued", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: queueOf(1), check: keyIs("shared", 0, 0)}},
		{name: "free, queued", state: free().queued(w1), call: shared.call, want: want{
			outcome: "queued", owner: other, token: keptToken, remaining: &span{0, 30 * time.Second}, row: untouched,
			waiters: waiters(w1), refusal: queueOf(1), check: keyIs("exclusive", 0, 0)}},
		{name: "a group ended, queued", state: groupEnded(2).queued(w1), call: permits(2).call, want: want{
			outcome: "queued", owner: groupOwner, token: keptToken, remaining: &span{-time.Second - slack, 0}, row: untouched,
			waiters: waiters(w1), refusal: queueOf(1), check: keyIs("semaphore", 2, 0)}},
		{name: "free, the row being changed: busy", state: free(), call: shared.call, during: whileRowLocked,
			want: want{outcome: "busy", row: untouched, check: keyIs("", 0, -1)}},

		{name: "zero TTL, no row", state: noRow(), call: withTTL(shared, 0).call, want: want{err: "23514"}},
		{name: "negative TTL, joining", state: sharedBy(other), call: withTTL(shared, -time.Second).call, want: want{err: "23514"}},
		{name: "zero permits", state: noRow(), call: permits(0).call, want: want{err: "23514"}},
		{name: "1001 permits", state: free(), call: permits(1001).call, want: want{err: "23514"}},
		{name: "1001 permits, a semaphore held", state: semaphoreOf(2, other), call: permits(1001).call, want: want{err: "23514"}},
		{name: "empty owner", state: free(), call: acquireSharedArgs{owner: "", ttl: time.Minute}.call, want: want{err: "23514"}},
		{name: "the reserved owner", state: sharedBy(other), call: acquireSharedArgs{owner: "*", ttl: time.Minute}.call, want: want{err: "23514"}},
	})
}
