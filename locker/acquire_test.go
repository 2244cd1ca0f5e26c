package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func TestTryAcquireOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})

	first, err := testdb.Try(ctx, lk, db, "k", "a")
	if err != nil || first.Outcome != locker.Acquired || first.Token <= 0 {
		t.Fatalf("first acquire = %+v, %v; want acquired with a token", first, err)
	}

	again, err := testdb.Try(ctx, lk, db, "k", "a")
	if err != nil || again.Outcome != locker.Renewed || again.Token != first.Token || !again.ExpiresAt.After(first.ExpiresAt) {
		t.Fatalf("re-acquire by holder = %+v, %v; want renewed, same token %d, later expiry", again, err, first.Token)
	}

	_, err = testdb.Try(ctx, lk, db, "k", "b")
	var held *locker.Error
	if !errors.As(err, &held) || !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("acquire by other = %v; want *HeldError", err)
	}
	if held.Owner != "a" || held.Token != first.Token || held.Remaining <= 0 || held.Remaining > time.Minute {
		t.Fatalf("held error = %+v; want holder a, token %d, remaining in (0, 1m]", held, first.Token)
	}

	testdb.ExpireLease(t, db, "k")
	stolen, err := testdb.Try(ctx, lk, db, "k", "b")
	if err != nil || stolen.Outcome != locker.Stolen || stolen.Token <= first.Token {
		t.Fatalf("acquire after expiry = %+v, %v; want stolen with token > %d", stolen, err, first.Token)
	}

	released, err := testdb.One(lk.Release(ctx, db, stolen))
	if err != nil || released.Outcome != locker.Released {
		t.Fatalf("release = %+v, %v", released, err)
	}
	row, found, err := store.Get[lockdb.LockInfo](ctx, db, "k")
	if err != nil || !found || row.State() != lockdb.StateFree || row.Owner != "b" {
		t.Fatalf("row after release = %+v found=%v err=%v; want kept, free, last holder b", row, found, err)
	}

	reacquired, err := testdb.Try(ctx, lk, db, "k", "a")
	if err != nil || reacquired.Outcome != locker.Acquired || reacquired.Token <= stolen.Token {
		t.Fatalf("acquire of a free row = %+v, %v; want acquired with token > %d", reacquired, err, stolen.Token)
	}
}

func TestTryAcquireRaceOnNewKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})

	const racers = 16
	for round := range 20 {
		key := "race-" + string(rune('a'+round))
		var wg sync.WaitGroup
		results := make([]error, racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				_, results[i] = testdb.Try(ctx, lk, db, key, "owner-"+string(rune('A'+i)))
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for _, err := range results {
			switch {
			case err == nil:
				winners++
			case errors.Is(err, locker.ErrHeld):
			default:
				t.Fatalf("racer got %v; want success or ErrHeld only", err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
	}
}

// A free key that another owner's grant is taking right now (its
// transaction is still open) is refused at once as busy: one statement,
// no spinning on the row, and no time left to wait for.
func TestTryAcquireBusyKeyIsOneAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first, err := testdb.Try(ctx, lk, db, "k", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, first)); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := testdb.Try(ctx, lk, tx, "k", "b"); err != nil {
		t.Fatal(err)
	}

	counted := &testdb.Statements{DBTX: db}
	_, err = testdb.Try(ctx, lk, counted, "k", "c")
	var held *locker.Error
	if !errors.As(err, &held) || held.Remaining != 0 || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("acquire while b's grant is open = %v; want a busy HeldError with no remaining time", err)
	}
	if counted.N != 1 {
		t.Errorf("the refusal took %d statements; want 1", counted.N)
	}
}
