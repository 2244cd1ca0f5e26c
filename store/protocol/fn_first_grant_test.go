package protocol_test

import (
	"testing"
	"time"
)

// firstGrantArgs are distributed_lock_first_grant's arguments but the key.
type firstGrantArgs struct {
	metadata  string
	logGrants bool
}

func (a firstGrantArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_first_grant(key => $1, owner => $2, ttl_us => $3,
		lease_metadata => $4::jsonb, log_grants => $5)`,
		[]any{key, me, time.Minute.Microseconds(), null(a.metadata), a.logGrants}
}

// logged: the result's logged column (whether the caller must log the
// grant) is v; first_grant writes no event itself.
func logged(v any) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if !sameJSON(result["logged"], v) || result["previous_owner"] != nil || result["previous_token"] != nil {
			t.Errorf("logged %v, previous %v/%v; want %v, NULL/NULL", result["logged"], result["previous_owner"], result["previous_token"], v)
		}
	}
}

// A key's first grant inserts its row; when another transaction's first
// grant has inserted it, every column is NULL and nothing is written.
func TestFirstGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_first_grant")
	inserted := grantTo(me, "acquired", time.Minute, noToken)
	withMetadata := inserted
	withMetadata.metadata = `{"pid": 42}`
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: firstGrantArgs{}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: inserted, check: logged(false)}},
		{name: "no row, logged: the caller logs", state: noRow(), call: firstGrantArgs{metadata: `{"pid": 42}`, logGrants: true}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: withMetadata, check: logged(true)}},
		{name: "a row already: another first grant won", state: heldBy(other), call: firstGrantArgs{}.call, want: want{
			nullKey: true, row: untouched, check: logged(nil)}},
		{name: "metadata an array", state: noRow(), call: firstGrantArgs{metadata: `[1]`}.call, want: want{err: "23514"}},
	})
}
