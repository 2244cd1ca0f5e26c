package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Waiters from two "processes" (two Lockers, each with its own Notifier)
// are granted the key in the order they queued, each directly by the
// previous holder's release.
func TestQueueServesInArrivalOrderAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	procs := []*locker.Locker{
		testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second}),
		testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second}),
	}
	holder := testdb.MustAcquire(t, procs[0], db, "k", "first")

	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	const waiters = 6
	for i := range waiters {
		owner := fmt.Sprintf("w%d", i)
		lk := procs[i%2]
		wg.Go(func() {
			lease, err := testdb.Wait(waitCtx, lk, db, "k", owner)
			if err != nil {
				t.Errorf("%s: %v", owner, err)
				return
			}
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
			if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
				t.Errorf("%s release: %v", owner, err)
			}
		})
		testdb.WaitForWaiter(t, db, "k", owner) // queued before the next one arrives
	}
	if _, err := testdb.One(procs[0].Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	want := []string{"w0", "w1", "w2", "w3", "w4", "w5"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("grant order = %v; want arrival order %v", order, want)
	}
	if n := waiterRows(t, db, "k"); n != 0 {
		t.Fatalf("%d waiter rows left", n)
	}
}

// The release itself grants the key to the head waiter: in the release's
// transaction the row already belongs to the waiter, with a new token and a
// lease that runs for the claim window; woken by the NOTIFY, the waiter
// asks the database whether it was handed the key and claims it (renews it
// to the TTL) in that same call, so Acquire returns the lease claimed.
func TestReleaseHandsOffToHeadWaiterWhichClaimsIt(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	const claim = 400 * time.Millisecond
	// On a clock of its own that never moves, the waiter's own checks never
	// come: only the hand-off's NOTIFY wakes it.
	lk := clockedLocker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second,
		ClaimWindow: claim}, newFakeClock())
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	got := testdb.AcquireAsync(ctx, lk, db, "k", "b")
	testdb.WaitForWaiter(t, db, "k", "b")
	var row lockview.Lock
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := testdb.One(lk.Release(ctx, tx, holder)); err != nil {
			return err
		}
		row = rowOf(t, tx, "k")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if row.Owner != "b" || row.Token <= holder.Token || row.ReleasedAt != nil {
		t.Fatalf("row in the release's transaction = %+v; want held by b with a token above %d", row, holder.Token)
	}
	if window := row.ExpiresAt.Sub(row.AcquiredAt); window != claim {
		t.Fatalf("handed lease runs %s; want the claim window %s", window, claim)
	}
	r := <-got
	if r.Err != nil || r.Lease.Token != row.Token || r.Lease.Owner != "b" {
		t.Fatalf("Acquire = %+v, %v; want the handed lease (token %d)", r.Lease, r.Err, row.Token)
	}
	claimed := rowOf(t, db, "k")
	if claimed.Token != r.Lease.Token || claimed.RenewCount != 1 || claimed.ExpiresAt.Sub(claimed.AcquiredAt) < 30*time.Second {
		t.Fatalf("claimed row = %+v; want token %d renewed once, to about the TTL", claimed, r.Lease.Token)
	}
	if !r.Lease.ExpiresAt.Equal(claimed.ExpiresAt) || r.Lease.Outcome != locker.Acquired {
		t.Fatalf("Acquire's lease expires %s (%s); want the claimed expiry %s, acquired", r.Lease.ExpiresAt,
			r.Lease.Outcome, claimed.ExpiresAt)
	}
	if v := r.Lease.ValidFor(); v < 50*time.Second {
		t.Fatalf("ValidFor after the claim = %s; want about the TTL", v)
	}
}

// Without a Notifier a waiter finds the lease handed to it at its next
// check.
func TestQueueWithoutNotifierFindsItsGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: 200 * time.Millisecond})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	got := testdb.AcquireAsync(ctx, lk, db, "k", "b")
	testdb.WaitForWaiter(t, db, "k", "b")
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	handed := rowOf(t, db, "k")
	r := <-got
	if r.Err != nil || r.Lease.Owner != "b" || r.Lease.Token != handed.Token {
		t.Fatalf("Acquire = %+v, %v; want the lease the release handed to b (%+v)", r.Lease, r.Err, handed)
	}
}

