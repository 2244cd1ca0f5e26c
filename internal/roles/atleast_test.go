package roles_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Another service that names a victim's lease exactly cannot hold it at
// least a period: it would keep the key from everyone after the victim's
// release. The victim's release frees the key as it would have.
func TestAnotherServiceCannotHoldALeaseAtLeast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	lease, err := testdb.Try(ctx, lk, victim, "nightly", "cron-1")
	if err != nil {
		t.Fatal(err)
	}
	ref := store.LeaseRef{Key: lease.Key, Owner: lease.Owner, Token: lease.Token}
	if _, ok, err := store.HoldAtLeast(ctx, attacker, ref, 24*time.Hour); ok || err != nil {
		t.Errorf("another service's hold at least = %v, %v; want not held", ok, err)
	}
	if _, err := lk.Release(ctx, victim, lease); err != nil {
		t.Fatal(err)
	}
	info, _, err := store.Get[lockdb.LockInfo](ctx, e.admin, "nightly")
	if err != nil || info.State() != lockdb.StateFree {
		t.Errorf("after the victim's release: %s, %v; want free", info.State(), err)
	}
}
