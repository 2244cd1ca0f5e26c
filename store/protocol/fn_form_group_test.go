package protocol_test

import (
	"testing"
	"time"
)

// formGroupArgs are distributed_lock_form_group's arguments but the row
// (the key's, as prepared) and the time; permits 0 is NULL (shared).
type formGroupArgs struct {
	mode    string
	permits int
	actor   string
}

func (a formGroupArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_form_group(r => l, mode => $2, n => $3, ts => clock_timestamp(),
		ttl_us => $4, actor => $5, actor_role => session_user) AS result FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0`,
		[]any{key, a.mode, nonZero(a.permits), time.Minute.Microseconds(), a.actor}
}

// A group's row is formed from a row no lease holds; whether that ended a
// lease that ran out unreleased is the first holder's steal.
func TestFormGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_form_group")
	shared := formGroupArgs{mode: "shared", actor: "svc"}
	semaphore := func(n int) formGroupArgs { return formGroupArgs{mode: "semaphore", permits: n, actor: "svc"} }
	permitsChanged := func(from, to int) []eventWant {
		return []eventWant{{kind: "permits_changed", actor: "svc", detail: map[string]any{"permits": to, "previous_permits": from}}}
	}
	f.run(t, []fnCase{
		{name: "free: formed", state: free(), call: shared.call,
			want: want{value: false, row: formed("shared", 0, "acquired", other, keptToken)}},
		{name: "an exclusive lease ran out: formed over it", state: lapsed(other), call: semaphore(2).call,
			want: want{value: true, row: formed("semaphore", 2, "stolen", other, keptToken)}},
		{name: "a semaphore's group ended, other permits: logged", state: groupEnded(2), call: semaphore(3).call,
			want: want{value: false, row: formed("semaphore", 3, "acquired", groupOwner, keptToken), events: permitsChanged(2, 3)}},
		{name: "a semaphore's group ended, the same permits", state: groupEnded(2), call: semaphore(2).call,
			want: want{value: false, row: formed("semaphore", 2, "acquired", groupOwner, keptToken)}},
		{name: "a semaphore's group ended, taken shared: no permits to change", state: groupEnded(2), call: shared.call,
			want: want{value: false, row: formed("shared", 0, "acquired", groupOwner, keptToken)}},
		{name: "a shared group ended, taken as a semaphore", state: groupEnded(0), call: semaphore(2).call,
			want: want{value: false, row: formed("semaphore", 2, "acquired", groupOwner, keptToken)}},
		{name: "a group whose holders lapsed, re-formed with other permits", state: semaphoreOf(2).holding(lapsedSlot(other)),
			call: semaphore(4).call, want: want{value: true, row: formed("semaphore", 4, "acquired", groupOwner, keptToken),
				events: permitsChanged(2, 4)}},
		{name: "1001 permits", state: free(), call: semaphore(1001).call, want: want{err: "23514"}},
	})
}
