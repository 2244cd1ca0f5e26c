package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// Readers hold a key side by side; a writer is refused until the last of
// them releases, and its token is above every reader's.
func TestSharedLeasesExcludeAWriter(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	ctx := context.Background()
	var readers []locker.Lease
	for _, owner := range []string{"r1", "r2", "r3"} {
		l, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "config", Mode: locker.ModeShared}}, Owner: owner}))
		if err != nil {
			t.Fatalf("reader %s: %v", owner, err)
		}
		if l.Mode != locker.ModeShared || l.Outcome != locker.Acquired {
			t.Fatalf("reader %s got %+v; want a shared, acquired lease", owner, l)
		}
		readers = append(readers, l)
	}
	if readers[0].Token == readers[1].Token || readers[1].Token == readers[2].Token {
		t.Fatalf("readers share a token: %d %d %d", readers[0].Token, readers[1].Token, readers[2].Token)
	}
	_, err := testdb.Try(ctx, lk, db, "config", "writer")
	var held *locker.Error
	if !errors.As(err, &held) {
		t.Fatalf("writer beside readers: %v; want a *HeldError", err)
	}
	for i, r := range readers {
		if _, err := testdb.One(lk.Release(ctx, db, r)); err != nil {
			t.Fatalf("release reader %d: %v", i, err)
		}
		if i < len(readers)-1 {
			if _, err := testdb.Try(ctx, lk, db, "config", "writer"); !errors.Is(err, locker.ErrHeld) {
				t.Fatalf("writer with %d readers left: %v; want ErrHeld", len(readers)-1-i, err)
			}
		}
	}
	w, err := testdb.Try(ctx, lk, db, "config", "writer")
	if err != nil {
		t.Fatalf("writer after the readers: %v", err)
	}
	for _, r := range readers {
		if w.Token <= r.Token {
			t.Errorf("writer's token %d is not above reader %s's %d", w.Token, r.Owner, r.Token)
		}
	}
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "config", Mode: locker.ModeShared}}, Owner: "r4"})); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("reader beside the writer: %v; want ErrHeld", err)
	}
}

// A semaphore of 2 permits has two holders at most; a permit released
// returns at once, and asking with other permits while it is held is a
// conflict.
func TestSemaphorePermits(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	ctx := context.Background()
	a, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "b"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "c"}))
	var held *locker.Error
	if !errors.As(err, &held) || held.Holders != 2 || held.Permits != 2 || held.Remaining <= 0 {
		t.Fatalf("third of two permits: %v (%+v); want held by 2 of 2, with time left", err, held)
	}
	var conflict *locker.Error
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 3}}, Owner: "c"})); !errors.As(err, &conflict) || !conflict.Conflict || !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("3 permits of a held 2-permit key: %v; want a *ConflictError", err)
	}
	if conflict.Permits != 2 || conflict.Holders != 2 {
		t.Errorf("conflict = %+v; want the key's 2 permits and 2 holders", conflict)
	}
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeShared}}, Owner: "c"})); !errors.As(err, &conflict) || !conflict.Conflict {
		t.Fatalf("shared on a held semaphore: %v; want a *ConflictError", err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, a)); err != nil {
		t.Fatal(err)
	}
	c, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "c"}))
	if err != nil {
		t.Fatalf("a released permit did not return: %v", err)
	}
	if _, err := testdb.One(lk.Renew(ctx, db, b)); err != nil {
		t.Fatalf("renew a permit: %v", err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, a)); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("release of a permit twice: %v; want ErrNotHeld", err)
	}
	for _, l := range []locker.Lease{b, c} {
		if _, err := testdb.One(lk.Release(ctx, db, l)); err != nil {
			t.Fatal(err)
		}
	}
	// Free, the key takes other permits.
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeSemaphore, Permits: 3}}, Owner: "d"})); err != nil {
		t.Fatalf("3 permits of the free key: %v", err)
	}
}

// A permit holder that crashes (never releases) gives its permit back at
// its TTL, on the database's clock, and not before.
func TestCrashedPermitReturnsAtItsTTL(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	short := testdb.Locker(t, locker.Config{TTL: 2 * time.Second})
	crashed, err := testdb.One(short.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 1}}, Owner: "crashed"}))
	if err != nil {
		t.Fatal(err)
	}
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 1}}, Owner: "next"})); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("the permit before the crashed holder's TTL: %v; want ErrHeld", err)
	}
	next, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "pool", Mode: locker.ModeSemaphore, Permits: 1}}, Owner: "next", Wait: locker.WaitForever}))
	if err != nil {
		t.Fatalf("waiting for the crashed holder's permit: %v", err)
	}
	var dbNow time.Time
	if err := db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if dbNow.Before(crashed.ExpiresAt) {
		t.Fatalf("granted at %s, before the crashed permit's expiry %s", dbNow, crashed.ExpiresAt)
	}
	if next.Outcome != locker.Stolen || next.Token <= crashed.Token {
		t.Fatalf("next = %+v; want the lapsed permit taken over (stolen) with a larger token than %d", next, crashed.Token)
	}
}

// A holder's Fence holds off a writer until its transaction ends, as an
// exclusive lease's does.
func TestFenceOfASharedLeaseHoldsOffAWriter(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Second})
	r, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "doc", Mode: locker.ModeShared}}, Owner: "reader"}))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := locker.Fence(ctx, tx, r); err != nil {
		t.Fatalf("fence of a shared lease: %v", err)
	}
	clock.Advance(1200 * time.Millisecond) // the reader's lease runs out inside its fenced transaction
	writer := testdb.Locker(t, locker.Config{TTL: time.Minute})
	if _, err := testdb.Try(ctx, writer, db, "doc", "writer"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("writer during the reader's fenced transaction: %v; want ErrHeld (busy)", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := testdb.Try(ctx, writer, db, "doc", "writer")
	if err != nil {
		t.Fatalf("writer after the fenced transaction: %v", err)
	}
	if w.Token <= r.Token {
		t.Fatalf("writer's token %d not above the reader's %d", w.Token, r.Token)
	}
	if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, r) }); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("the reader's fence after the writer's grant: %v; want ErrNotHeld", err)
	}
}

// A writer waiting in the queue is not overtaken by later readers: they are
// refused as queued, and the last reader's release hands the key to it.
func TestQueuedWriterIsNotOvertakenByReaders(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: time.Second})
	r1, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "r1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := testdb.Wait(wctx, lk, db, "cfg", "writer")
		got <- err
	}()
	if !testdb.Within(10*time.Second, func() bool {
		var n int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'cfg'`).Scan(&n)
		return n == 1
	}) {
		t.Fatal("the writer never queued")
	}
	var held *locker.Error
	if _, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "r2"})); !errors.As(err, &held) || !held.Queued {
		t.Fatalf("a reader after a queued writer: %v; want refused as queued", err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, r1)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the writer's wait: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the writer was not granted the key after the last reader's release")
	}
}

func TestInvalidPermits(t *testing.T) {
	t.Parallel()
	lk := testdb.Locker(t, locker.Config{})
	for _, n := range []int{0, -1, locker.MaxPermits + 1} {
		if _, err := testdb.One(lk.Acquire(context.Background(), nil, locker.Request{Keys: []locker.Key{{Name: "k", Mode: locker.ModeSemaphore, Permits: n}}, Owner: "o"})); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("%d permits: %v; want ErrInvalidPermits", n, err)
		}
	}
}
