package locker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// readWrite is the set "read config shared, write account:7 exclusive".
func readWrite() []locker.Key {
	return []locker.Key{{Name: "config", Mode: locker.ModeShared}, {Name: "account:7"}}
}

// A set may mix modes: one attempt reads one key shared beside its other
// readers and writes another, all or none; each lease carries its mode and
// is renewed and released with the set.
func TestMixedSetTriedAllOrNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	reader, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "config", Mode: locker.ModeShared}}, Owner: "reader"}))
	if err != nil {
		t.Fatal(err)
	}

	leases, err := lk.Acquire(ctx, db, locker.Request{Keys: readWrite(), Owner: "me"})
	if err != nil || len(leases) != 2 {
		t.Fatalf("the mixed set = %v, %v; want both keys", leases, err)
	}
	if leases[0].Key != "config" || leases[0].Mode != locker.ModeShared || leases[1].Key != "account:7" || leases[1].Mode == locker.ModeShared {
		t.Fatalf("leases %+v; want config shared and account:7 exclusive, in the request's order", leases)
	}
	if h := holding(t, db, "account:7"); h != "me" {
		t.Errorf("account:7 held by %q; want me", h)
	}
	if leases[0].Token <= reader.Token {
		t.Errorf("the set's shared token %d is not above the reader's %d", leases[0].Token, reader.Token)
	}
	// A writer of config is refused while either reader holds it.
	if _, err := testdb.Try(ctx, lk, db, "config", "writer"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("a writer beside the set's reader = %v; want ErrHeld", err)
	}
	// Renewed together, each lease its own token.
	renewed, err := lk.Renew(ctx, db, leases...)
	if err != nil || len(renewed) != 2 || renewed[0].Token != leases[0].Token || renewed[1].Token != leases[1].Token {
		t.Fatalf("renewing the mixed set = %+v, %v; want both renewed, same tokens", renewed, err)
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, leases...)); err != nil {
		t.Fatal(err)
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, reader)); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, lk, db, "config", "writer"); err != nil {
		t.Fatalf("a writer once both readers released = %v; want granted", err)
	}

	// All or none: config held exclusively now refuses the set, and
	// account:7 (sorted before it) is not kept.
	if _, err := lk.Acquire(ctx, db, locker.Request{Keys: readWrite(), Owner: "me"}); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("the set with config held exclusively = %v; want ErrHeld", err)
	}
	if h := holding(t, db, "account:7"); h != "" {
		t.Errorf("account:7 held by %q after the set was refused; want nobody", h)
	}
}

// A mixed set waits for its keys and is handed them together; a writer
// queued behind the set's reader waits for the set's release.
func TestMixedSetWaitsAndAWriterWaitsBehindIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	acct := testdb.MustAcquire(t, lk, db, "account:7", "holder")

	type result struct {
		leases []locker.Lease
		err    error
	}
	set := make(chan result, 1)
	go func() {
		leases, err := lk.Acquire(ctx, db, locker.Request{Keys: readWrite(), Owner: "set", Wait: locker.WaitForever})
		set <- result{leases, err}
	}()
	testdb.WaitForWaiter(t, db, "account:7", "set")
	testdb.WaitForWaiter(t, db, "config", "set")
	if h := holding(t, db, "config"); h != "" {
		t.Fatalf("config held by %q while the set waits for account:7; want nothing held in part", h)
	}

	if err := testdb.ErrOf(lk.Release(ctx, db, acct)); err != nil {
		t.Fatal(err)
	}
	r := <-set
	if r.err != nil || len(r.leases) != 2 || r.leases[0].Mode != locker.ModeShared {
		t.Fatalf("the set = %+v, %v; want config shared and account:7", r.leases, r.err)
	}
	if h := holding(t, db, "account:7"); h != "set" {
		t.Errorf("account:7 held by %q; want the set", h)
	}

	writer := testdb.AcquireAsync(ctx, lk, db, "config", "writer")
	testdb.WaitForWaiter(t, db, "config", "writer")
	select {
	case w := <-writer:
		t.Fatalf("the writer got config beside the set's reader: %+v, %v", w.Lease, w.Err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, r.leases...)); err != nil {
		t.Fatal(err)
	}
	if w := <-writer; w.Err != nil || w.Lease.Token <= r.leases[0].Token {
		t.Fatalf("the writer = %+v, %v; want config after the set's reader, with a larger token", w.Lease, w.Err)
	}
}

// The wait-for graph follows modes across a set: a set reading config
// waits for a writer of config, who waits for the set's owner's key: a
// deadlock, refused at once.
func TestMixedSetDeadlockAcrossModes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	testdb.MustAcquire(t, lkA, poolA, "config", "A")
	testdb.MustAcquire(t, lkB, poolB, "ledger", "B")
	a := testdb.AcquireAsync(ctx, lkA, poolA, "ledger", "A")
	testdb.WaitForWaiter(t, db, "ledger", "A")

	_, err := lkB.Acquire(ctx, poolB, locker.Request{Keys: []locker.Key{{Name: "config", Mode: locker.ModeShared}, {Name: "z"}},
		Owner: "B", Wait: locker.WaitForever})
	var de *locker.Error
	if !errors.As(err, &de) || !errors.Is(err, locker.ErrDeadlock) || fmt.Sprint(de.Keys) != "[config z]" {
		t.Fatalf("B's mixed set = %v; want a deadlock for config and z", err)
	}
	select {
	case r := <-a:
		t.Fatalf("A's wait ended: %+v, %v", r.Lease, r.Err)
	default:
	}
}

// Readers in a set and shared holders wait for nobody among themselves:
// no deadlock where only shared leases meet.
func TestMixedSetReadersAreNoDeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lkA, poolA := process(t, db)
	lkB, poolB := process(t, db)
	shared := func(name string) []locker.Key { return []locker.Key{{Name: name, Mode: locker.ModeShared}} }
	if _, err := testdb.One(lkA.Acquire(ctx, poolA, locker.Request{Keys: shared("config"), Owner: "A"})); err != nil {
		t.Fatal(err)
	}
	testdb.MustAcquire(t, lkB, poolB, "ledger", "B")
	a := testdb.AcquireAsync(ctx, lkA, poolA, "ledger", "A")
	testdb.WaitForWaiter(t, db, "ledger", "A")

	// B reads config beside A: granted at once, A's wait for B's ledger
	// closes no cycle.
	leases, err := lkB.Acquire(ctx, poolB, locker.Request{Keys: append(shared("config"), locker.Key{Name: "z"}), Owner: "B",
		Wait: locker.WaitForever})
	if err != nil || len(leases) != 2 {
		t.Fatalf("B's set = %v, %v; want granted beside A's reader", leases, err)
	}
	select {
	case r := <-a:
		t.Fatalf("A's wait ended: %+v, %v", r.Lease, r.Err)
	default:
	}
}
