package locker_test

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

// atLeast takes key for owner, to be held at least period.
func atLeast(t *testing.T, lk *locker.Locker, db locker.DBTX, key, owner string, period time.Duration) locker.Lease {
	t.Helper()
	lease, err := testdb.One(lk.Acquire(context.Background(), db, locker.Request{Keys: locker.Keys(key), Owner: owner, AtLeast: period}))
	if err != nil {
		t.Fatalf("acquire %q at least %s: %v", key, period, err)
	}
	return lease
}

// keptRow asserts key reads as kept until about period after its grant,
// and returns the row.
func keptRow(t *testing.T, db locker.DBTX, key string, period time.Duration) lockdb.LockInfo {
	t.Helper()
	info, found, err := store.Get[lockdb.LockInfo](context.Background(), db, key)
	if err != nil || !found {
		t.Fatalf("get %q: %v, found=%v", key, err, found)
	}
	if info.State() != lockdb.StateKept || info.KeptUntil == nil || !info.KeptUntil.Equal(info.AcquiredAt.Add(period)) {
		t.Fatalf("%q is %s, kept until %v; want kept until its grant (%v) + %s", key, info.State(), info.KeptUntil, info.AcquiredAt, period)
	}
	return info
}

func TestAtLeastMustBeALeasesLengthOfAnExclusiveKey(t *testing.T) {
	t.Parallel()
	lk := testdb.Locker(t, locker.Config{})
	for _, req := range []locker.Request{
		{AtLeast: -time.Second}, {AtLeast: time.Microsecond}, {AtLeast: locker.MaxTTL + time.Second},
		{AtLeast: time.Minute, Keys: []locker.Key{{Name: "k", Mode: locker.ModeShared}}},
		{AtLeast: time.Minute, Keys: []locker.Key{{Name: "k", Mode: locker.ModeSemaphore, Permits: 2}}},
	} {
		if req.Keys == nil {
			req.Keys = locker.Keys("k")
		}
		req.Owner = "o"
		// Refused before anything is sent: no database is needed.
		if _, err := lk.Acquire(context.Background(), nil, req); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("AtLeast %v on a %q key: %v; want ErrInvalid", req.AtLeast, req.Keys[0].Mode, err)
		}
	}
}

// A release before the at-least point keeps the key until then: another
// owner, and the releaser itself, are refused as held; once the point is
// past the key is granted with a larger token.
func TestReleaseBeforeTheAtLeastPointKeepsTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first := atLeast(t, lk, db, "report", "node-a", 5*time.Minute)
	if _, err := lk.Release(ctx, db, first); err != nil {
		t.Fatal(err)
	}
	kept := keptRow(t, db, "report", 5*time.Minute)
	if kept.Owner != "node-a" || kept.Token != first.Token {
		t.Errorf("kept row %s/%d; want the releaser's lease %d", kept.Owner, kept.Token, first.Token)
	}
	for _, owner := range []string{"node-b", "node-a"} {
		_, err := testdb.Try(ctx, lk, db, "report", owner)
		var held *locker.Error
		if !errors.Is(err, locker.ErrHeld) || !errors.As(err, &held) || held.DelayUntil == nil || !held.DelayUntil.Equal(*kept.KeptUntil) {
			t.Errorf("%s's attempt while kept = %v; want ErrHeld until %v", owner, err, *kept.KeptUntil)
		}
	}
	clock.Advance(4*time.Minute + 50*time.Second)
	if _, err := testdb.Try(ctx, lk, db, "report", "node-b"); !errors.Is(err, locker.ErrHeld) {
		t.Errorf("node-b's attempt 10 s before the point = %v; want ErrHeld", err)
	}
	clock.Advance(10 * time.Second)
	next, err := testdb.Try(ctx, lk, db, "report", "node-b")
	if err != nil {
		t.Fatalf("node-b's attempt at the point: %v", err)
	}
	if next.Token <= first.Token || next.Outcome != locker.Acquired {
		t.Errorf("node-b's grant %s with token %d; want acquired with a token above %d", next.Outcome, next.Token, first.Token)
	}
}

// A release after the point frees the key at once, as any release.
func TestReleaseAfterTheAtLeastPointFreesTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	lk := testdb.Locker(t, locker.Config{TTL: time.Hour})
	first := atLeast(t, lk, db, "report", "node-a", time.Minute)
	clock.Advance(2 * time.Minute)
	if _, err := lk.Release(ctx, db, first); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, lk, db, "report", "node-b"); err != nil {
		t.Errorf("node-b after a release past the point: %v", err)
	}
}

// A job that did not finish keeps nobody out past its TTL: a lease that
// runs out unreleased drops its at-least point and is stolen as usual; an
// operator's force-release frees a held-at-least key too, and end-delay a
// kept one.
func TestAtLeastEndsWithoutARelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	op := testdb.Operator(t, "oncall")

	atLeast(t, lk, db, "lapsed", "node-a", time.Hour)
	clock.Advance(61 * time.Second)
	if l, err := testdb.Try(ctx, lk, db, "lapsed", "node-b"); err != nil || l.Outcome != locker.Stolen {
		t.Errorf("node-b after node-a's lease ran out: %v, %v; want stolen", l.Outcome, err)
	}

	forced := atLeast(t, lk, db, "forced", "node-a", time.Hour)
	if _, err := op.ForceRelease(ctx, db, "forced", forced.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, lk, db, "forced", "node-b"); err != nil {
		t.Errorf("node-b after a force-release: %v", err)
	}

	ended := atLeast(t, lk, db, "ended", "node-a", time.Hour)
	if _, err := lk.Release(ctx, db, ended); err != nil {
		t.Fatal(err)
	}
	keptRow(t, db, "ended", time.Hour)
	if _, err := op.EndDelay(ctx, db, "ended", "job checked"); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, lk, db, "ended", "node-b"); err != nil {
		t.Errorf("node-b after end-delay of a kept key: %v", err)
	}
}

// A waiter queued behind a held-at-least lease keeps its place through
// the early release and is handed the key at the at-least point, by its
// own check then (no release comes to hand it on). The database's clock
// is moved to just before the point of an hour's hold, and the waiter
// woken to look again.
func TestWaiterIsHandedTheKeyAtTheAtLeastPoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	const period = time.Hour
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 2 * period})
	holder := atLeast(t, lk, db, "report", "node-a", period)
	waiter := testdb.AcquireAsync(ctx, lk, db, "report", "node-b")
	testdb.WaitForWaiter(t, db, "report", "node-b")
	if _, err := lk.Release(ctx, db, holder); err != nil {
		t.Fatal(err)
	}
	kept := keptRow(t, db, "report", period)
	select {
	case got := <-waiter:
		t.Fatalf("node-b was answered before the at-least point: %+v", got)
	case <-time.After(time.Second):
	}
	clock.Advance(period - 300*time.Millisecond)
	if _, err := db.Exec(ctx, `SELECT distributed_lock_wake('report')`); err != nil {
		t.Fatal(err)
	}
	got := <-waiter
	if got.Err != nil {
		t.Fatalf("node-b: %v", got.Err)
	}
	now, _, err := store.Get[lockdb.LockInfo](ctx, db, "report")
	if err != nil {
		t.Fatal(err)
	}
	if now.Owner != "node-b" || now.AcquiredAt.Before(*kept.KeptUntil) || got.Lease.Token <= holder.Token {
		t.Errorf("the key went to %s at %v with token %d; want node-b, not before the point %v, a token above %d",
			now.Owner, now.AcquiredAt, got.Lease.Token, *kept.KeptUntil, holder.Token)
	}
}
