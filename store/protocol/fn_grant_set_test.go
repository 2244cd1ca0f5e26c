package protocol_test

import (
	"testing"
	"time"
)

// grantSetCall grants me what it can of the case's key set (the case's
// key and its others, sorted as the callers sort them) and returns the
// grant kind of the case's key, or "not granted".
func grantSetCall(key string, p prepared) (string, []any) {
	keys := []string{key}
	if p.set != nil {
		keys = p.all()
	}
	return `SELECT coalesce((SELECT g.grant_kind::text FROM unnest(distributed_lock_grant_set(
		ks => ARRAY(SELECT k FROM unnest($1::text[]) k ORDER BY k), owner => $2, ttl_us => $3,
		lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => false,
		lock_delay_us => 0)) g WHERE g.lock_key = $4), 'not granted') AS result`,
		[]any{keys, me, time.Minute.Microseconds(), key}
}

func TestGrantSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_set")
	bFree := also{name: "b", state: free()}
	bHeldByMe := func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }
	grantedFrom := func(kind string) rowWant {
		w := grantTo(me, kind, time.Minute, keptToken)
		w.prevOwner = other
		return w
	}
	notGranted := want{value: "not granted", row: untouched, check: bHeldByMe}
	f.run(t, []fnCase{
		{name: "free, the other free: both granted in one statement", state: free().and(bFree), call: grantSetCall,
			want: want{value: "acquired", row: grantedFrom("acquired"), check: bHeldByMe}},
		{name: "expired, another's: stolen, and logged", state: lapsed(other).and(bFree), call: grantSetCall,
			want: want{value: "stolen", row: grantedFrom("stolen"), check: bHeldByMe, events: []eventWant{{kind: "stolen",
				owner: me, token: drawnToken, actor: me, prevOwner: other, prevToken: keptToken, detail: map[string]any{}}}}},
		// What it cannot grant anew it leaves, and grants the rest: the
		// all-or-nothing is acquire_all's, which undoes a partial set.
		{name: "held by another: left, the other granted", state: heldBy(other).and(bFree), call: grantSetCall, want: notGranted},
		{name: "the caller's own lease: left (a renewal is acquire's)", state: heldBy(me).and(bFree), call: grantSetCall, want: notGranted},
		{name: "in its lock-delay: left", state: delayedAfterExpiry(other).and(bFree), call: grantSetCall, want: notGranted},
		{name: "free, promised to a waiter: left", state: free().queued(w1).and(bFree), call: grantSetCall,
			want: func() want { w := notGranted; w.waiters = waiters(w1); return w }()},
		{name: "a shared group's ended: granted, an exclusive lease now", state: groupEnded(0).and(bFree), call: grantSetCall,
			want: want{value: "acquired", row: func() rowWant { w := grantedFrom("acquired"); w.prevOwner = groupOwner; return w }(),
				check: bHeldByMe}},
		{name: "a running shared group: left", state: sharedBy(other).and(bFree), call: grantSetCall, want: notGranted},
		{name: "no row: left (a first grant is acquire's)", state: noRow().and(bFree), call: grantSetCall,
			want: want{value: "not granted", row: rowWant{absent: true}, check: bHeldByMe}},
		{name: "free, the row being changed: skipped", state: free().and(bFree), call: grantSetCall, during: whileRowLocked,
			want: notGranted},
	})
}
