package protocol_test

import (
	"testing"
	"time"
)

// acquireAllArgs call distributed_lock_acquire_all for owner on the case's
// key set (the case's key first; the function sorts them) and read the
// row of the case's key, or the one row of a refusal.
type acquireAllArgs struct {
	owner     string
	logGrants bool
	keys      func(key string) []string // nil: the case's set
	// mode and permits: the lease asked for on the case's key (the others
	// exclusive); "": every key exclusive (modes NULL).
	mode    string
	permits int
	// modes, when set, are the modes array as given, whatever the keys.
	modes []any
}

func (a acquireAllArgs) call(key string, p prepared) (string, []any) {
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
	if a.modes != nil {
		modes = a.modes
	}
	return `SELECT a.* FROM distributed_lock_acquire_all(keys => $1, owner => $2, ttl_us => $3,
		lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => $4,
		modes => $6::text[], permits => $7::integer[]) a
		ORDER BY a.lock_key = $5 DESC LIMIT 1`,
		[]any{keys, a.owner, time.Minute.Microseconds(), a.logGrants, key, modes, permits}
}

func TestAcquireAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_acquire_all")
	mine := acquireAllArgs{owner: me}
	granted := func(kind string, row rowWant, others func(t *testing.T, p prepared), events ...eventWant) want {
		token := drawnToken
		if kind == "renewed" {
			token = keptToken
		}
		return want{outcome: kind, owner: me, token: token, remaining: &span{}, row: row, events: events,
			check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { others(t, p) }}
	}
	bHeldByMe := func(t *testing.T, p prepared) { otherIs(t, p, "b", me, true) }
	refused := func(outcome, owner string, left span, others func(t *testing.T, p prepared)) want {
		return want{outcome: outcome, owner: owner, token: keptToken, remaining: &left, row: untouched, refusal: queueOf(0),
			check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { others(t, p) }}
	}
	// Refused on the case's key after a key sorted before it was granted
	// (or created): that grant is undone.
	firstUndone := func(owner string) func(t *testing.T, p prepared) {
		return func(t *testing.T, p prepared) {
			t.Helper()
			o := p.other(t, "a")
			if len(o.events) != 0 {
				t.Errorf("events on %s after the refusal: %v", p.set.keys["a"], o.events)
			}
			otherIs(t, p, "a", owner, false)
		}
	}
	noRowFirst := also{name: "a", first: true, state: noRow()}
	freeFirst := also{name: "a", first: true, state: free()}
	f.run(t, []fnCase{
		{name: "no rows: every key acquired", state: noRow().and(also{name: "b", state: noRow()}), call: mine.call,
			want: granted("acquired", grantTo(me, "acquired", time.Minute, noToken), bHeldByMe)},
		{name: "free, logged", state: free().and(also{name: "b", state: free()}), call: acquireAllArgs{owner: me, logGrants: true}.call,
			want: granted("acquired", func() rowWant { w := grantTo(me, "acquired", time.Minute, keptToken); w.prevOwner = other; return w }(),
				bHeldByMe, eventWant{kind: "acquired", owner: me, token: drawnToken, actor: me, prevOwner: other, prevToken: keptToken, detail: map[string]any{}})},
		{name: "held by the caller, the other free: renewed", state: heldBy(me).and(also{name: "b", state: free()}), call: mine.call,
			want: granted("renewed", rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}, bHeldByMe)},
		{name: "expired, another's: stolen", state: lapsed(other).and(also{name: "b", state: noRow()}), call: mine.call,
			want: granted("stolen", func() rowWant { w := grantTo(me, "stolen", time.Minute, keptToken); w.prevOwner = other; return w }(),
				bHeldByMe, eventWant{kind: "stolen", owner: me, token: drawnToken, actor: me, prevOwner: other, prevToken: keptToken, detail: map[string]any{}})},
		{name: "held by another: the key created before it is not kept", state: heldBy(other).and(noRowFirst), call: mine.call,
			want: refused("held", other, span{50*time.Second - slack, 50 * time.Second}, firstUndone(""))},
		{name: "held by another: the free key before it is left free", state: heldBy(other).and(freeFirst), call: mine.call,
			want: refused("held", other, span{50*time.Second - slack, 50 * time.Second}, firstUndone(other))},
		{name: "free, queued: not taken", state: free().queued(w1).and(freeFirst), call: mine.call, want: func() want {
			w := refused("queued", other, about(30*time.Second), firstUndone(other))
			w.waiters, w.refusal = waiters(w1), queueOf(1)
			return w
		}()},
		{name: "expired, in its lock-delay: not taken", state: delayedAfterExpiry(other).and(freeFirst), call: mine.call,
			want: func() want {
				w := refused("delayed", other, span{-time.Second - slack, -time.Second}, firstUndone(other))
				w.refusal = &refusalWant{delay: &span{time.Minute - time.Second - slack, time.Minute - time.Second}}
				return w
			}()},
		{name: "free, the row being changed", state: free().and(freeFirst), call: mine.call, during: whileRowLocked,
			want: refused("free", other, span{0, 30 * time.Second}, firstUndone(other))},
		{name: "expired, the row being changed", state: lapsed(other).and(freeFirst), call: mine.call, during: whileRowLocked,
			want: refused("expired", other, ranOut, firstUndone(other))},
		{name: "no row, a first grant by another committing", state: noRow(), call: mine.call, during: whileFirstGrantCommits, want: want{
			outcome: "busy", row: rowWant{owner: other, token: drawnToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: drawnToken}}},

		{name: "a key named twice", state: free(), call: acquireAllArgs{owner: me, keys: func(key string) []string {
			return []string{key, key + "/b", key}
		}}.call, want: want{err: "22023"}},
		{name: "no keys", state: free(), call: acquireAllArgs{owner: me, keys: func(string) []string { return []string{} }}.call,
			want: want{err: "22023"}},
		{name: "129 keys", state: free(), call: acquireAllArgs{owner: me, keys: manyKeys(129)}.call, want: want{err: "22023"}},
		{name: "the reserved owner, every key free: refused, nothing granted", state: free().and(also{name: "b", state: free()}),
			call: acquireAllArgs{owner: "*"}.call, want: want{err: "23514"}},

		// A set may mix modes: read one key shared, write another.
		{name: "mixed: the key shared, free; the other exclusive, free: both granted", state: free().and(also{name: "b", state: free()}),
			call: acquireAllArgs{owner: me, mode: "shared"}.call, want: want{outcome: "acquired", owner: me, token: drawnToken,
				remaining: &span{}, row: formed("shared", 0, "acquired", other, keptToken),
				slots: []slotWant{slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { bHeldByMe(t, p) }}},
		{name: "mixed: the key a running shared group, joined; the other exclusive", state: sharedBy(other).and(also{name: "b", state: free()}),
			call: acquireAllArgs{owner: me, mode: "shared"}.call, want: want{outcome: "acquired", owner: me, token: drawnToken,
				remaining: &span{}, row: untouched, slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { bHeldByMe(t, p) }}},
		{name: "mixed: a permit of a semaphore with room", state: semaphoreOf(2, other).and(also{name: "b", state: free()}),
			call: acquireAllArgs{owner: me, mode: "semaphore", permits: 2}.call, want: want{outcome: "acquired", owner: me,
				token: drawnToken, remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { bHeldByMe(t, p) }}},
		{name: "mixed: the key held exclusively, refused: the exclusive key before it not kept",
			state: heldBy(other).and(freeFirst), call: acquireAllArgs{owner: me, mode: "shared"}.call,
			want: refused("held", other, span{50*time.Second - slack, 50 * time.Second}, firstUndone(other))},
		{name: "mixed: a full semaphore refuses the set: nothing kept", state: semaphoreOf(1, other).and(freeFirst),
			call: acquireAllArgs{owner: me, mode: "semaphore", permits: 1}.call, want: want{outcome: "held", owner: other,
				token: slotTok(1), row: untouched, remaining: &span{50*time.Second - slack, 50 * time.Second},
				refusal: queueOf(0), check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { firstUndone(other)(t, p) }}},
		{name: "mixed: a shared key of a running semaphore: conflict, nothing kept", state: semaphoreOf(2, other).and(freeFirst),
			call: acquireAllArgs{owner: me, mode: "shared"}.call, want: want{outcome: "conflict", owner: groupOwner,
				token: keptToken, row: untouched, refusal: queueOf(0),
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { firstUndone(other)(t, p) }}},
		{name: "mixed: a mode not known", state: free(), call: acquireAllArgs{owner: me, mode: "upgrade"}.call,
			want: want{err: "23514"}},
		{name: "mixed: permits without a semaphore", state: free(), call: acquireAllArgs{owner: me, mode: "shared", permits: 2}.call,
			want: want{err: "22023"}},
		{name: "mixed: a semaphore without permits", state: free(), call: acquireAllArgs{owner: me, mode: "semaphore"}.call,
			want: want{err: "22023"}},
		{name: "mixed: modes not one per key", state: free().and(also{name: "b", state: free()}),
			call: acquireAllArgs{owner: me, modes: []any{"shared"}}.call, want: want{err: "22023"}},
	})
}
