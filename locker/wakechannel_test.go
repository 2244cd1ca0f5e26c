package locker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// process is one process's waiting side: a Notifier on a LISTEN connection
// of its own, what that connection received, and a Locker whose waiters it
// serves. WaitRecheck is long, so only a NOTIFY explains a quick wake-up.
type waitingProcess struct {
	n     *locker.Notifier
	lk    *locker.Locker
	mu    sync.Mutex
	heard []*pgconn.Notification
}

func startProcess(t *testing.T, db *pgxpool.Pool) *waitingProcess {
	t.Helper()
	p := &waitingProcess{n: locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(db.Config().ConnConfig)})}
	locker.OnHeard(p.n, func(note *pgconn.Notification) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.heard = append(p.heard, note)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testdb.Eventually(t, 10*time.Second, "the notifier listening", p.n.Live)
	p.lk = testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: p.n, WaitRecheck: time.Minute})
	return p
}

// heardAbout returns what p's LISTEN connection received about key, once
// it has received a marker (of its own: a random key) sent after every
// call the test made: a listener
// receives notifications in commit order, so nothing sent before the
// marker can still be on its way.
func (p *waitingProcess) heardAbout(t *testing.T, db *pgxpool.Pool, key string) []pgconn.Notification {
	t.Helper()
	marker := fmt.Sprintf(`{"schema": "marker", "key": %q}`, store.NewWakeChannel())
	if _, err := db.Exec(context.Background(), `SELECT pg_notify($1, $2)`, locker.WakeChannel(p.n), marker); err != nil {
		t.Fatal(err)
	}
	var about []pgconn.Notification
	testdb.Eventually(t, 10*time.Second, "the marker heard", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		about = nil
		for _, note := range p.heard {
			if note.Payload == marker {
				return true
			}
			if h, err := store.ParseWake(note.Payload); err == nil && h.Key == key {
				about = append(about, *note)
			}
		}
		return false
	})
	return about
}

// wakeChannelOf is the channel waiter owner's record on key names.
func wakeChannelOf(t *testing.T, db *pgxpool.Pool, key, owner string) string {
	t.Helper()
	var channel *string
	if err := db.QueryRow(context.Background(), `SELECT wake_channel FROM distributed_lock_waiter
		WHERE lock_key = $1 AND owner_id = $2`, key, owner).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	if channel == nil {
		return ""
	}
	return *channel
}

// A hand-off reaches the process of the waiter it was made for, and a
// wake-up of a key the processes that wait for it: two processes waiting
// for different keys never hear of each other's keys.
func TestWakeUpsReachOnlyTheirProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	a, b := startProcess(t, db), startProcess(t, db)
	if locker.WakeChannel(a.n) == locker.WakeChannel(b.n) {
		t.Fatalf("two Notifiers share the channel %s", locker.WakeChannel(a.n))
	}
	holder := testdb.Locker(t, locker.Config{TTL: time.Minute})
	onA := testdb.MustAcquire(t, holder, db, "a-key", "holder")
	onB := testdb.MustAcquire(t, holder, db, "b-key", "holder")

	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	gotA := testdb.AcquireAsync(waitCtx, a.lk, db, "a-key", "waiter-a")
	gotB := testdb.AcquireAsync(waitCtx, b.lk, db, "b-key", "waiter-b")
	testdb.WaitForWaiter(t, db, "a-key", "waiter-a")
	testdb.WaitForWaiter(t, db, "b-key", "waiter-b")
	if got := wakeChannelOf(t, db, "a-key", "waiter-a"); got != locker.WakeChannel(a.n) {
		t.Fatalf("a's waiter record names wake channel %q; want its Notifier's %q", got, locker.WakeChannel(a.n))
	}
	if got := wakeChannelOf(t, db, "b-key", "waiter-b"); got != locker.WakeChannel(b.n) {
		t.Fatalf("b's waiter record names wake channel %q; want its Notifier's %q", got, locker.WakeChannel(b.n))
	}

	// A release hands a-key off: only a hears it.
	if _, err := testdb.One(holder.Release(ctx, db, onA)); err != nil {
		t.Fatal(err)
	}
	if r := <-gotA; r.Err != nil || r.Lease.Owner != "waiter-a" {
		t.Fatalf("a's waiter got %+v, %v; want the hand-off", r.Lease, r.Err)
	}
	if heard := a.heardAbout(t, db, "a-key"); len(heard) != 1 {
		t.Errorf("a heard %+v about its key; want its hand-off, once", heard)
	}
	if heard := b.heardAbout(t, db, "a-key"); len(heard) != 0 {
		t.Errorf("b heard %+v about a's key; want nothing", heard)
	}

	// An operator's force-expire of b-key hands nothing off: it wakes the
	// key's waiters, whose check takes the lapsed key. Only b hears it.
	if _, err := (operator.Operator{}).ForceExpire(ctx, db, "b-key", onB.Token); err != nil {
		t.Fatal(err)
	}
	if r := <-gotB; r.Err != nil || r.Lease.Owner != "waiter-b" {
		t.Fatalf("b's waiter got %+v, %v; want the key, woken by the force-expire", r.Lease, r.Err)
	}
	if heard := b.heardAbout(t, db, "b-key"); len(heard) == 0 {
		t.Errorf("b heard nothing about its key; want the wake-up and its own hand-off")
	}
	if heard := a.heardAbout(t, db, "b-key"); len(heard) != 0 {
		t.Errorf("a heard %+v about b's key; want nothing", heard)
	}
}

