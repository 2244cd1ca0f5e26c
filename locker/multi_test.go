package locker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// holding is who holds key now: its owner when a lease runs, "" when it is
// free or lapsed or has no row.
func holding(t *testing.T, db locker.DBTX, key string) string {
	t.Helper()
	var owner string
	err := db.QueryRow(context.Background(), `SELECT coalesce((SELECT owner_id FROM distributed_lock
		WHERE lock_key = $1 AND released_at IS NULL AND expires_at > clock_timestamp()), '')`, key).Scan(&owner)
	if err != nil {
		t.Fatal(err)
	}
	return owner
}

// hasRow reports whether key has a lock row.
func hasRow(t *testing.T, db locker.DBTX, key string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock WHERE lock_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// allWaiters counts every waiter record.
func allWaiters(t *testing.T, db locker.DBTX) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTryAcquireAllTakesEveryKeyOrNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true})

	// "free" has a free row; "new-a" and "new-z" have none, on either side
	// of the held key in the order the set is locked in.
	free := testdb.MustAcquire(t, lk, db, "free", "earlier")
	if _, err := testdb.One(lk.Release(ctx, db, free)); err != nil {
		t.Fatal(err)
	}
	held := testdb.MustAcquire(t, lk, db, "m-held", "other")
	eventsBefore := len(eventsOf(t, db, "free"))

	_, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"new-z", "free", "m-held", "new-a"}...), Owner: "me"})
	var he *locker.Error
	if !errors.As(err, &he) || he.Key != "m-held" || he.Owner != "other" || he.Token != held.Token {
		t.Fatalf("TryAcquireAll with a held key = %v; want a HeldError naming m-held held by other", err)
	}
	for _, k := range []string{"new-a", "new-z"} {
		if hasRow(t, db, k) {
			t.Errorf("%s has a row after the refusal; want none created", k)
		}
	}
	if h := holding(t, db, "free"); h != "" {
		t.Errorf("free is held by %q after the refusal; want free", h)
	}
	if n := len(eventsOf(t, db, "free")); n != eventsBefore {
		t.Errorf("%d events on free after the refusal; want %d (no grant logged)", n, eventsBefore)
	}
	if h := holding(t, db, "m-held"); h != "other" {
		t.Errorf("m-held held by %q; want other still", h)
	}

	if _, err := testdb.One(lk.Release(ctx, db, held)); err != nil {
		t.Fatal(err)
	}
	keys := []string{"new-z", "free", "m-held", "new-a"}
	leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(keys...), Owner: "me"})
	if err != nil {
		t.Fatalf("TryAcquireAll of free keys: %v", err)
	}
	for i, lease := range leases {
		if lease.Key != keys[i] || lease.Owner != "me" || lease.Outcome != locker.Acquired || lease.ValidFor() <= 0 {
			t.Errorf("lease %d = %+v; want %s acquired by me, in the order asked", i, lease, keys[i])
		}
		if h := holding(t, db, keys[i]); h != "me" {
			t.Errorf("%s held by %q; want me", keys[i], h)
		}
	}
	if leases[2].Token <= held.Token {
		t.Errorf("m-held's token %d; want above the last holder's %d", leases[2].Token, held.Token)
	}

	if err := testdb.ErrOf(lk.Release(ctx, db, leases...)); err != nil {
		t.Fatalf("ReleaseAll: %v", err)
	}
	for _, k := range keys {
		if h := holding(t, db, k); h != "" {
			t.Errorf("%s held by %q after ReleaseAll; want free", k, h)
		}
	}
	var nh *locker.Error
	if err := testdb.ErrOf(lk.Release(ctx, db, leases...)); !errors.As(err, &nh) {
		t.Errorf("ReleaseAll again = %v; want a NotHeldError", err)
	}
}

func TestKeySetsRefusedBeforeSQL(t *testing.T) {
	t.Parallel()
	lk := testdb.Locker(t, locker.Config{})
	many := make([]string, locker.MaxKeys+1)
	for i := range many {
		many[i] = fmt.Sprintf("k%d", i)
	}
	// A nil DBTX: any statement would panic.
	for name, keys := range map[string][]string{
		"a key named twice": {"a", "b", "a"}, "none": {}, "more than MaxKeys": many,
	} {
		if _, err := lk.Acquire(context.Background(), nil, locker.Request{Keys: locker.Keys(keys...), Owner: "me"}); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("TryAcquireAll, %s: %v; want ErrInvalidKeys", name, err)
		}
		if _, err := lk.Acquire(context.Background(), nil, locker.Request{Keys: locker.Keys(keys...), Owner: "me", Wait: locker.WaitForever}); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("AcquireAll, %s: %v; want ErrInvalidKeys", name, err)
		}
	}
	if _, err := lk.Acquire(context.Background(), nil, locker.Request{Keys: locker.Keys([]string{"a", "b", "a"}...), Owner: "me"}); !strings.Contains(err.Error(), `"a" is named twice`) {
		t.Errorf("message %q does not name the key named twice", err)
	}
}

