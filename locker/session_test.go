package locker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// The session tests run on the real clock with a short TTL: a session of
// 1.5 s heartbeats every 300 ms, so a lease kept by it outlives its TTL
// several times over in a few seconds.
const (
	sessTTL   = 1500 * time.Millisecond
	sessEvery = 300 * time.Millisecond
)

func sessionLocker(t *testing.T) *locker.Locker {
	return testdb.Locker(t, locker.Config{TTL: sessTTL, RenewEvery: sessEvery})
}

func openSession(t *testing.T, lk *locker.Locker, db *pgxpool.Pool, owner string) *locker.Session {
	t.Helper()
	s, err := lk.OpenSession(context.Background(), db, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// sessionExpiry is the session's expires_at as the database has it.
func sessionExpiry(t *testing.T, db locker.DBTX, id int64) time.Time {
	t.Helper()
	var at time.Time
	if err := db.QueryRow(context.Background(),
		`SELECT expires_at FROM distributed_lock_session WHERE session_id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// waitBound returns once each of keys is bound to s: its lease ends when
// the session does, as its binding made it.
func waitBound(t *testing.T, db locker.DBTX, s *locker.Session, keys ...string) {
	t.Helper()
	testdb.Eventually(t, 2*sessTTL, "the leases bound", func() bool {
		at := sessionExpiry(t, db, s.ID())
		for _, key := range keys {
			if !liveRow(t, db, key).ExpiresAt.Equal(at) {
				return false
			}
		}
		return true
	})
}

// outliveExpiry returns once the database's clock has passed s's expiry
// as it stands: what s keeps runs on past that only on its heartbeats.
func outliveExpiry(t *testing.T, db locker.DBTX, s *locker.Session) {
	t.Helper()
	testdb.WaitUntilPast(t, db, sessionExpiry(t, db, s.ID()))
}

// afterLastBeat returns once d has passed on the database's clock since
// s's last heartbeat (its expiry less its TTL).
func afterLastBeat(t *testing.T, db locker.DBTX, s *locker.Session, d time.Duration) {
	t.Helper()
	testdb.WaitUntilPast(t, db, sessionExpiry(t, db, s.ID()).Add(-sessTTL+d))
}

// A hundred leases, each bound by a Keepalive of its own, to one session
// outlive their grants and the session's expiry after, on its heartbeat
// alone, every one ending when the session does, and Close releases them
// all.
func TestSessionKeepsManyLeasesWithOneHeartbeat(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	// Twice the other tests' TTL: a hundred bindings at once, each within
	// its lease's trust window, take a while on a loaded machine.
	const sessTTL = 2 * sessTTL
	lk := testdb.Locker(t, locker.Config{TTL: sessTTL, RenewEvery: sessEvery})
	s := openSession(t, lk, db, "worker-1")
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("job:%03d", i)
	}
	kas := make([]*locker.Keepalive, len(keys))
	var granted time.Time // when the last grant ends
	for i, key := range keys {
		lease := testdb.MustAcquire(t, lk, db, key, "worker-1")
		granted = lease.ExpiresAt
		kas[i] = s.Keepalive(context.Background(), lease)
	}
	testdb.WaitUntilPast(t, db, granted)
	outliveExpiry(t, db, s)
	for _, ka := range kas {
		if err := context.Cause(ka.Context()); err != nil {
			t.Fatalf("keepalive ended: %v", err)
		}
	}
	// One snapshot for the session and its leases: a heartbeat moves them
	// all in one transaction, and may come between two reads.
	snap, err := db.BeginTx(context.Background(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	at := sessionExpiry(t, snap, s.ID())
	for _, key := range keys {
		row := liveRow(t, snap, key)
		if row.State() != lockdb.StateHeld || !row.ExpiresAt.Equal(at) {
			t.Fatalf("%s: %s until %v; want held until the session's %v", key, row.State(), row.ExpiresAt, at)
		}
	}
	_ = snap.Rollback(context.Background())
	if got := kas[0].Leases()[0].ExpiresAt; got.Before(at.Add(-sessEvery)) {
		t.Errorf("Keepalive's lease says %v; the session runs until %v", got, at)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ka := range kas {
		waitDone(t, ka.Context(), time.Second)
	}
	for _, key := range keys {
		if row := liveRow(t, db, key); row.State() != lockdb.StateFree {
			t.Fatalf("%s after Close: %s; want free", key, row.State())
		}
	}
}

// One bound lease taken away (an operator force-expires it) ends that
// Keepalive at the next heartbeat; the session and its other leases go on.
func TestSessionReportsALeaseItCanNoLongerKeep(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	a, b := testdb.MustAcquire(t, lk, db, "a", "worker-1"), testdb.MustAcquire(t, lk, db, "b", "worker-1")
	kaA, kaB := s.Keepalive(context.Background(), a), s.Keepalive(context.Background(), b)
	waitBound(t, db, s, "a", "b")
	if _, err := (operator.Operator{}).ForceExpire(context.Background(), db, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	waitDone(t, kaA.Context(), 2*sessTTL)
	wantLeaseLostNotSession(t, kaA, s)
	// The key as given, as a Keepalive of its own names it: lockctl run
	// finds the lease it lost by it.
	if lost := (*locker.Error)(nil); !errors.As(context.Cause(kaA.Context()), &lost) || lost.Key != "a" {
		t.Errorf("a's loss names key %+v; want a", lost)
	}
	outliveExpiry(t, db, s)
	if context.Cause(kaB.Context()) != nil || context.Cause(s.Context()) != nil {
		t.Fatalf("b's keepalive %v, session %v; want both running", context.Cause(kaB.Context()), context.Cause(s.Context()))
	}
	if row := liveRow(t, db, "a"); row.State() == lockdb.StateHeld {
		t.Errorf("the force-expired lease was revived: %+v", row)
	}
}

// An operator's end of a session force-expires every lease bound to it,
// and each Keepalive learns the session is lost.
func TestEndSessionExpiresItsLeases(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	a, b := testdb.MustAcquire(t, lk, db, "a", "worker-1"), testdb.MustAcquire(t, lk, db, "b", "worker-1")
	ka := s.Keepalive(context.Background(), []locker.Lease{a}...)
	kb := s.Keepalive(context.Background(), b)
	waitBound(t, db, s, "a", "b")
	op := testdb.Operator(t, "alice")
	n, err := op.EndSession(context.Background(), db, s.ID(), "stuck worker")
	if err != nil || n != 2 {
		t.Fatalf("EndSession: %d leases, %v; want 2", n, err)
	}
	for _, k := range []*locker.Keepalive{ka, kb} {
		waitDone(t, k.Context(), 2*sessTTL)
		if !errors.Is(context.Cause(k.Context()), locker.ErrSessionLost) {
			t.Errorf("keepalive ended with %v; want ErrSessionLost", context.Cause(k.Context()))
		}
		if lost := (*locker.Error)(nil); !errors.As(context.Cause(k.Context()), &lost) || lost.Key != k.Leases()[0].Key {
			t.Errorf("loss names key %+v; want %s", lost, k.Leases()[0].Key)
		}
	}
	if !errors.Is(s.Err(), locker.ErrSessionLost) {
		t.Errorf("session: %v; want ErrSessionLost", s.Err())
	}
	for _, key := range []string{"a", "b"} {
		if row := liveRow(t, db, key); row.State() == lockdb.StateHeld {
			t.Errorf("%s still held after its session ended", key)
		}
	}
	if _, err := op.EndSession(context.Background(), db, s.ID(), ""); !errors.Is(err, operator.ErrNoSession) {
		t.Errorf("ending it again: %v; want ErrNoSession", err)
	}
}

// Stop of a bound Keepalive unbinds its lease: the session keeps it no
// longer, and it runs out at the expiry it had.
func TestStoppedKeepaliveIsNoLongerKeptBySession(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	ka := s.Keepalive(context.Background(), testdb.MustAcquire(t, lk, db, "a", "worker-1"))
	waitBound(t, db, s, "a")
	ka.Stop()
	if !testdb.Within(3*sessTTL, func() bool { return liveRow(t, db, "a").State() != lockdb.StateHeld }) {
		t.Fatalf("a still held %v, %s after its keepalive stopped", liveRow(t, db, "a").ExpiresAt, 3*sessTTL)
	}
	if s.Err() != nil {
		t.Fatalf("session: %v", s.Err())
	}
}

// A lease that is not the caller's any more cannot be bound: its
// Keepalive ends at once with ErrNotHeld, and nothing is kept.
func TestBindingALeaseNotHeldFails(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	if _, err := testdb.One(lk.Release(context.Background(), db, lease)); err != nil {
		t.Fatal(err)
	}
	ka := s.Keepalive(context.Background(), lease)
	waitDone(t, ka.Context(), 2*sessTTL)
	if !errors.Is(context.Cause(ka.Context()), locker.ErrNotHeld) {
		t.Fatalf("keepalive ended with %v; want ErrNotHeld", context.Cause(ka.Context()))
	}
}

// A session whose heartbeats stop (its process hung, or lost the database)
// lapses with every lease bound to it at one instant, and a heartbeat
// after that does not revive them.
func TestLapsedSessionEndsItsLeasesTogether(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	leases, err := lk.Acquire(context.Background(), db, locker.Request{Keys: locker.Keys([]string{"a", "b", "c"}...), Owner: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	ka := s.Keepalive(context.Background(), leases...)
	waitBound(t, db, s, "a", "b", "c")
	// Freeze the session's row as a hung process would leave it: its
	// heartbeats wait for the row lock until the session has lapsed.
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(),
		`SELECT 1 FROM distributed_lock_session WHERE session_id = $1 FOR UPDATE`, s.ID()); err != nil {
		t.Fatal(err)
	}
	at := sessionExpiry(t, db, s.ID())
	waitDone(t, ka.Context(), 3*sessTTL)
	// The client gives up a safety margin before the database's expiry,
	// while its last heartbeat may still wait for the row: let it go only
	// once the session has lapsed, or it renews the session as a heartbeat
	// sent in time does.
	testdb.WaitUntilPast(t, db, at)
	_ = tx.Rollback(context.Background())
	if !errors.Is(context.Cause(ka.Context()), locker.ErrSessionLost) {
		t.Fatalf("keepalive ended with %v; want ErrSessionLost", context.Cause(ka.Context()))
	}
	for _, key := range []string{"a", "b", "c"} {
		row := liveRow(t, db, key)
		if row.State() == lockdb.StateHeld || !row.ExpiresAt.Equal(at) {
			t.Errorf("%s: %s until %v; want lapsed at the session's %v", key, row.State(), row.ExpiresAt, at)
		}
	}
	stolen := testdb.MustAcquire(t, lk, db, "a", "worker-2")
	if stolen.Outcome != locker.Stolen || stolen.Token <= leases[0].Token {
		t.Errorf("next grant of a: %s with token %d; want a steal above %d", stolen.Outcome, stolen.Token, leases[0].Token)
	}
}

// With Config.LogGrants every release is logged, Close's too: each lease
// still bound is released with a "released" event naming its token and the
// owner, as Release would log it, so the log does not show the leases held
// on until a later grant.
func TestCloseLogsItsReleasesWithLogGrants(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: sessTTL, RenewEvery: sessEvery, LogGrants: true})
	s := openSession(t, lk, db, "worker-1")
	leases, err := lk.Acquire(context.Background(), db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	ka := s.Keepalive(context.Background(), leases...)
	waitBound(t, db, s, "a", "b")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDone(t, ka.Context(), time.Second)
	for _, lease := range leases {
		var n int
		if err := db.QueryRow(context.Background(), `
SELECT count(*) FROM distributed_lock_event
WHERE lock_key = $1 AND kind = 'released' AND fence_token = $2 AND owner_id = 'worker-1' AND actor = 'worker-1'`,
			lease.Key, lease.Token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s: %d released events for token %d after Close; want 1", lease.Key, n, lease.Token)
		}
	}
}

// Until its binding is made, nothing keeps a lease but its own grant: a
// binding held up (here by a lock on the session's row) past the lease's
// trust window ends the Keepalive before the lease's local deadline, as a
// renewal held up does a Keepalive of its own.
func TestBindingHeldUpEndsTheKeepaliveBeforeTheLeasesDeadline(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(context.Background(),
		`SELECT 1 FROM distributed_lock_session WHERE session_id = $1 FOR UPDATE`, s.ID()); err != nil {
		t.Fatal(err)
	}
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	deadline := time.Now().Add(lease.ValidFor())
	ka := s.Keepalive(context.Background(), lease)
	select {
	case <-ka.Context().Done():
	case <-time.After(time.Until(deadline) + time.Second):
	}
	ended := time.Now()
	_ = tx.Rollback(context.Background())
	if ka.Context().Err() == nil || !ended.Before(deadline) {
		t.Fatalf("the keepalive still trusted the lease %v past its local deadline, its binding held up", ended.Sub(deadline))
	}
	if !errors.Is(context.Cause(ka.Context()), locker.ErrLeaseLost) {
		t.Fatalf("keepalive ended with %v; want a lost lease", context.Cause(ka.Context()))
	}
}

// A binding gives the lease the session's expiry, which may be earlier
// than its grant's: while the binding is on its way, the lease is trusted
// no longer than the session is, or a binding that commits while its
// reply is held up would leave the holder trusting a lease the database
// ends sooner.
func TestBindingInFlightIsTrustedNoLongerThanTheSession(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := sessionLocker(t)
	s := openSession(t, lk, db, "worker-1")
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(context.Background(),
		`SELECT 1 FROM distributed_lock_session WHERE session_id = $1 FOR UPDATE`, s.ID()); err != nil {
		t.Fatal(err)
	}
	// The session's heartbeats wait for its row now: by the time the lease
	// is granted, the session ends well before the grant would.
	at := sessionExpiry(t, db, s.ID())
	afterLastBeat(t, db, s, sessTTL/2)
	lease := testdb.MustAcquire(t, lk, db, "a", "worker-1")
	if !lease.ExpiresAt.After(at) {
		t.Fatalf("the grant ends at %v, not after the session's %v", lease.ExpiresAt, at)
	}
	ka := s.Keepalive(context.Background(), lease)
	testdb.WaitUntilPast(t, db, at)
	if ka.Context().Err() == nil {
		t.Fatalf("the keepalive still trusts the lease after the session's expiry %v, which its binding may give it", at)
	}
}

// A session keeps any lease: a shared holder's lease, bound by Keepalive,
// ends with the session, and Close releases it, leaving the other holder's.
func TestSessionKeepsASharedHoldersLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	mine, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeShared}}, Owner: "r1"}))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "reports", Mode: locker.ModeShared}}, Owner: "r2"}))
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, lk, db, "r1")
	ka := s.Keepalive(ctx, mine)
	if err := context.Cause(ka.Context()); err != nil {
		t.Fatalf("binding a shared holder's lease: %v", err)
	}
	leaseEnd := func(l locker.Lease) (expires time.Time, released bool) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT expires_at, released_at IS NOT NULL FROM distributed_lock
WHERE lock_key = $1 AND fence_token = $2`, l.Key, l.Token).Scan(&expires, &released); err != nil {
			t.Fatal(err)
		}
		return expires, released
	}
	if end, _ := leaseEnd(mine); !end.Equal(sessionExpiry(t, db, s.ID())) {
		t.Errorf("the bound lease ends at %v; want the session's %v", end, sessionExpiry(t, db, s.ID()))
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, released := leaseEnd(mine); !released {
		t.Error("Close left the bound holder's lease running")
	}
	if _, released := leaseEnd(theirs); released {
		t.Error("Close released the other holder's lease")
	}
}
