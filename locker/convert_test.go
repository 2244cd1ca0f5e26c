package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// read asks for key shared for owner, waiting up to wait.
func read(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string, wait time.Duration) (locker.Lease, error) {
	return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeShared}}, Owner: owner, Wait: wait}))
}

func mustRead(t *testing.T, lk *locker.Locker, db locker.DBTX, key, owner string) locker.Lease {
	t.Helper()
	lease, err := read(context.Background(), lk, db, key, owner, 0)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

func convertLocker(t *testing.T, db *pgxpool.Pool) *locker.Locker {
	return testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
}

// A downgrade admits the readers queued at the head at once, beside the
// holder, each above the exclusive token; the writer queued behind them
// does not slip in, and gets the key only when every reader has gone.
func TestDowngradeAdmitsQueuedReadersButNoWriter(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := convertLocker(t, db)
	held := testdb.MustAcquire(t, lk, db, "doc", "editor")
	r1 := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return read(ctx, lk, db, "doc", "r1", locker.WaitForever)
	})
	queued(t, db, "doc", 1)
	r2 := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return read(ctx, lk, db, "doc", "r2", locker.WaitForever)
	})
	queued(t, db, "doc", 2)
	writer := waitFor(func(ctx context.Context) (locker.Lease, error) { return testdb.Wait(ctx, lk, db, "doc", "writer") })
	queued(t, db, "doc", 3)

	shared, err := lk.Downgrade(ctx, db, held)
	if err != nil {
		t.Fatal(err)
	}
	if shared.Mode != locker.ModeShared || shared.Token <= held.Token || shared.Owner != "editor" {
		t.Fatalf("downgraded to %+v from token %d; want editor's shared lease with a larger token", shared, held.Token)
	}
	readers := []locker.Lease{granted(t, "r1", r1), granted(t, "r2", r2)}
	for _, r := range readers {
		if r.Token <= held.Token {
			t.Errorf("%s's token %d is not above the exclusive %d", r.Owner, r.Token, held.Token)
		}
	}
	pending(t, "the writer, while the readers read", writer)
	if _, err := lk.Renew(ctx, db, held); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("renew of the exclusive lease after the downgrade: %v; want ErrNotHeld", err)
	}
	if _, err := lk.Downgrade(ctx, db, held); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("a second downgrade of it: %v; want ErrNotHeld", err)
	}
	for _, r := range append(readers, shared) {
		pending(t, "the writer, while "+r.Owner+" reads", writer)
		if _, err := lk.Release(ctx, db, r); err != nil {
			t.Fatal(err)
		}
	}
	if w := granted(t, "the writer", writer); w.Token <= max(readers[0].Token, readers[1].Token, shared.Token) {
		t.Errorf("the writer's token %d is not above the readers'", w.Token)
	}
}

// A writer at the head of the queue stays ahead of the readers behind it
// through a downgrade: they are not admitted past it.
func TestDowngradeKeepsAWriterAtTheHeadAhead(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := convertLocker(t, db)
	held := testdb.MustAcquire(t, lk, db, "doc", "editor")
	writer := waitFor(func(ctx context.Context) (locker.Lease, error) { return testdb.Wait(ctx, lk, db, "doc", "writer") })
	queued(t, db, "doc", 1)
	reader := waitFor(func(ctx context.Context) (locker.Lease, error) {
		return read(ctx, lk, db, "doc", "r1", locker.WaitForever)
	})
	queued(t, db, "doc", 2)
	shared, err := lk.Downgrade(ctx, db, held)
	if err != nil {
		t.Fatal(err)
	}
	pending(t, "the writer, while the downgraded lease runs", writer)
	pending(t, "the reader behind the writer", reader)
	if _, err := lk.Release(ctx, db, shared); err != nil {
		t.Fatal(err)
	}
	w := granted(t, "the writer", writer)
	pending(t, "the reader, while the writer writes", reader)
	if _, err := lk.Release(ctx, db, w); err != nil {
		t.Fatal(err)
	}
	granted(t, "the reader", reader)
}

// The only reader upgrades at once: a new exclusive lease with a larger
// token; its shared lease is gone, and readers are refused.
func TestUpgradeAtOnceWhenAlone(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := convertLocker(t, db)
	shared := mustRead(t, lk, db, "doc", "r1")
	excl, err := lk.Upgrade(ctx, db, shared, 0)
	if err != nil {
		t.Fatal(err)
	}
	if excl.Token <= shared.Token || excl.Owner != "r1" || excl.Mode == locker.ModeShared {
		t.Fatalf("upgraded to %+v from token %d; want r1's exclusive lease with a larger token", excl, shared.Token)
	}
	if _, err := lk.Renew(ctx, db, shared); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("renew of the shared lease after the upgrade: %v; want ErrNotHeld", err)
	}
	if _, err := read(ctx, lk, db, "doc", "r2", 0); !errors.Is(err, locker.ErrHeld) {
		t.Errorf("a reader beside the upgraded lease: %v; want ErrHeld", err)
	}
	if _, err := lk.Renew(ctx, db, excl); err != nil {
		t.Errorf("renew of the upgraded lease: %v", err)
	}
	if _, err := lk.Upgrade(ctx, db, excl, 0); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("upgrade of an exclusive lease: %v; want ErrNotHeld", err)
	}
}

