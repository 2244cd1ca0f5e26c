package protocol_test

import (
	"context"
	"testing"
)

// The timeline is the first eight hex digits of the name of the WAL file
// being written: the server's, read independently here.
func TestTimeline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_timeline")
	var want, got int64
	ctx := context.Background()
	if err := f.db.QueryRow(ctx, `SELECT timeline_id FROM pg_control_checkpoint()`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if err := f.db.QueryRow(ctx, `SELECT distributed_lock_timeline()`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want || got < 1 {
		t.Errorf("timeline %d; want the server's, %d", got, want)
	}
}
