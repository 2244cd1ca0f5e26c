package roles_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// A service converts only its own leases: another service naming the
// victim's lease exactly (key, owner, token), or the victim's own role
// naming it under another owner, is told ErrNotHeld, queues nothing, and
// the victim's leases stay as granted.
func TestAnotherServiceCannotConvertALease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	excl, err := testdb.Try(ctx, lk, victim, "billing", "billing-1")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := testdb.One(lk.Acquire(ctx, victim, locker.Request{
		Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "billing-1"}))
	if err != nil {
		t.Fatal(err)
	}
	renamed := func(l locker.Lease) locker.Lease { l.Owner = "billing-2"; return l }
	for who, db := range map[string]locker.DBTX{"another service": attacker, "the same service as another owner": victim} {
		as := func(l locker.Lease) locker.Lease {
			if db == victim {
				return renamed(l)
			}
			return l
		}
		if _, err := lk.Downgrade(ctx, db, as(excl)); !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("%s's Downgrade = %v; want ErrNotHeld", who, err)
		}
		for _, wait := range []time.Duration{0, time.Second} {
			if _, err := lk.Upgrade(ctx, db, as(shared), wait); !errors.Is(err, locker.ErrNotHeld) {
				t.Errorf("%s's Upgrade (wait %s) = %v; want ErrNotHeld", who, wait, err)
			}
		}
	}
	var queued int
	if err := e.admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter`).Scan(&queued); err != nil || queued != 0 {
		t.Errorf("%d waiter records after the attacks (%v); want none", queued, err)
	}
	info, _, err := store.Get[lockdb.LockInfo](ctx, e.admin, "billing")
	if err != nil || info.Owner != "billing-1" || info.Token != excl.Token || info.Mode != locker.ModeExclusive || info.ReleasedAt != nil {
		t.Errorf("billing after the attacks: %+v (%v); want the victim's exclusive lease %d", info, err, excl.Token)
	}
	// The victim's own leases are still its to convert.
	if _, err := lk.Downgrade(ctx, victim, excl); err != nil {
		t.Errorf("the victim's Downgrade: %v", err)
	}
	if _, err := lk.Upgrade(ctx, victim, shared, 0); err != nil {
		t.Errorf("the victim's Upgrade: %v", err)
	}
}
