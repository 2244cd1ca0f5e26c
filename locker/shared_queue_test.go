package locker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// waitFor runs acquire in the background and returns a channel with its
// lease (or error) once it returns.
func waitFor(acquire func(ctx context.Context) (locker.Lease, error)) <-chan result {
	got := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := acquire(ctx)
		got <- result{l, err}
	}()
	return got
}

type result struct {
	lease locker.Lease
	err   error
}

func queued(t *testing.T, db locker.DBTX, key string, n int) {
	t.Helper()
	if !testdb.Within(10*time.Second, func() bool {
		var got int
		_ = db.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = $1`, key).Scan(&got)
		return got == n
	}) {
		t.Fatalf("%d waiters never queued for %s", n, key)
	}
}

func pending(t *testing.T, what string, c <-chan result) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("%s returned early: %+v, %v", what, r.lease, r.err)
	case <-time.After(300 * time.Millisecond):
	}
}

func granted(t *testing.T, what string, c <-chan result) locker.Lease {
	t.Helper()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.lease
	case <-time.After(20 * time.Second):
		t.Fatalf("%s was never granted", what)
	}
	return locker.Lease{}
}

// One queue across modes: a writer queued while a reader holds the key
// waits for it; readers who queue after the writer wait for the writer,
// and are handed their leases together when it releases.
func TestWaitingReadersAndWriterKeepTheirTurns(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	first, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "r1"}))
	if err != nil {
		t.Fatal(err)
	}
	writer := waitFor(func(ctx context.Context) (locker.Lease, error) { return testdb.Wait(ctx, lk, db, "cfg", "writer") })
	queued(t, db, "cfg", 1)
	r2 := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "r2", Wait: locker.WaitForever}))
	})
	queued(t, db, "cfg", 2)
	r3 := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "r3", Wait: locker.WaitForever}))
	})
	queued(t, db, "cfg", 3)
	pending(t, "the writer, while r1 reads", writer)
	pending(t, "r2, queued behind the writer", r2)

	if _, err := testdb.One(lk.Release(ctx, db, first)); err != nil {
		t.Fatal(err)
	}
	w := granted(t, "the writer, after r1's release", writer)
	pending(t, "r2, while the writer writes", r2)
	if _, err := testdb.One(lk.Release(ctx, db, w)); err != nil {
		t.Fatal(err)
	}
	l2, l3 := granted(t, "r2", r2), granted(t, "r3", r3)
	for _, l := range []locker.Lease{l2, l3} {
		if l.Mode != locker.ModeShared || l.Token <= w.Token {
			t.Errorf("reader after the writer: %+v; want a shared lease with a token above the writer's %d", l, w.Token)
		}
	}
	// Both hold it at once.
	if _, err := testdb.One(lk.Renew(ctx, db, l2)); err != nil {
		t.Errorf("r2 does not hold it beside r3: %v", err)
	}
	if _, err := testdb.One(lk.Renew(ctx, db, l3)); err != nil {
		t.Errorf("r3 does not hold it beside r2: %v", err)
	}
}

// Freed permits are handed to the waiters in the order they queued.
func TestFreedPermitsGoToWaitersInTurn(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	a, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "b"}))
	if err != nil {
		t.Fatal(err)
	}
	c := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "c", Wait: locker.WaitForever}))
	})
	queued(t, db, "pool", 1)
	d := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "d", Wait: locker.WaitForever}))
	})
	queued(t, db, "pool", 2)
	var held *locker.Error
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "e"})); !errors.As(err, &held) {
		t.Fatalf("a try while permits are awaited: %v; want refused", err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, a)); err != nil {
		t.Fatal(err)
	}
	lc := granted(t, "c, first in line", c)
	pending(t, "d, second in line", d)
	if lc.Mode != locker.ModeSemaphore || lc.Permits != 2 {
		t.Errorf("c's lease = %+v; want a permit of 2", lc)
	}
	if _, err := testdb.One(lk.Release(ctx, db, b)); err != nil {
		t.Fatal(err)
	}
	granted(t, "d, after b's release", d)
}

// Many waiters on a semaphore: never more holders than permits, and every
// waiter is served.
func TestSemaphoreUnderContention(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: time.Second})
	const permits, workers, rounds = 3, 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	var mu sync.Mutex
	holding, most := 0, 0
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := "w" + string(rune('a'+i))
			for range rounds {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				l, err := testdb.One(lk.Acquire(wctx, db, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: permits}}, Owner: owner, Wait: locker.WaitForever}))
				cancel()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				holding++
				most = max(most, holding)
				mu.Unlock()
				// The work under the permit: a statement that proves it
				// is still current, while the others contend.
				if err := locker.Fence(ctx, db, l); err != nil {
					errs <- err
				}
				mu.Lock()
				holding--
				mu.Unlock()
				if _, err := testdb.One(lk.Release(ctx, db, l)); err != nil {
					errs <- err
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
	if most > permits {
		t.Errorf("%d held a %d-permit semaphore at once", most, permits)
	}
	var over int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM distributed_lock WHERE lock_key = 'sem' AND slot > $1`, permits).Scan(&over); err != nil || over != 0 {
		t.Errorf("slots beyond the permits: %d (%v)", over, err)
	}
}

// A reader holds x and waits to write y; the writer of y then waits to
// write x, which the reader's shared lease keeps: that wait closes a cycle
// through the shared lease and is refused.
func TestDeadlockThroughASharedLease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	if _, err := testdb.One(lkA.Acquire(ctx, poolA, locker.Request{Keys: []locker.Key{{Name: "x", Mode: locker.ModeShared}}, Owner: "A"})); err != nil {
		t.Fatal(err)
	}
	testdb.MustAcquire(t, lkB, poolB, "y", "B")
	a := testdb.AcquireAsync(ctx, lkA, poolA, "y", "A")
	testdb.WaitForWaiter(t, db, "y", "A")
	_, err := testdb.Wait(ctx, lkB, poolB, "x", "B")
	var de *locker.Error
	if !errors.As(err, &de) {
		t.Fatalf("B waiting to write x, which A reads while it waits for B's y: %v; want a DeadlockError", err)
	}
	cancel()
	<-a
}
