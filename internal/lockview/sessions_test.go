package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// ReadSessions lists every session oldest first: a live one with the
// leases bound to it that still run, its host, pid and metadata, and one
// that lapsed (no leases, nothing left) until prune deletes it.
func TestReadSessions(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Metadata: map[string]any{"job": "nightly"}})
	s, err := lk.OpenSession(ctx, pool, "runner")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "runner"})
	if err != nil {
		t.Fatal(err)
	}
	keep := s.Keepalive(ctx, leases...)
	defer keep.Stop()
	lapsed, err := store.OpenSession(ctx, pool, store.SessionParams{Owner: "gone", TTL: time.Millisecond, Host: "h2", PID: 7})
	if err != nil {
		t.Fatal(err)
	}
	testdb.WaitUntilPast(t, pool, lapsed.ExpiresAt)

	var got []lockview.Session
	testdb.Eventually(t, 10*time.Second, "both leases bound", func() bool {
		got, err = lockview.ReadSessions(ctx, pool)
		return err == nil && len(got) == 2 && got[0].Leases == 2
	})
	live, old := got[0], got[1]
	if live.ID != s.ID() || live.Owner != "runner" || live.Host == "" || live.PID == 0 ||
		live.Metadata["job"] != "nightly" || live.TTL != time.Minute || live.State() != lockview.SessionLive ||
		live.Remaining <= 30*time.Second || live.Remaining > time.Minute {
		t.Errorf("live session %+v", live)
	}
	if live.StateAfter(2*time.Minute) != lockview.SessionLapsed {
		t.Errorf("live session two minutes on: %s; want lapsed", live.StateAfter(2*time.Minute))
	}
	if old.ID != lapsed.ID || old.Host != "h2" || old.PID != 7 || old.Leases != 0 || old.Remaining != 0 ||
		old.State() != lockview.SessionLapsed {
		t.Errorf("lapsed session %+v", old)
	}
}
