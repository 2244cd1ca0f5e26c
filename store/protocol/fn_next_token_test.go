package protocol_test

import (
	"context"
	"testing"
)

// A token is drawn in the epoch, above every token before it: after moving
// the sequence when the epoch row is not current (the states of
// TestAdvanceEpoch).
func TestNextToken(t *testing.T) {
	t.Parallel()
	f := newIsolatedFixture(t, "distributed_lock_next_token")
	for _, c := range epochCases {
		t.Run(c.name, func(t *testing.T) {
			s := prepareEpoch(t, f, c.state)
			before := lastToken(t, f.db)
			var token int64
			if err := f.db.QueryRow(context.Background(), `SELECT distributed_lock_next_token()`).Scan(&token); err != nil {
				t.Fatal(err)
			}
			epoch := c.epoch(s.timeline)
			if token <= before || token>>epochShift != epoch || token != lastToken(t, f.db) {
				t.Errorf("token %d (epoch %d); want one above %d in epoch %d, the sequence's last", token, token>>epochShift, before, epoch)
			}
			if !c.moves && token != before+1 {
				t.Errorf("token %d; want the sequence's next, %d", token, before+1)
			}
			checkEpoch(t, f, s, epoch, c.base(s.timeline), token, true)
		})
	}
}
