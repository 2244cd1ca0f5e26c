package protocol_test

import (
	"testing"
	"time"
)

func makeRowCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_make_row(key => $1, s => 0, ts => clock_timestamp()) AS result`, []any{key}
}

// A lease row is made to be granted: owner '*', released as it is made,
// no token yet; a row already there is left alone.
func TestMakeRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_make_row")
	made := rowWant{owner: groupOwner, token: noneYet, expires: justNow, ttl: time.Second, released: releasedNow,
		kind: "acquired"}
	f.run(t, []fnCase{
		{name: "no row: made", state: noRow(), call: makeRowCall, want: want{value: true, row: made}},
		{name: "a row: left alone", state: heldBy(other), call: makeRowCall, want: want{value: false, row: untouched}},
	})
}
