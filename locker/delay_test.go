package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// delayedErr asserts err is a refusal for a lock-delay (a *HeldError that
// is ErrHeld, with DelayUntil) and returns it.
func delayedErr(t *testing.T, what string, err error) *locker.Error {
	t.Helper()
	var held *locker.Error
	if !errors.Is(err, locker.ErrHeld) || !errors.As(err, &held) || held.DelayUntil == nil {
		t.Fatalf("%s = %v; want a *HeldError in a lock-delay", what, err)
	}
	if !strings.Contains(err.Error(), "lock-delay, or kept by an at-least hold, until") {
		t.Errorf("%s says %q; want it to name the lock-delay", what, err)
	}
	return held
}

// delayedRow asserts key reads as delayed, its delay ending within
// [lo, hi] of the read, and returns the row.
func delayedRow(t *testing.T, lk *locker.Locker, db locker.DBTX, key string, lo, hi time.Duration) lockdb.LockInfo {
	t.Helper()
	info, found, err := store.Get[lockdb.LockInfo](context.Background(), db, key)
	if err != nil || !found {
		t.Fatalf("get %q: %v, found=%v", key, err, found)
	}
	if info.State() != lockdb.StateDelayed || info.DelayUntil == nil {
		t.Fatalf("%q is %s (delay_until %v); want delayed", key, info.State(), info.DelayUntil)
	}
	if left := info.DelayUntil.Sub(info.DBNow); left < lo || left > hi {
		t.Errorf("%q's lock-delay ends in %v; want within [%v, %v]", key, left, lo, hi)
	}
	return info
}

func TestLockDelayMustBeBetweenZeroAndAMinute(t *testing.T) {
	t.Parallel()
	lk := testdb.Locker(t, locker.Config{})
	for _, req := range []locker.Request{
		{LockDelay: -time.Nanosecond}, {LockDelay: locker.MaxLockDelay + time.Nanosecond},
		{LockDelay: time.Second, Keys: []locker.Key{{Name: "k", Mode: locker.ModeShared}}},
	} {
		if req.Keys == nil {
			req.Keys = locker.Keys("k")
		}
		req.Owner = "o"
		// Refused before anything is sent: no database is needed.
		if _, err := lk.Acquire(context.Background(), nil, req); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("LockDelay %v on a %q key: %v; want ErrInvalid", req.LockDelay, req.Keys[0].Mode, err)
		}
	}
}

// A lease that ran out keeps its key from everyone for its lock-delay, the
// refusal says until when, and once the delay is over the key is taken
// over as usual.
func TestLockDelayAfterExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first := testdb.MustDelayed(t, lk, db, "k", "a", 30*time.Second)
	testdb.ExpireLease(t, db, "k")

	_, err := testdb.TryDelayed(ctx, lk, db, "k", "b", 30*time.Second)
	held := delayedErr(t, "TryAcquire in the delay", err)
	if held.Owner != "a" || held.Token != first.Token || held.DelayLeft < 20*time.Second || held.DelayLeft > 30*time.Second {
		t.Errorf("refusal %+v; want a's token %d, about 30s of delay left", held, first.Token)
	}
	delayedRow(t, lk, db, "k", 20*time.Second, 30*time.Second)
	// The delay is the key's, not another owner's: its own last holder
	// waits too (a restarted process may reuse its owner id).
	delayedErr(t, "TryAcquire by the last holder", func() error { _, err := testdb.TryDelayed(ctx, lk, db, "k", "a", 30*time.Second); return err }())

	testdb.AgeLock(t, db, "k", 30*time.Second)
	got, err := testdb.TryDelayed(ctx, lk, db, "k", "b", 30*time.Second)
	if err != nil || got.Outcome != locker.Stolen || got.Token <= first.Token {
		t.Fatalf("after the delay: %+v, %v; want stolen with a larger token", got, err)
	}
}