// A hand-off is heard by the process of the waiter it grants and by the
// process of the waiter now first in line, which learns when the new lease
// ends at the latest; a process further back hears nothing.
func TestHandOffReachesTheNextInLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	first, next, last := startProcess(t, db), startProcess(t, db), startProcess(t, db)
	holder := testdb.Locker(t, locker.Config{TTL: time.Minute})
	held := testdb.MustAcquire(t, holder, db, "k", "holder")

	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	gotFirst := testdb.AcquireAsync(waitCtx, first.lk, db, "k", "first")
	testdb.WaitForWaiter(t, db, "k", "first")
	testdb.AcquireAsync(waitCtx, next.lk, db, "k", "next")
	testdb.WaitForWaiter(t, db, "k", "next")
	testdb.AcquireAsync(waitCtx, last.lk, db, "k", "last")
	testdb.WaitForWaiter(t, db, "k", "last")

	if _, err := testdb.One(holder.Release(ctx, db, held)); err != nil {
		t.Fatal(err)
	}
	r := <-gotFirst
	if r.Err != nil || r.Lease.Owner != "first" {
		t.Fatalf("the first waiter got %+v, %v; want the hand-off", r.Lease, r.Err)
	}
	heardFirst, heardNext := first.heardAbout(t, db, "k"), next.heardAbout(t, db, "k")
	if len(heardFirst) != 1 || heardFirst[0].Channel != locker.WakeChannel(first.n) {
		t.Fatalf("the first waiter's process heard %+v; want its hand-off, once, on %s", heardFirst, locker.WakeChannel(first.n))
	}
	if len(heardNext) != 1 || heardNext[0].Channel != locker.WakeChannel(next.n) || heardNext[0].Payload != heardFirst[0].Payload {
		t.Errorf("the next one's process heard %+v; want the same hand-off (%s), once, on %s",
			heardNext, heardFirst[0].Payload, locker.WakeChannel(next.n))
	}
	if heard := last.heardAbout(t, db, "k"); len(heard) != 0 {
		t.Errorf("the last one's process heard %+v; want nothing", heard)
	}
}

