package protocol_test

import (
	"context"
	"testing"
)

// A grant's token, drawn with the epoch row's timeline: nextval when that
// is the server's, else after moving the sequence into the epoch (the
// states of TestAdvanceEpoch whose row names another timeline).
func TestDrawToken(t *testing.T) {
	t.Parallel()
	f := newIsolatedFixture(t, "distributed_lock_draw_token")
	for _, c := range epochCases {
		if c.state.cluster == "other" {
			// The row names the server's timeline, so the draw is a plain
			// nextval: the cluster is compared only by advance_epoch,
			// which migrate runs.
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			s := prepareEpoch(t, f, c.state)
			before := lastToken(t, f.db)
			var token int64
			err := f.db.QueryRow(context.Background(),
				`SELECT distributed_lock_draw_token(epoch_timeline => e.timeline) FROM distributed_lock_epoch e`).Scan(&token)
			if err != nil {
				t.Fatal(err)
			}
			epoch := c.epoch(s.timeline)
			if token <= before || token>>epochShift != epoch || token != lastToken(t, f.db) {
				t.Errorf("token %d (epoch %d); want one above %d in epoch %d, the sequence's last", token, token>>epochShift, before, epoch)
			}
			if !c.moves && token != before+1 {
				t.Errorf("token %d; want nextval, %d", token, before+1)
			}
			checkEpoch(t, f, s, epoch, c.base(s.timeline), token, true)
		})
	}
}
