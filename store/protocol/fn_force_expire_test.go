package protocol_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// forceArgs are the arguments of distributed_lock_force_expire and
// distributed_lock_force_release but the key and token.
type forceArgs struct {
	fn     string
	token  tok
	actor  string
	reason string
}

func (a forceArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM ` + a.fn + `(key => $1, token => $2, event_actor => $3, reason => $4)`,
		[]any{key, tokenArg(p, a.token), null(a.actor), null(a.reason)}
}

// The operator in the tests is the role that migrated, whose name
// testdb's server gives it.
func sessionUser(t *testing.T, f *fixture) string {
	t.Helper()
	var u string
	if err := f.db.QueryRow(t.Context(), `SELECT session_user`).Scan(&u); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestForceExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_force_expire")
	op := forceArgs{fn: "distributed_lock_force_expire", token: keptToken, actor: "alice", reason: "stuck job"}
	anonymous := forceArgs{fn: "distributed_lock_force_expire", token: keptToken}
	ended := func(row rowWant, actor string, detail map[string]any) want {
		return want{outcome: "force_expired", owner: other, token: keptToken, row: row,
			events: []eventWant{{kind: "force_expired", owner: other, token: keptToken, actor: actor, detail: detail}}}
	}
	endedNow := rowWant{owner: other, token: keptToken, expires: justNow, ttl: time.Minute,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	keptEnd := endedNow
	keptEnd.expires, keptEnd.keptExpiry = span{}, true
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: op.call, want: notHeld},
		{name: "free", state: free(), call: op.call, want: notHeld},
		{name: "held", state: heldBy(other), call: op.call, want: ended(endedNow, "alice", map[string]any{"reason": "stuck job"})},
		{name: "held, no actor or reason: the session's role", state: heldBy(other), call: anonymous.call,
			want: ended(endedNow, sessionUser(t, f), map[string]any{})},
		{name: "held, an older token", state: heldBy(other), call: forceArgs{fn: op.fn, token: keptPrevious}.call, want: notHeld},
		{name: "expired: its end stays", state: lapsed(other), call: op.call, want: ended(keptEnd, "alice", map[string]any{"reason": "stuck job"})},
		{name: "queued: a wake-up, no hand-off", state: heldBy(other).queued(w1), call: op.call, want: func() want {
			row := endedNow
			row.wakes = &span{0, time.Minute}
			w := ended(row, "alice", map[string]any{"reason": "stuck job"})
			w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
			return w
		}()},
		{name: "queued on wake channels: each waiting process woken once", state: heldBy(other).queuedOn(chanB, w1).queuedOn(chanA, w2).queuedOn(chanB, me),
			call: op.call, want: func() want {
				row := endedNow
				row.wakes = &span{0, time.Minute}
				w := ended(row, "alice", map[string]any{"reason": "stuck job"})
				w.waiters = []waiterWant{{owner: w1, channel: chanB}, {owner: w2, channel: chanA}, {owner: me, channel: chanB}}
				w.notify = []notifyWant{wakeUp.on(chanA), wakeUp.on(chanB)}
				return w
			}()},
		{name: "held with a lock-delay: the delay starts now, the event says until when", state: heldWithDelay(other), call: op.call,
			want: func() want {
				row := endedNow
				row.lockDelay = time.Minute
				return ended(row, "alice", map[string]any{"reason": "stuck job", "delay_until": anyValue})
			}()},
		{name: "held with a lock-delay, queued: a wake-up, no hand-off", state: heldWithDelay(other).queued(w1), call: op.call,
			want: func() want {
				row := endedNow
				row.lockDelay, row.wakes = time.Minute, &span{0, time.Minute}
				w := ended(row, "alice", map[string]any{"reason": "stuck job", "delay_until": anyValue})
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				w.check = delayedFor(time.Minute)
				return w
			}()},
		{name: "one holder, its token: its lease ends now", state: sharedBy(other, w1), call: forceArgs{fn: op.fn, token: slotTok(1), actor: "alice", reason: "stuck job"}.call,
			want: want{outcome: "force_expired", owner: other, token: slotTok(1), row: untouched,
				slots:  []slotWant{slotExpiredNow(1, other), asPrepared},
				events: []eventWant{forcedEvent("force_expired", other, 1)}, check: expiresIn(justNow)}},
		{name: "every holder, the group's token: the group ends", state: sharedBy(other, w1).queued(w2), call: op.call,
			want: func() want {
				row := handedFromGroup(w2, 0)
				return want{outcome: "force_expired", owner: groupOwner, token: keptToken, row: row,
					slots:  []slotWant{slotExpiredAndEndedNow(1, other), slotExpiredAndEndedNow(2, w1)},
					events: []eventWant{forcedEvent("force_expired", other, 1), forcedEvent("force_expired", w1, 2)},
					notify: []notifyWant{handOffTo(w2, "acquired")}, check: expiresIn(justNow)}
			}()},
		{name: "a holder's lapsed slot: not held", state: sharedBy(other).holding(lapsedSlot(w1)),
			call: forceArgs{fn: op.fn, token: slotTok(2), actor: "alice"}.call, want: notHeld},
		{name: "actor of 256 bytes", state: heldBy(other), call: forceArgs{fn: op.fn, token: keptToken, actor: strings.Repeat("a", 256)}.call,
			want: want{err: "23514"}},
		{name: "reason over 8 KiB", state: heldBy(other), call: forceArgs{fn: op.fn, token: keptToken, reason: strings.Repeat("r", 8200)}.call,
			want: want{err: "23514"}},
	})
}

// delayedFor: the call's event says the key's lock-delay ends d after the
// lease did (the row's end).
func delayedFor(d time.Duration) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, _ map[string]any, _ prepared, after observed) {
		t.Helper()
		last := after.events[len(after.events)-1]
		until, err := time.Parse(time.RFC3339Nano, fmt.Sprint(last.Detail["delay_until"]))
		ended := after.row.ExpiresAt
		if after.row.ReleasedAt != nil {
			ended = *after.row.ReleasedAt
		}
		if err != nil || !until.Equal(ended.Add(d)) {
			t.Errorf("event detail delay_until %v (%v); want %v", last.Detail["delay_until"], err, ended.Add(d))
		}
	}
}
