package protocol_test

import (
	"testing"
	"time"
)

// capCall calls distributed_lock_revoke_cap on the prepared grant with an
// end ends from now, and reads the result as the time left from now.
func capCall(ends time.Duration) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		return `SELECT extract(epoch FROM distributed_lock_revoke_cap(key => $1, token => $2,
			ends_at => distributed_lock_now() + $3::bigint * interval '1 microsecond') - distributed_lock_now())::float8 AS result`,
			[]any{key, tokenArg(p, keptToken), ends.Microseconds()}
	}
}

// leftAbout: the call answers about d from now.
func leftAbout(d time.Duration, row rowWant) want {
	w := want{row: row}
	w.check = func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		left, ok := result["result"].(float64)
		if !ok || !about(d).holds(time.Duration(left*float64(time.Second))) {
			t.Errorf("revoke cap %v s from now; want about %s", result["result"], d)
		}
	}
	return w
}

// The cap: the end asked for, or a revoke's earlier deadline, to which the
// row's expiry moves.
func TestRevokeCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_revoke_cap")
	capped := rowWant{owner: other, token: keptToken, expires: about(10 * time.Second), ttl: time.Minute,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	f.run(t, []fnCase{
		{name: "no revoke: the end asked for", state: heldBy(other), call: capCall(time.Minute), want: leftAbout(time.Minute, untouched)},
		{name: "a revoke without a deadline", state: heldBy(other).revoked(revokeRow{reason: "drain"}), call: capCall(time.Minute),
			want: leftAbout(time.Minute, untouched)},
		{name: "a revoke of an older grant", state: heldBy(other).revoked(revokeRow{token: keptPrevious, forceIn: deadlineIn(10 * time.Second)}),
			call: capCall(time.Minute), want: leftAbout(time.Minute, untouched)},
		{name: "a deadline after the end", state: heldBy(other).revoked(revokeRow{forceIn: deadlineIn(time.Hour)}),
			call: capCall(time.Minute), want: leftAbout(time.Minute, untouched)},
		{name: "a deadline before the end: the deadline, and the row ends then", state: heldBy(other).revoked(revokeRow{forceIn: deadlineIn(10 * time.Second)}),
			call: capCall(time.Minute), want: leftAbout(10*time.Second, capped)},
	})
}