// A waiter that queued and died (its record still live, nobody to claim)
// blocks the key only for the claim window: then the next waiter takes it,
// as a steal, with a larger token.
func TestClaimWindowRunsOutForDeadWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	const claim = 300 * time.Millisecond
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second,
		ClaimWindow: claim})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	dead := enqueueRaw(t, db, "k", "dead", claim)
	got := testdb.AcquireAsync(ctx, lk, db, "k", "b")
	testdb.WaitForWaiter(t, db, "k", "b")
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	handed := rowOf(t, db, "k")
	if handed.Owner != "dead" {
		t.Fatalf("row after the release = %+v; want handed to the head waiter, dead (id %d)", handed, dead)
	}
	r := <-got
	if r.Err != nil || r.Lease.Owner != "b" || r.Lease.Outcome != locker.Stolen || r.Lease.Token <= handed.Token {
		t.Fatalf("Acquire = %+v, %v; want b to take the unclaimed lease over", r.Lease, r.Err)
	}
	if took := rowOf(t, db, "k").AcquiredAt.Sub(handed.AcquiredAt); took < claim || took > claim+time.Second {
		t.Fatalf("b got the key %s after the hand-off to dead; want just after the claim window %s", took, claim)
	}
}

// A try from outside the queue does not take a free or lapsed key that
// live waiters are queued for; the head waiter does.
func TestTryAcquireDoesNotJumpTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: 200 * time.Millisecond})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	id := enqueueRaw(t, db, "k", "queued", time.Second)
	testdb.WaitUntilPast(t, db, holder.ExpiresAt)
	_, err := testdb.Try(ctx, lk, db, "k", "outsider")
	var held *locker.Error
	if !errors.As(err, &held) || !held.Queued {
		t.Fatalf("TryAcquire on a lapsed key with a waiter queued = %v; want a HeldError with Queued", err)
	}
	q, err := store.Poll(ctx, db, "k", id, time.Minute)
	if err != nil || !q.Granted() || q.Owner != "queued" {
		t.Fatalf("head waiter's check = %+v, %v; want the key", q, err)
	}
	// With no live waiter left, a try works as always.
	if _, err := store.Leave(ctx, db, "k", id, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, lk, db, "k", "outsider"); err != nil {
		t.Fatalf("TryAcquire once the queue is empty: %v", err)
	}
}

// A waiter that gives up after the key was handed to it (the NOTIFY was in
// flight) passes the lease on to the next waiter instead of sitting on it.
func TestLeaveAfterHandOffPassesItOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	first := enqueueRaw(t, db, "k", "first", time.Minute)
	enqueueRaw(t, db, "k", "second", time.Minute)
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	if row := rowOf(t, db, "k"); row.Owner != "first" {
		t.Fatalf("row after the release = %+v; want handed to first", row)
	}
	if did, err := store.Leave(ctx, db, "k", first, false, ""); err != nil || did != lockdb.PassedOn {
		t.Fatalf("first leaves: %q, %v; want %q", did, err, lockdb.PassedOn)
	}
	if row := rowOf(t, db, "k"); row.Owner != "second" || row.ReleasedAt != nil {
		t.Fatalf("row after first left = %+v; want handed on to second", row)
	}
}

// An Acquire whose context ends while its enqueue waits for the key's row
// lock still learns its waiter id and takes its record out.
func TestAcquireCancelledDuringEnqueueLeavesNoRecord(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := locker.Fence(ctx, tx, holder); err != nil {
		t.Fatalf("fence: %v", err)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	got := testdb.AcquireAsync(waitCtx, lk, db, "k", "b")
	waitForBlockedCall(t, db, "distributed_lock_enqueue")
	cancel()
	// The call is not cut short by the cancel: it still waits for the row
	// when the key's holder commits.
	waitForBlockedCall(t, db, "distributed_lock_enqueue")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-got; !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("Acquire = %v; want context.Canceled", r.Err)
	}
	if n := waiterRows(t, db, "k"); n != 0 {
		t.Fatalf("%d waiter rows left after a cancelled Acquire", n)
	}
}

