package locker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A lease whose Keepalive was stopped and that is bound again at once (a
// holder restarting its keepalive, or retrying a binding whose reply was
// lost) stays kept: the drop the stop asked of the next heartbeat is called
// off, so that heartbeat does not unbind it while the new Keepalive counts
// on it. Nobody is granted the key while it vouches for it.
func TestLeaseBoundAgainAfterStopStaysKept(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	first := s.Keepalive(context.Background(), lease)
	waitBound(t, db, s, "a")
	first.Stop()
	again := s.Keepalive(context.Background(), lease)
	p := watchPromise(t, again)
	if takenAfterPromise(t, lk, db, "a", p, 3*sessTTL) {
		t.Fatalf("a was granted to another owner while bound again (keepalive: %v)", context.Cause(again.Context()))
	}
	if err := context.Cause(again.Context()); err != nil {
		t.Fatalf("the keepalive bound again ended: %v", err)
	}
}

// A heartbeat that found a bound lease ended, and whose reply was lost,
// hides nothing: the next heartbeat names the lease, is told it did not
// keep it, and its Keepalive ends, while the session goes on.
func TestLeaseEndedWhenAHeartbeatReplyWasLostIsStillReported(t *testing.T) {
	t.Parallel()
	lk, pool, db := faultyLocker(t)
	s := openOn(t, lk, db, "worker-1")
	ka := s.Keepalive(context.Background(), testdb.MustAcquire(t, lk, pool, "a", "worker-1"))
	// Right after a heartbeat, so that the next one is the first to find
	// the lease ended.
	db.nextBeat(t)
	if _, err := (operator.Operator{}).ForceExpire(context.Background(), pool, "a", ka.Leases()[0].Token); err != nil {
		t.Fatal(err)
	}
	db.loseBeatReply.Store(true)
	waitDone(t, ka.Context(), 4*sessEvery)
	if db.loseBeatReply.Load() {
		t.Fatal("the keepalive ended before a heartbeat ran and lost its reply")
	}
	wantLeaseLostNotSession(t, ka, s)
}

// A lease bound a second time in one session, while its first Keepalive
// still runs, is kept by the second: the first ends at once, rather than
// run on with nothing to keep it, and the lease stays held.
func TestLeaseBoundTwiceInOneSessionEndsTheFirstKeepalive(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	first := s.Keepalive(context.Background(), lease)
	second := s.Keepalive(context.Background(), lease)
	waitDone(t, first.Context(), sessEvery)
	wantLeaseLostNotSession(t, first, s)
	outliveExpiry(t, db, s)
	if err := context.Cause(second.Context()); err != nil {
		t.Fatalf("the second keepalive ended: %v", err)
	}
	if row := liveRow(t, db, "a"); row.State() != lockdb.StateHeld {
		t.Fatalf("a is %s; want it held by the second keepalive", row.State())
	}
}

// A lease bound to a session already lost is not sent to it: its Keepalive
// ends at once with the session's loss, and the lease keeps its grant's
// word, which no binding can have cut short.
func TestBindingToALostSessionSendsNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	ka := s.Keepalive(context.Background(), lease)
	if err := context.Cause(ka.Context()); !errors.Is(err, locker.ErrSessionLost) {
		t.Fatalf("keepalive ended with %v; want the session lost", err)
	}
	if left := ka.Leases()[0].ValidFor(); left < lease.ValidFor()-50*time.Millisecond {
		t.Fatalf("ValidFor %s after a binding that was never sent; want the grant's %s", left, lease.ValidFor())
	}
}

// A binding answered after its session was lost (the session's trust
// window ended while the answer was on its way) ended its leases with the
// session as the binding read it: its Keepalive ends with the session's
// loss, and its ValidFor promises no more than that, not the grant's TTL.
func TestBindingAnsweredAfterItsSessionWasLost(t *testing.T) {
	t.Parallel()
	lk, pool, db := faultyLocker(t)
	s := openOn(t, lk, db, "worker-1")
	db.nextBeat(t)
	// No later heartbeat reaches the database, however slow what follows
	// is: that one stays the session's last word.
	beatsHeld := make(chan struct{})
	db.holdBeats.Store(&beatsHeld)
	defer close(beatsHeld)
	afterLastBeat(t, pool, s, sessEvery*2/3) // the grant well after the session's last word
	lease := testdb.MustAcquire(t, lk, pool, "a", "worker-1")
	held := make(chan struct{})
	db.holdBindReply.Store(&held)
	done := make(chan *locker.Keepalive)
	go func() { done <- s.Keepalive(context.Background(), lease) }()
	<-db.bindRan
	db.cut.Store(true) // no heartbeat reaches the database: the session is lost
	waitDone(t, s.Context(), 2*sessTTL)
	close(held)
	ka := <-done
	if err := context.Cause(ka.Context()); !errors.Is(err, locker.ErrSessionLost) {
		t.Fatalf("keepalive ended with %v; want the session lost", err)
	}
	// Both are read now; on a slow machine the grant's may be nearly spent
	// too, and a ValidFor of 0 promises nothing at all.
	if promised, grant := ka.Leases()[0].ValidFor(), lease.ValidFor(); promised > 0 && promised > grant-sessEvery/2 {
		t.Fatalf("ValidFor %s; want the session's word, shorter than the grant's %s", promised, grant)
	}
}