// Force-expire and force-release end a lease without its holder's
// release: each starts the lock-delay, and its event says until when.
func TestLockDelayAfterForceActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	op := testdb.Operator(t, "oncall")
	for _, c := range []struct {
		key   string
		force func(context.Context, locker.DBTX, string, int64) (locker.Lease, error)
		event string
	}{
		{"expired", op.ForceExpire, lockdb.EventForceExpired},
		{"released", op.ForceRelease, lockdb.EventForceReleased},
	} {
		lease := testdb.MustDelayed(t, lk, db, c.key, "a", 45*time.Second)
		if _, err := c.force(ctx, db, c.key, lease.Token); err != nil {
			t.Fatal(err)
		}
		_, err := testdb.TryDelayed(ctx, lk, db, c.key, "b", 45*time.Second)
		delayedErr(t, c.key+": TryAcquire", err)
		info := delayedRow(t, lk, db, c.key, 35*time.Second, 45*time.Second)
		last := eventsOf(t, db, c.key)[0] // newest first
		until, perr := time.Parse(time.RFC3339Nano, asString(last.Detail["delay_until"]))
		if last.Kind != c.event || perr != nil || !until.Equal(*info.DelayUntil) {
			t.Errorf("%s: last event %s with detail %v; want %s saying delay_until %v", c.key, last.Kind, last.Detail, c.event, *info.DelayUntil)
		}
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// A clean release starts no lock-delay: the next acquirer gets the key at
// once.
func TestNoLockDelayAfterARelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	lease := testdb.MustDelayed(t, lk, db, "k", "a", time.Minute)
	if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
		t.Fatal(err)
	}
	if got, err := testdb.TryDelayed(ctx, lk, db, "k", "b", time.Minute); err != nil || got.Outcome != locker.Acquired {
		t.Fatalf("after a release: %+v, %v; want acquired", got, err)
	}
}

// An operator ends a lock-delay early: the key is free for the next
// acquirer, an event records who and why, and ending it again is refused.
func TestEndDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	op := testdb.Operator(t, "oncall")
	lease := testdb.MustDelayed(t, lk, db, "k", "a", time.Minute)
	if _, err := op.EndDelay(ctx, db, "k", "no delay yet"); !errors.Is(err, operator.ErrNotDelayed) {
		t.Fatalf("EndDelay of a held key = %v; want ErrNotDelayed", err)
	}
	if _, err := op.ForceRelease(ctx, db, "k", lease.Token); err != nil {
		t.Fatal(err)
	}
	info := delayedRow(t, lk, db, "k", 50*time.Second, time.Minute)

	ended, err := op.EndDelay(ctx, db, "k", "a is gone for good")
	if err != nil {
		t.Fatal(err)
	}
	if ended.Owner != "a" || ended.Token != lease.Token || !ended.DelayUntil.Equal(*info.DelayUntil) {
		t.Errorf("EndDelay = %+v; want a's token %d, the delay until %v", ended, lease.Token, *info.DelayUntil)
	}
	last := eventsOf(t, db, "k")[0] // newest first
	if last.Kind != lockdb.EventDelayEnded || last.Actor != "oncall" || last.Detail["reason"] != "a is gone for good" {
		t.Errorf("last event %+v; want delay_ended by oncall with the reason", last)
	}
	if got, err := testdb.TryDelayed(ctx, lk, db, "k", "b", time.Minute); err != nil || got.Outcome != locker.Acquired {
		t.Fatalf("after EndDelay: %+v, %v; want acquired", got, err)
	}
	if _, err := op.EndDelay(ctx, db, "k", "again"); !errors.Is(err, operator.ErrNotDelayed) {
		t.Fatalf("EndDelay of a granted key = %v; want ErrNotDelayed", err)
	}
}

// Waiters keep their place through a lock-delay: a force-release hands
// nothing on, and the head waiter is granted the key when the delay ends,
// by its own check at delay_until (no release comes to hand it on).
func TestWaiterIsServedWhenTheLockDelayEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	const delay = 700 * time.Millisecond
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db),
		WaitRecheck: 30 * time.Second})
	op := testdb.Operator(t, "oncall")
	holder := testdb.MustDelayed(t, lk, db, "k", "a", delay)
	first := testdb.AcquireAsync(ctx, lk, db, "k", "w1")
	testdb.WaitForWaiter(t, db, "k", "w1")
	second := testdb.AcquireAsync(ctx, lk, db, "k", "w2")
	testdb.WaitForWaiter(t, db, "k", "w2")

	if _, err := op.ForceRelease(ctx, db, "k", holder.Token); err != nil {
		t.Fatal(err)
	}
	info := delayedRow(t, lk, db, "k", 0, delay)
	if n := waiterRows(t, db, "k"); n != 2 {
		t.Fatalf("%d waiter rows in the delay; want both waiters still queued", n)
	}
	got := <-first
	if got.Err != nil {
		t.Fatalf("w1: %v", got.Err)
	}
	now, _, err := store.Get[lockdb.LockInfo](ctx, db, "k")
	if err != nil {
		t.Fatal(err)
	}
	if now.Owner != "w1" || now.AcquiredAt.Before(*info.DelayUntil) {
		t.Errorf("the key went to %s at %v; want w1, not before the delay's end %v", now.Owner, now.AcquiredAt, *info.DelayUntil)
	}
	select {
	case g := <-second:
		t.Fatalf("w2 got %+v, %v while w1 holds the key", g.Lease, g.Err)
	default:
	}
	if _, err := testdb.One(lk.Release(ctx, db, got.Lease)); err != nil {
		t.Fatal(err)
	}
	if g := <-second; g.Err != nil {
		t.Fatalf("w2 after w1's release: %v", g.Err)
	}
}