// enqueueRaw queues owner on key as a waiter of another process would,
// with nobody behind it to poll or claim, and returns its waiter id.
func enqueueRaw(t *testing.T, db locker.DBTX, key, owner string, claim time.Duration) int64 {
	t.Helper()
	q, found, err := store.Enqueue(context.Background(), db, store.QueueParams{
		GrantParams: store.GrantParams{Key: key, Owner: owner, TTL: time.Minute, Actor: owner},
		ClaimWindow: claim, SeenFor: time.Minute,
	})
	if err != nil || !found || q.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("enqueue %s: %+v, %v, %v; want queued", owner, q, found, err)
	}
	return q.WaiterID
}

// blockedCallSQL counts the other backends running a call of $1 that wait
// for a lock.
const blockedCallSQL = `SELECT count(*) FROM pg_stat_activity
	WHERE query LIKE '%' || $1 || '%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`

// waitForBlockedCall waits until a backend runs a call of fn and waits for
// a lock.
func waitForBlockedCall(t *testing.T, db locker.DBTX, fn string) {
	t.Helper()
	testdb.Eventually(t, 10*time.Second, "a call of "+fn+" waiting for a lock", func() bool {
		var n int
		if err := db.QueryRow(context.Background(), blockedCallSQL, fn).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// NOTIFY channels are per database and waiter ids per lock schema: a
// hand-off in another schema of the same database, to a waiter with the
// same id on a key of the same name, is not taken for this waiter's.
func TestHandOffInAnotherSchemaIsNotOurs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there := testdb.New(t), testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, here), WaitRecheck: 30 * time.Second})
	holder := testdb.MustAcquire(t, lk, here, "k", "a")
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := testdb.AcquireAsync(waitCtx, lk, here, "k", "b")
	id := testdb.WaitForWaiter(t, here, "k", "b").ID
	otherHolder := testdb.MustAcquire(t, lk, there, "k", "x")
	if otherID := enqueueRaw(t, there, "k", "y", time.Minute); otherID != id {
		t.Fatalf("waiter ids %d and %d: the test needs them equal", id, otherID)
	}
	if _, err := testdb.One(lk.Release(ctx, there, otherHolder)); err != nil { // hands there's k to y
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Fatalf("Acquire returned %+v, %v on another schema's hand-off", r.Lease, r.Err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := testdb.One(lk.Release(ctx, here, holder)); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Err != nil || r.Lease.Owner != "b" || r.Lease.Token != rowOf(t, here, "k").Token {
		t.Fatalf("Acquire = %+v, %v; want this schema's hand-off to b", r.Lease, r.Err)
	}
}

// A hand-off whose NOTIFY never arrives is found by the Notifier's
// heartbeat, which no longer finds the waiter's record live: the waiter
// claims the lease at once, as a NOTIFY's hand-off is claimed, instead of
// leaving it to its claim window. Its clock never moves, so neither its
// own checks nor a background claim can explain the grant.
func TestAHandOffWhoseNotifyIsLostIsClaimedAtTheHeartbeat(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(db.Config().ConnConfig)})
	locker.OnHeard(n, func(note *pgconn.Notification) {
		if strings.HasPrefix(note.Payload, "{") {
			note.Payload = "lost" // every wake-up but the Notifier's own probes
		}
	})
	nctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = n.Run(nctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testdb.Eventually(t, 10*time.Second, "the notifier listening", n.Live)
	// WaitRecheck sets the heartbeat's pace (every seenFor/6: 1.5 s), well
	// inside the 15 s the waiter is given; the waiter's own checks go by
	// its clock, which never moves.
	lk := clockedLocker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: 3 * time.Second,
		ClaimWindow: 20 * time.Second}, newFakeClock())
	holder := testdb.MustAcquire(t, lk, db, "k", "a")
	got := testdb.AcquireAsync(ctx, lk, db, "k", "b")
	testdb.WaitForWaiter(t, db, "k", "b")
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	var r testdb.Acquired
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter was not served: the heartbeat did not find its hand-off")
	}
	if r.Err != nil || r.Lease.Owner != "b" || r.Lease.Token <= holder.Token {
		t.Fatalf("Acquire = %+v, %v; want b's lease, handed on", r.Lease, r.Err)
	}
	row := rowOf(t, db, "k")
	if row.Token != r.Lease.Token || row.RenewCount != 1 || row.ExpiresAt.Sub(row.AcquiredAt) < 30*time.Second {
		t.Fatalf("row = %+v; want token %d claimed (renewed once, to about the TTL) when Acquire returned", row, r.Lease.Token)
	}
}