// A lease its owner binds to a second session is no longer the first's to
// keep: the first session's next heartbeat, which names it, ends its
// Keepalive. When the second session then stops heartbeating, its lease
// lapses with it, and nobody is granted it before the first Keepalive's
// ValidFor runs out.
func TestLeaseBoundToAnotherSessionEndsTheFirstKeepalive(t *testing.T) {
	t.Parallel()
	lk, pool, second := faultyLocker(t)
	s1 := openSession(t, lk, pool, "worker-1")
	k1 := s1.Keepalive(context.Background(), testdb.MustAcquire(t, lk, pool, "a", "worker-1"))
	p := watchPromise(t, k1)
	waitBound(t, pool, s1, "a")
	s2 := openOn(t, lk, second, "worker-1")
	k2 := s2.Keepalive(context.Background(), k1.Leases()[0])
	if err := context.Cause(k2.Context()); err != nil {
		t.Fatal(err)
	}
	waitDone(t, k1.Context(), 3*sessEvery)
	wantLeaseLostNotSession(t, k1, s1)
	// The second session heartbeats once more, then its process is cut
	// off: the lease lapses with it.
	second.nextBeat(t)
	second.cut.Store(true)
	if !takenAfterPromise(t, lk, pool, "a", p, 3*sessTTL) {
		t.Fatal("a was never granted to another owner after the second session lapsed")
	}
}

// A heartbeat still out when the session's trust window ends (a call its
// context does not stop, on a stalled network) loses the session and ends
// every bound Keepalive then, with time left on their leases, not when the
// call comes back.
func TestSessionLostWhenItsTrustEndsWithAHeartbeatOut(t *testing.T) {
	t.Parallel()
	lk, pool, db := faultyLocker(t)
	s := openOn(t, lk, db, "worker-1")
	ka := s.Keepalive(context.Background(), testdb.MustAcquire(t, lk, pool, "a", "worker-1"))
	late := watchLate(ka)
	held := make(chan struct{})
	db.holdBeats.Store(&held)
	defer close(held)
	waitDone(t, ka.Context(), 2*sessTTL)
	if !errors.Is(context.Cause(ka.Context()), locker.ErrSessionLost) || !errors.Is(context.Cause(s.Context()), locker.ErrSessionLost) {
		t.Fatalf("keepalive %v, session %v; want both lost with the session", context.Cause(ka.Context()), context.Cause(s.Context()))
	}
	if late.Load() {
		t.Fatal("the keepalive still ran with none of its lease left; want it to end at the session's trust window, before the lease's local deadline")
	}
}

// watchLate watches k until it ends and reports whether it ever ran with
// none of its lease left: it ended past the local deadline. (Read in that
// order, a watcher the scheduler delays sees nothing wrong that did not
// happen; a callback after the end would read the time left too late.)
func watchLate(k *locker.Keepalive) *atomic.Bool {
	var late atomic.Bool
	go func() {
		for {
			left := k.Leases()[0].ValidFor()
			if k.Context().Err() != nil {
				return
			}
			if left <= 0 {
				late.Store(true)
				return
			}
			select { // look again in a millisecond, at once when it ends
			case <-k.Context().Done():
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return &late
}

// A binding that committed but whose reply was lost gave its leases the
// session's expiry, which may come before their grants': the failed
// Keepalive's ValidFor promises no more than that, and nobody is granted
// the key before what it promised (the next heartbeat drops the binding,
// and the lease lapses then).
func TestBindingWhoseReplyWasLostPromisesNoMoreThanTheSession(t *testing.T) {
	t.Parallel()
	lk, pool, db := faultyLocker(t)
	s := openOn(t, lk, db, "worker-1")
	db.nextBeat(t)
	afterLastBeat(t, pool, s, sessEvery*2/3) // the grant well after the session's last word
	lease := testdb.MustAcquire(t, lk, pool, "a", "worker-1")
	db.loseBindReply.Store(true)
	ka := s.Keepalive(context.Background(), lease)
	promised := time.Now().Add(ka.Leases()[0].ValidFor())
	if context.Cause(ka.Context()) == nil || db.loseBindReply.Load() {
		t.Fatalf("keepalive %v; want it ended by the binding's lost reply", context.Cause(ka.Context()))
	}
	if !takenAfterPromise(t, lk, pool, "a", madePromise(promised), 3*sessTTL) {
		t.Fatal("a was never granted to another owner after its binding failed")
	}
}

// A binding that ran before a heartbeat but is answered after it stands on
// the word of the heartbeat before: that heartbeat did not name its lease.
// When heartbeats then fail, its Keepalive ends with time left on the
// lease, at its own trust window if not the session's.
func TestBindingAnsweredAfterAHeartbeatThatDidNotNameIt(t *testing.T) {
	t.Parallel()
	lk, pool, db := faultyLocker(t)
	s := openOn(t, lk, db, "worker-1")
	db.bindAfterBeat.Store(true)
	ka := s.Keepalive(context.Background(), testdb.MustAcquire(t, lk, pool, "a", "worker-1"))
	db.cut.Store(true)
	late := watchLate(ka)
	waitDone(t, ka.Context(), 2*sessTTL)
	if late.Load() {
		t.Fatal("the keepalive still ran with none of its lease left; want it to end before the lease's local deadline")
	}
}

// wantLeaseLostNotSession fails t unless k ended with its lease lost while
// its session s goes on.
func wantLeaseLostNotSession(t *testing.T, k *locker.Keepalive, s *locker.Session) {
	t.Helper()
	if err := context.Cause(k.Context()); !errors.Is(err, locker.ErrLeaseLost) || errors.Is(err, locker.ErrSessionLost) {
		t.Fatalf("keepalive ended with %v; want its lease lost, not its session", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("session: %v", err)
	}
}