// A client that names no wake channel (one in another language, or a
// waiter without a Notifier) is announced on the shared channel, as
// before any process had one of its own.
func TestHandOffWithoutWakeChannelUsesTheSharedOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	listen, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Release()
	if _, err := listen.Exec(ctx, "LISTEN "+store.HandOffChannel); err != nil {
		t.Fatal(err)
	}
	holder := testdb.Locker(t, locker.Config{TTL: time.Minute})
	held := testdb.MustAcquire(t, holder, db, "k", "holder")
	q, found, err := store.Enqueue(ctx, db, store.QueueParams{
		GrantParams: store.GrantParams{Key: "k", Owner: "plain", TTL: time.Minute},
		ClaimWindow: 5 * time.Second, SeenFor: time.Minute,
	})
	if err != nil || !found || q.WaiterID == 0 {
		t.Fatalf("enqueue: %+v, %v, %v", q, found, err)
	}
	if got := wakeChannelOf(t, db, "k", "plain"); got != "" {
		t.Fatalf("the record names wake channel %q; want none", got)
	}
	if _, err := testdb.One(holder.Release(ctx, db, held)); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		note, err := listen.Conn().WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("no hand-off on %s: %v", store.HandOffChannel, err)
		}
		h, err := store.ParseWake(note.Payload)
		if err == nil && h.Schema != schema {
			continue // another test's schema on the same server: the channel is the database's
		}
		if err != nil || h.WaiterID != q.WaiterID || h.Owner != "plain" {
			t.Fatalf("hand-off %q (%v); want the grant to waiter %d", note.Payload, err, q.WaiterID)
		}
		return
	}
}

// The protocol refuses a wake channel that LISTEN and pg_notify could name
// differently, or not at all, before it queues or grants anything.
func TestEnqueueRefusesABadWakeChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, channel := range []string{"Upper_case", "has space", "9starts_with_digit", store.WakeChannelPrefix + fmt.Sprintf("%045d", 0)} {
		_, _, err := store.Enqueue(ctx, db, store.QueueParams{
			GrantParams: store.GrantParams{Key: "k", Owner: "o", TTL: time.Minute},
			ClaimWindow: time.Second, SeenFor: time.Minute, WakeChannel: channel,
		})
		if err == nil {
			t.Errorf("enqueue with wake channel %q (%d bytes) succeeded; want it refused", channel, len(channel))
		}
	}
	if n := waiterRows(t, db, "k"); n != 0 {
		t.Errorf("%d waiter records after refused enqueues; want none", n)
	}
	if _, found, err := store.Get[lockdb.LockInfo](ctx, db, "k"); err != nil || found {
		t.Errorf("the key was granted by a refused enqueue (%v, %v)", found, err)
	}
}

// A hand-off is heard by the granted waiter's process and the next in
// line's. When both have died (the granted lease unclaimed, the next one's
// record still live for a while), no NOTIFY is left to wake the waiter
// behind them: its Notifier's heartbeat finds it at the head of a key
// nobody holds, and its check takes the key, long before the end of the
// lease it last saw.
func TestNextInLineServedWhenTheTwoAheadDied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	holder := testdb.Locker(t, locker.Config{TTL: time.Minute})
	held := testdb.MustAcquire(t, holder, db, "k", "holder")
	// Two waiters whose processes are gone: records naming channels nobody
	// listens on; the second lapses soon after the first is handed the key.
	for _, dead := range []struct {
		owner   string
		seenFor time.Duration
	}{{"dead-first", 30 * time.Second}, {"dead-next", 2 * time.Second}} {
		if _, _, err := store.Enqueue(ctx, db, store.QueueParams{
			GrantParams: store.GrantParams{Key: "k", Owner: dead.owner, TTL: time.Minute},
			ClaimWindow: 500 * time.Millisecond, SeenFor: dead.seenFor, WakeChannel: store.NewWakeChannel(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	p := startProcess(t, db)
	// A heartbeat every 1.5 s; a NOTIFY would wake it at once, and its own
	// timer only at the end of the holder's lease, a minute away.
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: p.n, WaitRecheck: 3 * time.Second})
	waitCtx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	got := testdb.AcquireAsync(waitCtx, lk, db, "k", "alive")
	testdb.WaitForWaiter(t, db, "k", "alive")
	time.Sleep(locker.DeadlockCheck + 100*time.Millisecond) // past its one early check
	if _, err := testdb.One(holder.Release(ctx, db, held)); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	r := <-got
	if r.Err != nil || r.Lease.Owner != "alive" {
		t.Fatalf("the live waiter got %+v, %v; want the key", r.Lease, r.Err)
	}
	if waited := r.At.Sub(released); waited > 15*time.Second {
		t.Fatalf("the live waiter got the key %s after the release; want it soon after the dead ones' claim window and record ran out", waited)
	} else {
		t.Logf("served %s after the release", waited.Round(time.Millisecond))
	}
}
