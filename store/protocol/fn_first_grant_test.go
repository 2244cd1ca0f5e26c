package protocol_test

import (
	"testing"
	"time"
)

// firstGrantArgs are distributed_lock_first_grant's arguments but the key.
type firstGrantArgs struct {
	metadata string
}

func (a firstGrantArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_first_grant(key => $1, owner => $2, ttl_us => $3,
		lease_metadata => $4::jsonb)`,
		[]any{key, me, time.Minute.Microseconds(), null(a.metadata)}
}

// A key's first grant inserts its row, and writes no event (acquire logs
// it); when another transaction's first grant has inserted it, every
// column is NULL and nothing is written.
func TestFirstGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_first_grant")
	inserted := grantTo(me, "acquired", time.Minute, noToken)
	withMetadata := inserted
	withMetadata.metadata = `{"pid": 42}`
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: firstGrantArgs{}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: inserted}},
		{name: "no row, with metadata", state: noRow(), call: firstGrantArgs{metadata: `{"pid": 42}`}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: withMetadata}},
		{name: "a row already: another first grant won", state: heldBy(other), call: firstGrantArgs{}.call, want: want{
			nullKey: true, row: untouched}},
		{name: "metadata an array", state: noRow(), call: firstGrantArgs{metadata: `[1]`}.call, want: want{err: "23514"}},
	})
}
