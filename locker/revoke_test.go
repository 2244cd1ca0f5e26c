package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// An operator's revoke reaches a holder that keeps its lease alive at its
// next renewal, with the reason and who revoked (their database role and
// claimed actor); the lease is still held, and the holder ends cleanly by
// releasing it.
func TestKeepaliveLearnsRevokeAtNextRenewal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	passRenewInterval(t, clk, db, "k")
	select {
	case got := <-k.Revoked():
		t.Fatalf("revoke %+v before any revoke", got)
	default:
	}
	if _, err := testdb.Operator(t, "ops").Revoke(ctx, db, "k", lease.Token, "rotating the host", -1); err != nil {
		t.Fatal(err)
	}
	passRenewInterval(t, clk, db, "k") // one keepalive interval
	var got locker.Lease
	select {
	case got = <-k.Revoked():
	case <-k.Context().Done():
		t.Fatalf("keepalive ended: %v", context.Cause(k.Context()))
	}
	var role string
	if err := db.QueryRow(ctx, `SELECT session_user`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	if got.RevokedByActor != "ops" || got.RevokedByRole != role || got.RevokeReason != "rotating the host" ||
		!got.RevokeDeadline.IsZero() || got.Token != lease.Token {
		t.Fatalf("revoked lease %+v; want ops (role %s), the reason, no deadline, token %d", got, role, lease.Token)
	}
	if err := context.Cause(k.Context()); err != nil {
		t.Fatalf("a revoke ended the keepalive: %v", err)
	}
	k.Stop()
	if _, err := lk.Release(ctx, db, k.Leases()...); err != nil {
		t.Fatalf("release after the revoke: %v", err)
	}
	var events int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_event
WHERE lock_key = 'k' AND kind = 'revoked' AND actor = 'ops' AND caller_role = $1 AND fence_token = $2
  AND detail->>'reason' = 'rotating the host'`, role, lease.Token).Scan(&events); err != nil || events != 1 {
		t.Fatalf("revoked events %d (%v); want 1, naming the operator's role and actor", events, err)
	}
}

// A revoke with a deadline bounds every renewal, an acquire again by its
// holder too: the lease's expiry stops at the deadline, the holder trusts it no longer, and once it passes the
// lease is lost and the next acquirer takes the key over.
func TestRevokeDeadlineBoundsRenewals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Hour})
	oper := testdb.Operator(t, "ops")
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	done, err := oper.Revoke(ctx, db, "k", lease.Token, "drain", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := testdb.One(lk.Renew(ctx, db, lease))
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.ExpiresAt.Equal(done.Deadline) || !renewed.RevokeDeadline.Equal(done.Deadline) ||
		renewed.ValidFor() > time.Minute || renewed.ValidFor() <= 0 {
		t.Fatalf("renewed %+v (valid for %s); want it to end at the deadline %s, trusted a minute at most",
			renewed, renewed.ValidFor(), done.Deadline)
	}
	// Acquiring the key again, as its holder, renews it: no further.
	again, err := testdb.Try(ctx, lk, db, "k", "a")
	if err != nil || again.Outcome != locker.Renewed || !again.ExpiresAt.Equal(done.Deadline) {
		t.Fatalf("the holder's acquire again = %+v, %v; want renewed to the deadline %s", again, err, done.Deadline)
	}

	// A deadline of now: the lease ends now, as force-expired.
	if _, err := oper.Revoke(ctx, db, "k", lease.Token, "now", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Renew(ctx, db, lease); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("renew past the deadline = %v; want ErrNotHeld", err)
	}
	next, err := testdb.Try(ctx, lk, db, "k", "b")
	if err != nil || next.Outcome != locker.Stolen || next.Token <= lease.Token {
		t.Fatalf("acquire past the deadline = %+v, %v; want stolen with a larger token", next, err)
	}
}
