package protocol_test

import (
	"testing"
	"time"
)

func createFreeCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_create_free(key => $1, owner => $2, ttl_us => $3)`,
		[]any{key, me, time.Minute.Microseconds()}
}

// created is a free row created for owner me's waiting set: its own token,
// released as it was created.
var created = rowWant{owner: me, token: drawnToken, expires: justNow, ttl: time.Minute, released: releasedNow, kind: "acquired"}

func TestCreateFree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_create_free")
	f.run(t, []fnCase{
		{name: "no row: a free one", state: noRow(), call: createFreeCall, want: want{row: created}},
		{name: "a row: left alone", state: heldBy(other), call: createFreeCall, want: want{row: untouched}},
	})
}
