package roles_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Owner ids, tokens, waiter ids and session ids are readable by every
// service. A second service role that reads them and calls the protocol
// functions as the first service's owner must act on nothing of the first
// service's: each call answers as for a lease, record or session that is
// not its own, and the victim keeps what it had.

// twoServices is a victim and an attacker, each a service role of its own.
func twoServices(t *testing.T) (e env, victim, attacker *pgxpool.Pool) {
	t.Helper()
	e = newEnv(t)
	return e, e.roleWith(t, roles.Service), e.roleWith(t, roles.Service)
}

func TestAnotherServiceCannotEndOrKeepALease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	lease, err := testdb.Try(ctx, lk, victim, "billing", "billing-1")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := testdb.One(lk.Acquire(ctx, victim, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "billing-1"}))
	if err != nil {
		t.Fatal(err)
	}
	set, err := lk.Acquire(ctx, victim, locker.Request{Keys: locker.Keys([]string{"set-a", "set-b"}...), Owner: "billing-1"})
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's Locker names the victim's lease exactly (key, owner,
	// token), as it reads them from distributed_lock.
	if _, err := testdb.One(lk.Renew(ctx, attacker, lease)); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("another service's Renew = %v; want ErrNotHeld", err)
	}
	if _, err := testdb.One(lk.Release(ctx, attacker, lease)); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("another service's Release = %v; want ErrNotHeld", err)
	}
	if _, err := testdb.One(lk.Renew(ctx, attacker, shared)); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("another service's Renew of a permit = %v; want ErrNotHeld", err)
	}
	if _, err := testdb.One(lk.Release(ctx, attacker, shared)); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("another service's Release of a permit = %v; want ErrNotHeld", err)
	}
	if err := testdb.ErrOf(lk.Release(ctx, attacker, set...)); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("another service's ReleaseAll = %v; want ErrNotHeld", err)
	}
	for _, l := range []locker.Lease{lease, shared} {
		err := pgx.BeginFunc(ctx, attacker, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, l) })
		if !errors.Is(err, locker.ErrNotHeld) {
			t.Errorf("another service's Fence of %s = %v; want ErrNotHeld", l.Key, err)
		}
	}
	// Acquire as the victim's owner is no renewal: another's lease.
	if _, err := testdb.Try(ctx, lk, attacker, "billing", "billing-1"); !errors.Is(err, locker.ErrHeld) {
		t.Errorf("another service's TryAcquire as the holder's owner = %v; want ErrHeld", err)
	}
	for _, l := range append([]locker.Lease{lease, shared}, set...) {
		info, found, err := store.Get[lockdb.LockInfo](ctx, e.admin, l.Key)
		if err != nil || !found {
			t.Fatalf("%s: %v", l.Key, err)
		}
		if l.Mode == locker.ModeExclusive && (info.Owner != "billing-1" || info.Token != l.Token || info.ReleasedAt != nil ||
			!info.ExpiresAt.Equal(l.ExpiresAt)) {
			t.Errorf("%s after the attack: %+v; want the victim's lease %d as granted", l.Key, info, l.Token)
		}
	}
	// The victim's own calls still work: every lease is still its own.
	if _, err := testdb.One(lk.Release(ctx, victim, lease)); err != nil {
		t.Errorf("the victim's Release: %v", err)
	}
	if _, err := testdb.One(lk.Release(ctx, victim, shared)); err != nil {
		t.Errorf("the victim's Release of its permit: %v", err)
	}
	if err := testdb.ErrOf(lk.Release(ctx, victim, set...)); err != nil {
		t.Errorf("the victim's ReleaseAll: %v", err)
	}
}

