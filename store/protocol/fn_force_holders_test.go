package protocol_test

import (
	"testing"
	"time"
)

// forceHoldersArgs: the token the operator saw, and how ("expire" or
// "release").
type forceHoldersArgs struct {
	token tok
	how   string
}

func (a forceHoldersArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_force_holders(key => $1, token => $2, how => $3, event_actor => $4, reason => $5)`,
		[]any{key, tokenArg(p, a.token), a.how, "alice", "stuck job"}
}

// forcedEvent is the event of a force on the n-th holder, owner's.
func forcedEvent(kind, owner string, n int) eventWant {
	return eventWant{kind: kind, owner: owner, token: slotTok(n), actor: "alice",
		detail: map[string]any{"reason": "stuck job", "slot": n}}
}

// expiresIn checks the result's expires_at against the read after the call.
func expiresIn(s span) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		at, ok := result["expires_at"].(time.Time)
		if !ok || after.row == nil || !s.holds(at.Sub(after.row.ReadAt)) {
			t.Errorf("expires_at %v; want within [%v, %v] of the read", result["expires_at"], s.lo, s.hi)
		}
	}
}

// The operator's force on a holder answers as on an exclusive lease: the
// lease after the action (every holder's: the group's row).
func TestForceHolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_force_holders")
	f.run(t, []fnCase{
		{name: "expire one holder", state: sharedBy(other, w1), call: forceHoldersArgs{token: slotTok(1), how: "expire"}.call,
			want: want{outcome: "force_expired", owner: other, token: slotTok(1), row: untouched,
				slots: []slotWant{slotExpiredNow(1, other), asPrepared}, events: []eventWant{forcedEvent("force_expired", other, 1)},
				check: expiresIn(justNow)}},
		{name: "release one holder", state: sharedBy(other, w1), call: forceHoldersArgs{token: slotTok(2), how: "release"}.call,
			want: want{outcome: "force_released", owner: w1, token: slotTok(2), row: untouched,
				slots: []slotWant{asPrepared, slotReleasedNow(2, w1)}, events: []eventWant{forcedEvent("force_released", w1, 2)},
				check: expiresIn(about(50 * time.Second))}},
		{name: "expire every holder, the group's token: the group ends", state: sharedBy(other, w1),
			call: forceHoldersArgs{token: keptToken, how: "expire"}.call, want: want{
				outcome: "force_expired", owner: groupOwner, token: keptToken, row: settled(0),
				slots:  []slotWant{slotExpiredAndEndedNow(1, other), slotExpiredAndEndedNow(2, w1)},
				events: []eventWant{forcedEvent("force_expired", other, 1), forcedEvent("force_expired", w1, 2)},
				check:  expiresIn(justNow)}},
		{name: "release every permit, a writer queued: handed to it", state: semaphoreOf(2, other, w2).queued(w1),
			call: forceHoldersArgs{token: keptToken, how: "release"}.call, want: func() want {
				row := handedFromGroup(w1, 2)
				return want{outcome: "force_released", owner: groupOwner, token: keptToken, row: row,
					slots:  []slotWant{slotReleasedNow(1, other), slotReleasedNow(2, w2)},
					events: []eventWant{forcedEvent("force_released", other, 1), forcedEvent("force_released", w2, 2)},
					notify: []notifyWant{handOffTo(w1, "acquired")}}
			}()},
		{name: "the group's token, one holder: the group's row", state: sharedBy(other),
			call: forceHoldersArgs{token: keptToken, how: "release"}.call, want: want{
				outcome: "force_released", owner: groupOwner, token: keptToken, row: settled(0),
				slots: []slotWant{slotReleasedNow(1, other)}, events: []eventWant{forcedEvent("force_released", other, 1)}}},
		{name: "an older token", state: sharedBy(other), call: forceHoldersArgs{token: keptPrevious, how: "expire"}.call,
			want: want{outcome: "not_held", row: untouched}},
		{name: "the group's token, every holder lapsed: not held, nothing ended",
			state: sharedBy().holding(lapsedSlot(other)), call: forceHoldersArgs{token: keptToken, how: "release"}.call,
			want: want{outcome: "not_held", row: untouched}},
	})
}