// Two owners taking the same two keys in opposite orders, over and over, on
// separate connections: the keys are locked in one order whatever order
// they are named in, so neither ever waits for the other in a cycle, and
// no deadlock is reported.
func TestSetsInOppositeOrdersNeverDeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := testdb.New(t)
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, keys := range [][]string{{"x", "y"}, {"y", "x"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 100 * time.Millisecond})
			owner := fmt.Sprintf("owner-%d", i)
			for range rounds {
				leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(keys...), Owner: owner, Wait: locker.WaitForever})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", owner, err)
					return
				}
				if err := testdb.ErrOf(lk.Release(ctx, db, leases...)); err != nil {
					errs <- fmt.Errorf("%s: release: %w", owner, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A waiting set is granted only when it can have every key, and keeps its
// place: a key it is first in line for stays free for it (a try is
// refused it, a single waiter behind it waits) until the last key comes
// free; then the set gets both at once, and the single waiter gets its key
// after the set releases it.
func TestWaitingSetGrantedOnlyWithEveryKeyInOrder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	x := testdb.MustAcquire(t, lk, db, "x", "holder")
	y := testdb.MustAcquire(t, lk, db, "y", "holder")

	type result struct {
		leases []locker.Lease
		err    error
	}
	set := make(chan result, 1)
	go func() {
		leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"x", "y"}...), Owner: "set", Wait: locker.WaitForever})
		set <- result{leases, err}
	}()
	testdb.WaitForWaiter(t, db, "x", "set")
	testdb.WaitForWaiter(t, db, "y", "set")
	single := testdb.AcquireAsync(ctx, lk, db, "x", "single")
	testdb.WaitForWaiter(t, db, "x", "single")

	if _, err := testdb.One(lk.Release(ctx, db, x)); err != nil {
		t.Fatal(err)
	}
	if h := holding(t, db, "x"); h != "" {
		t.Fatalf("x held by %q after its release; want free, kept for the set", h)
	}
	var he *locker.Error
	if _, err := testdb.Try(ctx, lk, db, "x", "barger"); !errors.As(err, &he) || !he.Queued {
		t.Fatalf("a try on x kept for the set = %v; want refused, queued for", err)
	}
	select {
	case r := <-set:
		t.Fatalf("the set returned with y still held: %v, %v", r.leases, r.err)
	case r := <-single:
		t.Fatalf("the single waiter behind the set got x first: %+v, %v", r.Lease, r.Err)
	case <-time.After(300 * time.Millisecond):
	}

	if _, err := testdb.One(lk.Release(ctx, db, y)); err != nil {
		t.Fatal(err)
	}
	r := <-set
	if r.err != nil || len(r.leases) != 2 || r.leases[0].Key != "x" || r.leases[1].Key != "y" {
		t.Fatalf("the set = %v, %v; want x and y", r.leases, r.err)
	}
	for _, lease := range r.leases {
		if h := holding(t, db, lease.Key); h != "set" || lease.ValidFor() < 30*time.Second {
			t.Errorf("%s held by %q, valid for %s; want the set's, claimed to the TTL", lease.Key, h, lease.ValidFor())
		}
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, r.leases...)); err != nil {
		t.Fatal(err)
	}
	if s := <-single; s.Err != nil || s.Lease.Key != "x" || s.Lease.Token <= r.leases[0].Token {
		t.Fatalf("the single waiter = %+v, %v; want x after the set, with a larger token", s.Lease, s.Err)
	}
	if n := allWaiters(t, db); n != 0 {
		t.Errorf("%d waiter records left; want none", n)
	}
}

// KeepaliveAll renews a set in one statement per interval and ends its
// context when any one lease of it is lost.
func TestKeepaliveAllEndsWhenOneLeaseIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: 3 * time.Second, RenewEvery: 100 * time.Millisecond})
	leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	k := lk.Keepalive(ctx, db, leases...)
	defer k.Stop()
	testdb.Eventually(t, 10*time.Second, "a renewal of the set", func() bool {
		got := k.Leases()
		return got[0].ExpiresAt.After(leases[0].ExpiresAt) && got[1].ExpiresAt.After(leases[1].ExpiresAt)
	})
	if got := k.Leases(); !slices.Equal(leaseKeys(got), []string{"a", "b"}) || got[1].Token != leases[1].Token {
		t.Fatalf("Leases() = %+v; want a and b with their tokens", got)
	}
	if _, err := (operator.Operator{}).ForceRelease(ctx, db, "b", leases[1].Token); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the set's keepalive still running 10s after b was force-released")
	}
	var lost *locker.Error
	if !errors.As(context.Cause(k.Context()), &lost) || lost.Key != "b" {
		t.Fatalf("cause = %v; want the lease of b lost", context.Cause(k.Context()))
	}
}

func leaseKeys(leases []locker.Lease) []string {
	var keys []string
	for _, l := range leases {
		keys = append(keys, l.Key)
	}
	return keys
}
