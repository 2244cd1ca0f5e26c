package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// process is one service process: its own pool on the schema and its own
// Notifier, as two processes on two hosts would have.
func process(t *testing.T, db *pgxpool.Pool) (*locker.Locker, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), db.Config().Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, pool), WaitRecheck: 30 * time.Second}), pool
}

// A holds x and waits for y; B holds y and then waits for x: B's wait
// closes the cycle and is refused at once, naming it; A keeps waiting and
// gets y when B gives it up.
func TestDeadlockRefusesTheWaitThatClosesTheCycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	testdb.MustAcquire(t, lkA, poolA, "x", "A")
	y := testdb.MustAcquire(t, lkB, poolB, "y", "B")

	a := testdb.AcquireAsync(ctx, lkA, poolA, "y", "A")
	testdb.WaitForWaiter(t, db, "y", "A")
	started := time.Now()
	_, err := testdb.Wait(ctx, lkB, poolB, "x", "B")
	took := time.Since(started)
	var de *locker.Error
	if !errors.As(err, &de) || !errors.Is(err, locker.ErrDeadlock) {
		t.Fatalf("B waiting for x = %v; want a DeadlockError", err)
	}
	want := []locker.DeadlockStep{{Owner: "B", Key: "x"}, {Owner: "A", Key: "y"}}
	if fmt.Sprint(de.Cycle) != fmt.Sprint(want) || de.Owner != "B" {
		t.Errorf("cycle %+v of %q; want %+v of B", de.Cycle, de.Owner, want)
	}
	for _, s := range []string{`"B" waits for "x"`, `"A" waits for "y"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not say %s", err, s)
		}
	}
	if took > time.Second {
		t.Errorf("the deadlock was reported %s after the wait that closed it; want within 1s", took)
	}
	t.Logf("reported after %s", took)
	if n := waiterRows(t, db, "x"); n != 0 {
		t.Errorf("%d waiter records on x after the refusal; want none", n)
	}
	select {
	case r := <-a:
		t.Fatalf("A's wait ended when B's was refused: %+v, %v", r.Lease, r.Err)
	default:
	}
	if _, err := testdb.One(lkB.Release(ctx, poolB, y)); err != nil {
		t.Fatal(err)
	}
	if r := <-a; r.Err != nil || r.Lease.Key != "y" {
		t.Fatalf("A after B gave y up = %+v, %v; want y", r.Lease, r.Err)
	}
}

// A and B, in two processes, each hold one key and wait for the other's at
// the same moment: their enqueues may not see each other's record, and the
// check a waiter makes DeadlockCheck after it queued finds the cycle. One
// is refused within a second of both waits being in the queue (the calls
// that queue them may take longer than that on a loaded machine), the
// other is granted once the refused one gives its key up.
func TestDeadlockOfWaitsThatRaceIsFoundWithinASecond(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	for round := range 5 {
		x, y := fmt.Sprintf("x%d", round), fmt.Sprintf("y%d", round)
		held := map[string]locker.Lease{
			"A": testdb.MustAcquire(t, lkA, poolA, x, "A"),
			"B": testdb.MustAcquire(t, lkB, poolB, y, "B"),
		}
		type result struct {
			owner string
			lease locker.Lease
			err   error
			at    time.Time
		}
		results := make(chan result, 2)
		var ready sync.WaitGroup
		ready.Add(2)
		start := make(chan struct{})
		for _, w := range []struct {
			owner, key string
			lk         *locker.Locker
			pool       *pgxpool.Pool
		}{{"A", y, lkA, poolA}, {"B", x, lkB, poolB}} {
			go func() {
				ready.Done()
				<-start
				lease, err := testdb.Wait(ctx, w.lk, w.pool, w.key, w.owner)
				results <- result{w.owner, lease, err, time.Now()}
			}()
		}
		ready.Wait()
		startedAt := time.Now()
		close(start)
		queuedAt := bothQueued(ctx, db, x, y)
		first := <-results
		var de *locker.Error
		if !errors.As(first.err, &de) {
			t.Fatalf("round %d: first to return: %s %+v, %v; want a DeadlockError", round, first.owner, first.lease, first.err)
		}
		took, when := first.at.Sub(startedAt), "as it queued, "
		if at, ok := queuedAt(); ok {
			if took, when = first.at.Sub(at), "after both waits were queued, "; took > time.Second {
				t.Errorf("round %d: the deadlock was reported %s after both waits were in the queue; want within 1s", round, took)
			}
		}
		lk, pool := lkA, poolA
		if first.owner == "B" {
			lk, pool = lkB, poolB
		}
		if _, err := testdb.One(lk.Release(ctx, pool, held[first.owner])); err != nil {
			t.Fatal(err)
		}
		second := <-results
		if second.err != nil || second.owner == first.owner {
			t.Fatalf("round %d: the other waiter = %s %+v, %v; want granted once %s gave its key up", round, second.owner, second.lease, second.err, first.owner)
		}
		t.Logf("round %d: %s refused %s%s %s after the calls began", round, first.owner, when, took, first.at.Sub(startedAt))
	}
}

// bothQueued watches, until the returned func is called, for a waiter
// record on each of keys a and b; the func says when it first saw both (ok
// false when it never did: a wait found the cycle as it queued).
func bothQueued(ctx context.Context, db *pgxpool.Pool, a, b string) func() (time.Time, bool) {
	seen := make(chan time.Time, 1)
	stop := make(chan struct{})
	go func() {
		for {
			var keys int
			err := db.QueryRow(ctx, `SELECT count(DISTINCT lock_key) FROM distributed_lock_waiter WHERE lock_key IN ($1, $2)`,
				a, b).Scan(&keys)
			if err == nil && keys == 2 {
				seen <- time.Now()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() (time.Time, bool) {
		close(stop)
		select {
		case at := <-seen:
			return at, true
		default:
			return time.Time{}, false
		}
	}
}

// A waiting set is one waiter of the cycle: refused as a whole, none of its
// records left.
func TestDeadlockRefusesAWaitingSet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	testdb.MustAcquire(t, lkA, poolA, "x", "A")
	testdb.MustAcquire(t, lkB, poolB, "y", "B")
	a := testdb.AcquireAsync(ctx, lkA, poolA, "y", "A")
	testdb.WaitForWaiter(t, db, "y", "A")

	_, err := lkB.Acquire(ctx, poolB, locker.Request{Keys: locker.Keys([]string{"z", "x"}...), Owner: "B", Wait: locker.WaitForever})
	var de *locker.Error
	if !errors.As(err, &de) || fmt.Sprint(de.Keys) != "[x z]" {
		t.Fatalf("B's set = %v; want a DeadlockError for x and z", err)
	}
	for _, k := range []string{"x", "z"} {
		if n := waiterRows(t, db, k); n != 0 {
			t.Errorf("%d waiter records on %s after the set was refused; want none", n, k)
		}
		if h := holding(t, db, k); h == "B" {
			t.Errorf("%s held by B after its set was refused", k)
		}
	}
	select {
	case r := <-a:
		t.Fatalf("A's wait ended: %+v, %v", r.Lease, r.Err)
	default:
	}
}

// An owner that holds a key may take it again at once, a renewal, even with
// others queued for it: so a set that names a key its owner holds does not
// wait for the waiters queued for that key (who wait for the owner), and
// is no deadlock. It is granted when its other key is free.
func TestWaitingSetWithAKeyItsOwnerHoldsIsNoDeadlock(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	mine := testdb.MustAcquire(t, lk, db, "a", "o")
	other := testdb.MustAcquire(t, lk, db, "b", "h")
	waiter := testdb.AcquireAsync(ctx, lk, db, "a", "p")
	testdb.WaitForWaiter(t, db, "a", "p")
	type result struct {
		leases []locker.Lease
		err    error
	}
	done := make(chan result, 1)
	go func() {
		leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "o", Wait: locker.WaitForever})
		done <- result{leases, err}
	}()
	var r result
	answered := false
	testdb.Eventually(t, 10*time.Second, "the set queued on b", func() bool {
		select {
		case r = <-done:
			answered = true
			return true
		default:
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'b' AND owner_id = 'o'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	if answered {
		t.Fatalf("AcquireAll while b is held: %+v, %v; want it to wait", r.leases, r.err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, other)); err != nil {
		t.Fatal(err)
	}
	r = <-done
	if r.err != nil {
		t.Fatalf("AcquireAll of a held key and one released: %v; want both", r.err)
	}
	if r.leases[0].Key != "a" || r.leases[0].Owner != "o" {
		t.Fatalf("granted %+v", r.leases)
	}
	_ = mine
	if err := testdb.ErrOf(lk.Release(ctx, db, r.leases...)); err != nil {
		t.Fatal(err)
	}
	if got := <-waiter; got.Err != nil {
		t.Fatalf("p after the set's release: %v", got.Err)
	}
}