// Ending the delay serves the head waiter at once, in the operator's own
// transaction.
func TestEndDelayServesTheHeadWaiter(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db),
		WaitRecheck: 30 * time.Second})
	op := testdb.Operator(t, "oncall")
	holder := testdb.MustDelayed(t, lk, db, "k", "a", time.Minute)
	waiting := testdb.AcquireAsync(ctx, lk, db, "k", "w1")
	testdb.WaitForWaiter(t, db, "k", "w1")
	if _, err := op.ForceExpire(ctx, db, "k", holder.Token); err != nil {
		t.Fatal(err)
	}
	delayedRow(t, lk, db, "k", 50*time.Second, time.Minute)
	if _, err := op.EndDelay(ctx, db, "k", ""); err != nil {
		t.Fatal(err)
	}
	info, _, err := store.Get[lockdb.LockInfo](ctx, db, "k")
	if err != nil || info.Owner != "w1" || info.State() == lockdb.StateDelayed {
		t.Fatalf("after EndDelay the key is %+v (%v); want handed to w1", info, err)
	}
	if got := <-waiting; got.Err != nil || got.Lease.Token != info.Token {
		t.Fatalf("w1: %+v, %v; want the handed lease (token %d)", got.Lease, got.Err, info.Token)
	}
}

// A refusal says how many wait, and a waiter that gave up says where it
// stood.
func TestRefusalSaysTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: 30 * time.Second})
	testdb.MustAcquire(t, lk, db, "k", "a")
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	testdb.AcquireAsync(waitCtx, lk, db, "k", "w1")
	testdb.WaitForWaiter(t, db, "k", "w1")
	testdb.AcquireAsync(waitCtx, lk, db, "k", "w2")
	testdb.WaitForWaiter(t, db, "k", "w2")

	_, err := testdb.Try(ctx, lk, db, "k", "b")
	var held *locker.Error
	if !errors.As(err, &held) || held.QueueLength != 2 || held.Owner != "a" || held.Remaining <= 0 {
		t.Fatalf("TryAcquire = %v; want held by a with 2 queued", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `held by "a"`) || !strings.Contains(msg, "more; 2 queued") {
		t.Errorf("message %q; want the holder, the time left and the queue", msg)
	}

	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	_, err = testdb.Wait(short, lk, db, "k", "w3")
	var gaveUp *locker.Error
	if !errors.As(err, &gaveUp) || gaveUp.Err == nil || gaveUp.Position != 3 || gaveUp.QueueLength != 3 {
		t.Fatalf("Acquire that gave up = %v (%+v); want queued 3 of 3", err, gaveUp)
	}
}

// A waiting set whose one key was released early (promised to it since)
// and whose other key then went into its lock-delay is served when the
// delay ends: the released key's lease no longer runs, so its old expiry
// is no reason to sleep on, and nothing else wakes the set at the delay's
// end.
func TestWaitingSetIsServedWhenTheLockDelayEnds(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	const delay = 700 * time.Millisecond
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db),
		WaitRecheck: 30 * time.Second})
	op := testdb.Operator(t, "oncall")
	// Far less than the minute the released lease had left.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	a := testdb.MustDelayed(t, lk, db, "a", "ha", delay)
	b := testdb.MustDelayed(t, lk, db, "b", "hb", delay)
	type result struct {
		leases []locker.Lease
		err    error
	}
	done := make(chan result, 1)
	go func() {
		leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "set", Wait: locker.WaitForever})
		done <- result{leases, err}
	}()
	testdb.WaitForWaiter(t, db, "a", "set")
	testdb.WaitForWaiter(t, db, "b", "set")
	if _, err := testdb.One(lk.Release(ctx, db, b)); err != nil {
		t.Fatal(err)
	}
	if _, err := op.ForceRelease(ctx, db, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	info := delayedRow(t, lk, db, "a", 0, delay)
	r := <-done
	if r.err != nil {
		t.Fatalf("AcquireAll: %v; want both keys once a's delay ended (%v)", r.err, *info.DelayUntil)
	}
	if err := testdb.ErrOf(lk.Release(context.Background(), db, r.leases...)); err != nil {
		t.Fatal(err)
	}
}