// The raw calls a client in any language could make, with the victim's
// ids, as another service.
func TestAnotherServiceCannotTouchASessionOrAQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	lk := testdb.Locker(t, locker.Config{TTL: 5 * time.Minute})
	session, err := lk.OpenSession(ctx, victim, "billing-1")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := testdb.Try(ctx, lk, victim, "billing", "billing-1")
	if err != nil {
		t.Fatal(err)
	}
	// A queued waiter of the victim's, behind a holder of its own.
	holder, err := testdb.Try(ctx, lk, victim, "queue", "holder")
	if err != nil {
		t.Fatal(err)
	}
	waiting := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: 200 * time.Millisecond})
	got := testdb.AcquireAsync(ctx, waiting, victim, "queue", "billing-1")
	w := testdb.WaitForWaiter(t, e.admin, "queue", "billing-1")

	// The attacker's own session, to bind the victim's lease into.
	var own int64
	if err := attacker.QueryRow(ctx, `SELECT session_id FROM distributed_lock_open_session('billing-1', 2000000)`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	// Each call names the attacker's session (a.own), the victim's token,
	// session and waiter record.
	const ids = `WITH a AS (SELECT $1::bigint AS own, $2::bigint AS token, $3::bigint AS victim, $4::bigint AS waiter) `
	calls := []struct{ what, sql, want string }{
		{"bind the victim's lease to its own short session", `SELECT b.outcome FROM a,
			distributed_lock_session_bind(a.own, 'billing-1', 'billing-1', ARRAY['billing'], ARRAY[a.token]) b`, "not_held"},
		{"bind the victim's lease to the victim's session", `SELECT b.outcome FROM a,
			distributed_lock_session_bind(a.victim, 'billing-1', 'billing-1', ARRAY['billing'], ARRAY[a.token]) b`, "gone"},
		{"heartbeat the victim's session",
			`SELECT h.outcome FROM a, distributed_lock_session_heartbeat(a.victim, 'billing-1') h`, "gone"},
		{"close the victim's session", `SELECT c.outcome FROM a, distributed_lock_close_session(a.victim, 'billing-1') c`, "gone"},
		{"renew the victim's leases as a set", `SELECT r.outcome FROM a,
			distributed_lock_renew_all(ARRAY['billing'], 'billing-1', ARRAY[a.token], 1000000) r`, "not_held"},
		{"release the victim's leases as a set", `SELECT r.outcome FROM a,
			distributed_lock_release_all(ARRAY['billing'], 'billing-1', ARRAY[a.token]) r`, "not_held"},
		{"poll the victim's waiter", `SELECT p.outcome FROM a, distributed_lock_waiter_poll('queue', a.waiter, 1000000) p`, "gone"},
		{"claim the victim's waiter's hand-off", `SELECT c.outcome FROM a, distributed_lock_waiter_claim('queue', a.waiter) c`,
			"not_handed"},
		{"take the victim's waiter out of the queue", `SELECT distributed_lock_waiter_leave('queue', a.waiter) FROM a`, "none"},
		{"take the victim's waiting set out of its queues",
			`SELECT distributed_lock_waiter_leave_all(ARRAY['queue', 'other'], ARRAY[a.waiter, 0]) FROM a`, "none"},
		{"poll the victim's waiter as a set", `SELECT p.outcome FROM a,
			distributed_lock_waiter_poll_all(ARRAY['queue', 'other'], ARRAY[a.waiter, 0], 1000000) p LIMIT 1`, "gone"},
	}
	for _, c := range calls {
		var outcome string
		if err := attacker.QueryRow(ctx, ids+c.sql, own, lease.Token, session.ID(), w.ID).Scan(&outcome); err != nil {
			t.Errorf("%s: %v", c.what, err)
		} else if outcome != c.want {
			t.Errorf("%s: %s; want %s", c.what, outcome, c.want)
		}
	}
	// Nor may it keep the victim's record live or learn its grant.
	var missing []int64
	if err := attacker.QueryRow(ctx, `SELECT array_agg(id) FROM distributed_lock_waiter_heartbeat(ARRAY[$1::bigint], 1000000) id`,
		w.ID).Scan(&missing); err != nil || len(missing) != 1 {
		t.Errorf("heartbeat of the victim's waiter: missing %v, %v; want it answered as not found", missing, err)
	}

	info, _, err := store.Get[lockdb.LockInfo](ctx, e.admin, "billing")
	if err != nil || info.Token != lease.Token || info.ReleasedAt != nil || !info.ExpiresAt.Equal(lease.ExpiresAt) {
		t.Errorf("the victim's lease after the attack: %+v, %v; want %d, expiring %s as granted", info, err, lease.Token,
			lease.ExpiresAt)
	}
	if err := session.Err(); err != nil {
		t.Errorf("the victim's session after the attack: %v", err)
	}
	var sessions int
	if err := e.admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_session WHERE session_id = $1`,
		session.ID()).Scan(&sessions); err != nil || sessions != 1 {
		t.Errorf("the victim's session row: %d, %v; want it kept", sessions, err)
	}
	if now := testdb.WaitForWaiter(t, e.admin, "queue", "billing-1"); now.ID != w.ID {
		t.Errorf("the victim's waiter is now %d; want %d, its place kept", now.ID, w.ID)
	}
	// Served in its turn.
	if _, err := testdb.One(lk.Release(ctx, victim, holder)); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Err != nil || r.Lease.Owner != "billing-1" {
		t.Errorf("the victim's waiter after the release: %+v, %v", r.Lease, r.Err)
	}
	if err := session.Close(ctx); err != nil {
		t.Errorf("the victim closes its own session: %v", err)
	}
}

// Queueing as the victim's owner takes over none of its records: the
// attacker gets a place of its own, behind the victim's.
func TestAnotherServiceCannotTakeOverAQueuePlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: 200 * time.Millisecond})
	holder, err := testdb.Try(ctx, lk, victim, "queue", "holder")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := testdb.AcquireAsync(wctx, lk, victim, "queue", "billing-1")
	w := testdb.WaitForWaiter(t, e.admin, "queue", "billing-1")
	var id *int64
	var outcome string
	if err := attacker.QueryRow(ctx, `SELECT outcome, waiter_id FROM distributed_lock_enqueue('queue', 'billing-1', 60000000, 1000000, 60000000)`).Scan(&outcome, &id); err != nil {
		t.Fatal(err)
	}
	if outcome != "queued" || id == nil || *id == w.ID {
		t.Fatalf("another service's enqueue as the waiter's owner: %s, id %v; want queued under an id of its own, not %d", outcome, id, w.ID)
	}
	if _, err := testdb.One(lk.Release(ctx, victim, holder)); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Err != nil || r.Lease.Owner != "billing-1" {
		t.Fatalf("the victim's waiter after the release: %+v, %v; want the key, first in line", r.Lease, r.Err)
	}
}

// A release of a lease that has already run out frees the key but does not
// end its lock-delay: nobody, the next in line included, is granted it
// before the delay ends.
func TestLateReleaseKeepsTheLockDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, svc, other := twoServices(t)
	short := testdb.Locker(t, locker.Config{TTL: 300 * time.Millisecond})
	lease, err := testdb.TryDelayed(ctx, short, svc, "ledger", "writer", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.Eventually(t, 10*time.Second, "the lease running out", func() bool {
		info, _, err := store.Get[lockdb.LockInfo](ctx, svc, "ledger")
		return err == nil && info.Remaining <= 0
	})
	if _, err := testdb.One(short.Release(ctx, svc, lease)); err != nil && !errors.Is(err, locker.ErrNotHeld) {
		t.Fatal(err)
	}
	_, err = testdb.Try(ctx, lk, other, "ledger", "next")
	var held *locker.Error
	if !errors.As(err, &held) || held.DelayUntil == nil {
		t.Fatalf("TryAcquire after a late release = %v; want refused in the lock-delay", err)
	}
}