// An upgrade beside another holder waits for it, keeping its lease; a
// holder who comes later queues behind it, even with a permit free; when
// the other holder releases, the upgrade gets the key with a token above
// both leases'. The same for a shared key and a semaphore's permits.
func TestUpgradeWaitsForTheOtherHolder(t *testing.T) {
	t.Parallel()
	for _, kind := range []locker.Key{{Mode: locker.ModeShared}, {Mode: locker.ModeSemaphore, Permits: 3}} {
		t.Run(kind.Mode, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			ctx := context.Background()
			lk := convertLocker(t, db)
			hold := func(ctx context.Context, owner string, wait time.Duration) (locker.Lease, error) {
				key := kind
				key.Name = "doc"
				return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{key}, Owner: owner, Wait: wait}))
			}
			r1, err := hold(ctx, "r1", 0)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := hold(ctx, "r2", 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lk.Upgrade(ctx, db, r1, 0); !errors.Is(err, locker.ErrHeld) {
				t.Fatalf("an upgrade without waiting beside r2: %v; want ErrHeld", err)
			}
			up := waitFor(func(ctx context.Context) (locker.Lease, error) { return lk.Upgrade(ctx, db, r1, locker.WaitForever) })
			queued(t, db, "doc", 1)
			if _, err := hold(ctx, "r3", 0); !errors.Is(err, locker.ErrHeld) {
				t.Errorf("a holder after the upgrade queued: %v; want ErrHeld (queued behind it)", err)
			}
			late := waitFor(func(ctx context.Context) (locker.Lease, error) { return hold(ctx, "r3", locker.WaitForever) })
			queued(t, db, "doc", 2)
			pending(t, "the upgrade, while r2 holds", up)
			if _, err := lk.Renew(ctx, db, r1); err != nil {
				t.Errorf("r1's lease while its upgrade waits: %v", err)
			}
			if _, err := lk.Release(ctx, db, r2); err != nil {
				t.Fatal(err)
			}
			excl := granted(t, "the upgrade", up)
			if excl.Token <= max(r1.Token, r2.Token) || excl.Owner != "r1" || excl.Mode == kind.Mode {
				t.Errorf("upgraded to %+v; want r1's exclusive lease with a token above %d and %d", excl, r1.Token, r2.Token)
			}
			if _, err := lk.Renew(ctx, db, r1); !errors.Is(err, locker.ErrNotHeld) {
				t.Errorf("r1's %s lease after the upgrade: %v; want ErrNotHeld", kind.Mode, err)
			}
			pending(t, "the later holder, while the upgraded lease runs", late)
			if _, err := lk.Release(ctx, db, excl); err != nil {
				t.Fatal(err)
			}
			if r3 := granted(t, "the later holder", late); r3.Token <= excl.Token || r3.Mode != kind.Mode {
				t.Errorf("r3 got %+v; want a %s lease with a token above the upgraded %d", r3, kind.Mode, excl.Token)
			}
		})
	}
}

// Two readers that both upgrade wait for each other: the second is
// refused with ErrDeadlock at once, keeping its shared lease; the first
// gets the key once the second releases.
func TestDoubleUpgradeIsADeadlock(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	lk := convertLocker(t, db)
	r1, r2 := mustRead(t, lk, db, "doc", "r1"), mustRead(t, lk, db, "doc", "r2")
	first := waitFor(func(ctx context.Context) (locker.Lease, error) { return lk.Upgrade(ctx, db, r1, locker.WaitForever) })
	queued(t, db, "doc", 1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := lk.Upgrade(wctx, db, r2, locker.WaitForever)
	var e *locker.Error
	if !errors.Is(err, locker.ErrDeadlock) || !errors.As(err, &e) || len(e.Cycle) != 2 {
		t.Fatalf("the second upgrade: %v; want ErrDeadlock naming a cycle of two", err)
	}
	if wctx.Err() != nil {
		t.Fatal("the deadlock was found only after the wait's bound")
	}
	pending(t, "the first upgrade, while r2 still reads", first)
	if _, err := lk.Release(ctx, db, r2); err != nil {
		t.Fatalf("r2's shared lease after its refused upgrade: %v", err)
	}
	granted(t, "the first upgrade", first)
}
