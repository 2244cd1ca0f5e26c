package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A renewal that waited for a revoke's row lock is bounded by the revoke's
// deadline and tells its holder of it: it reads the revoke after the lock,
// not with the snapshot its statement began with, which the revoke's
// commit postdates (read there, the lease was renewed for its whole TTL,
// past the deadline).
func TestARenewalThatWaitedForARevokeKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var token int64
	if err := db.QueryRow(ctx, `SELECT fence_token FROM distributed_lock_acquire('k', 'o', 600000000)`).Scan(&token); err != nil {
		t.Fatal(err)
	}
	revoker, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer revoker.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := revoker.Exec(ctx, `SELECT distributed_lock_revoke('k', $1, 20000000)`, token); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	var pid int
	if err := holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	type renewal struct {
		left      time.Duration
		toldForce bool
		err       error
	}
	done := make(chan renewal, 1)
	go func() {
		var r renewal
		var forceAt *time.Time
		r.err = holder.QueryRow(ctx, `SELECT r.expires_at - distributed_lock_now(), r.force_at
			FROM distributed_lock_renew('k', 'o', $1, 600000000) r WHERE r.outcome = 'renewed'`, token).Scan(&r.left, &forceAt)
		r.toldForce = forceAt != nil
		done <- r
	}()
	testdb.Eventually(t, 10*time.Second, "the renewal waiting for the revoke's row lock", func() bool {
		var waiting bool
		err := db.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		return err == nil && waiting
	})
	if err := revoker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	switch {
	case r.err != nil:
		t.Fatal(r.err)
	case r.left > 20*time.Second:
		t.Errorf("renewed for %s past the revoke; want at most its 20s deadline", r.left)
	case !r.toldForce:
		t.Errorf("the renewal did not tell its holder of the revoke's deadline")
	}
}
