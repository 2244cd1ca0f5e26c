package protocol_test

import (
	"testing"
	"time"
)

// firstGrantArgs are distributed_lock_first_grant's arguments but the key.
type firstGrantArgs struct {
	metadata  string
	lockDelay time.Duration
	logGrants bool
}

func (a firstGrantArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_first_grant(key => $1, owner => $2, ttl_us => $3,
		lease_metadata => $4::jsonb, lock_delay_us => $5, event_actor => 'svc', event_detail => NULL,
		log_grants => $6)`,
		[]any{key, me, time.Minute.Microseconds(), null(a.metadata), a.lockDelay.Microseconds(), a.logGrants}
}

// A key's first grant inserts its row, and writes an event only with
// log_grants; when another transaction's first grant has inserted it, the
// answer is 'busy' and nothing is written.
func TestFirstGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_first_grant")
	inserted := grantTo(me, "acquired", time.Minute, noToken)
	withMetadata := inserted
	withMetadata.metadata = `{"pid": 42}`
	withDelay := inserted
	withDelay.lockDelay = 20 * time.Second
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: firstGrantArgs{}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: inserted}},
		{name: "no row, with metadata", state: noRow(), call: firstGrantArgs{metadata: `{"pid": 42}`}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: withMetadata}},
		{name: "no row, logged", state: noRow(), call: firstGrantArgs{logGrants: true}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: inserted,
			events: []eventWant{{kind: "acquired", owner: me, token: drawnToken, actor: "svc"}}}},
		{name: "a row already: another first grant won", state: heldBy(other), call: firstGrantArgs{}.call, want: want{
			outcome: "busy", row: untouched}},
		{name: "no row, with a lock-delay", state: noRow(), call: firstGrantArgs{lockDelay: 20 * time.Second}.call, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: withDelay}},
		{name: "lock-delay over a minute", state: noRow(), call: firstGrantArgs{lockDelay: 61 * time.Second}.call, want: want{err: "23514"}},
		{name: "metadata an array", state: noRow(), call: firstGrantArgs{metadata: `[1]`}.call, want: want{err: "23514"}},
	})
}
