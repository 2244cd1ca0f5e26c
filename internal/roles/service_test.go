package roles_test

import (
	"context"
	"errors"
	"fmt"
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

// serviceWorkload runs every operation a service performs, as db, and
// returns the first error.
func serviceWorkload(ctx context.Context, db *pgxpool.Pool, admin *pgxpool.Pool) error {
	holder, err := locker.New(locker.Config{TTL: 600 * time.Millisecond})
	if err != nil {
		return err
	}
	lk, err := locker.New(locker.Config{TTL: 10 * time.Second, WaitRecheck: 250 * time.Millisecond,
		RenewEvery: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	// Acquire must wait (queue, then check the queue at the holder's
	// expiry): the key is held for 600ms by another owner.
	if _, err := testdb.Try(ctx, holder, admin, "svc", "other-service"); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if cur, _, err := store.Get[lockdb.LockInfo](ctx, admin, "svc"); err != nil || cur.Remaining < 300*time.Millisecond {
		return fmt.Errorf("setup: the key must be held long enough for Acquire to wait: %+v, %v", cur, err)
	}
	lease, err := testdb.Wait(ctx, lk, db, "svc", "service")
	if err != nil {
		return err
	}
	if lease.Outcome != locker.Stolen {
		return fmt.Errorf("acquire outcome %s, want stolen", lease.Outcome)
	}
	// Count every record, not only live ones (lockview.Waiters hides records
	// past seen_until, which a slow machine reaches within 3×WaitRecheck).
	var left int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'svc'`).Scan(&left); err != nil || left != 0 {
		return fmt.Errorf("%w: %d waiter records left behind (%v)", errWaiterLeft, left, err)
	}
	if err := queuedWait(ctx, db, admin); err != nil {
		return err
	}
	if err := setWorkload(ctx, db, admin, holder, lk); err != nil {
		return err
	}
	if err := sessionWorkload(ctx, db, lk); err != nil {
		return err
	}
	if err := sharedWorkload(ctx, db, lk); err != nil {
		return err
	}
	if lease, err = testdb.One(lk.Renew(ctx, db, lease)); err != nil {
		return err
	}
	ka := lk.Keepalive(ctx, db, lease)
	// Until its first renewal, or its end (a renewal it may not make).
	testdb.Within(10*time.Second, func() bool {
		return !ka.Leases()[0].ExpiresAt.Equal(lease.ExpiresAt) || context.Cause(ka.Context()) != nil
	})
	kept := ka.Leases()[0]
	ka.Stop()
	if kept.ExpiresAt.Equal(lease.ExpiresAt) {
		return fmt.Errorf("keepalive did not renew")
	}
	lease = kept
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, lease) })
	if err != nil {
		return err
	}
	if err := lk.ReportStaleWrite(ctx, db, lease, "ledger"); err != nil {
		return err
	}
	if _, err := testdb.Try(ctx, lk, db, "svc-2", "service"); err != nil {
		return err
	}
	if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
		return err
	}
	// A lost lease's error names the key's row as it is now (read with the
	// service's SELECT), so the service can say who has it.
	_, err = testdb.One(lk.Renew(ctx, db, lease))
	var nh *locker.Error
	if !errors.As(err, &nh) {
		return fmt.Errorf("renew after release = %v; want a NotHeldError", err)
	}
	if nh.Current == nil || nh.Current.ReleasedAt == nil {
		return fmt.Errorf("%w: %v", errNoCurrent, err)
	}
	return nil
}

// sharedWorkload takes a permit and a shared lease, reads the shared key
// (whose lease ends with its holders', read from their slots), keeps,
// fences and releases them as it does an exclusive lease.
func sharedWorkload(ctx context.Context, db *pgxpool.Pool, lk *locker.Locker) error {
	permit, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "svc-sem", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "service"}))
	if err != nil {
		return err
	}
	reader, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "svc-shared", Mode: locker.ModeShared}}, Owner: "service", Wait: locker.WaitForever}))
	if err != nil {
		return err
	}
	if info, found, err := store.Get[lockdb.LockInfo](ctx, db, "svc-shared"); err != nil || !found || info.Remaining <= 0 {
		return fmt.Errorf("read the shared key: %+v, found %v: %w", info, found, err)
	}
	for _, l := range []locker.Lease{permit, reader} {
		if _, err := testdb.One(lk.Renew(ctx, db, l)); err != nil {
			return err
		}
		if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, l) }); err != nil {
			return err
		}
		if _, err := testdb.One(lk.Release(ctx, db, l)); err != nil {
			return err
		}
	}
	return nil
}

// queuedWait waits in a queue as a process with a Notifier does (its
// heartbeat keeps the waiter record live) and gives up (the record is taken
// out), then queues again and is handed the key by the holder's release.
func queuedWait(ctx context.Context, db, admin *pgxpool.Pool) error {
	other, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		return err
	}
	held, err := testdb.Try(ctx, other, admin, "svc-queue", "other-service")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(db.Config().ConnConfig)})
	go func() { _ = n.Run(nctx) }()
	if !testdb.Within(5*time.Second, n.Live) {
		return errors.New("notifier did not start listening")
	}
	lk, err := locker.New(locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: 150 * time.Millisecond})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := testdb.Wait(wctx, lk, db, "svc-queue", "service")
		done <- err
	}()
	// The record's seen_until moves on while the waiter sleeps: the
	// Notifier's heartbeat (every 75ms here: a sixth of 3×WaitRecheck).
	const seenSQL = `SELECT max(seen_until) FROM distributed_lock_waiter WHERE lock_key = 'svc-queue'`
	var first, last time.Time
	var readErr error
	testdb.Within(1500*time.Millisecond, func() bool {
		var seen *time.Time
		if readErr = admin.QueryRow(ctx, seenSQL).Scan(&seen); readErr != nil {
			return true
		}
		if !n.Live() {
			// Its heartbeat failed: the waiter falls back to checking on its
			// own, a statement per waiter instead of one per process.
			readErr = fmt.Errorf("%w: the notifier stopped being live", errNoHeartbeat)
			return true
		}
		if seen != nil {
			if first.IsZero() {
				first = *seen
			}
			last = *seen
		}
		return last.After(first)
	})
	if readErr != nil {
		return readErr
	}
	err = <-done
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if first.IsZero() || !last.After(first) {
		return fmt.Errorf("%w: seen_until %s, then %s", errNoHeartbeat, first, last)
	}
	var left int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'svc-queue'`).Scan(&left); err != nil || left != 0 {
		return fmt.Errorf("%w: %d waiter records left behind (%v)", errWaiterLeft, left, err)
	}
	// Queued again, then handed the key by the holder's release.
	hctx, cancelHanded := context.WithTimeout(ctx, 10*time.Second)
	defer cancelHanded()
	go func() {
		_, err := testdb.Wait(hctx, lk, db, "svc-queue", "service")
		done <- err
	}()
	testdb.Within(5*time.Second, func() bool {
		var n int
		_ = admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'svc-queue'`).Scan(&n)
		return n > 0
	})
	if _, err := testdb.One(other.Release(ctx, admin, held)); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return <-done
}

// sessionWorkload opens a session, binds a lease to it, waits for a
// heartbeat to move the lease on, and closes the session (which releases
// the lease).
func sessionWorkload(ctx context.Context, db *pgxpool.Pool, lk *locker.Locker) error {
	s, err := lk.OpenSession(ctx, db, "service")
	if err != nil {
		return err
	}
	lease, err := testdb.Try(ctx, lk, db, "svc-session", "service")
	if err != nil {
		return err
	}
	ka := s.Keepalive(ctx, lease)
	if err := context.Cause(ka.Context()); err != nil {
		return err
	}
	bound := ka.Leases()[0]
	testdb.Within(5*time.Second, func() bool {
		return ka.Leases()[0].ExpiresAt.After(bound.ExpiresAt) || context.Cause(ka.Context()) != nil
	})
	if context.Cause(ka.Context()) != nil || !ka.Leases()[0].ExpiresAt.After(bound.ExpiresAt) {
		return fmt.Errorf("%w (%v)", errNoSessionHeartbeat, context.Cause(ka.Context()))
	}
	if err := s.Close(ctx); err != nil {
		return err
	}
	if _, err := testdb.Try(ctx, lk, db, "svc-session", "other"); err != nil {
		return fmt.Errorf("after Close: %w", err)
	}
	return nil
}

var (
	errNoSessionHeartbeat = errors.New("the session's heartbeat did not keep the bound lease")
	errNoHeartbeat        = errors.New("the notifier's heartbeat did not keep the waiter record live")
	errWaiterLeft         = errors.New("waiter record left behind")
	errNoCurrent          = errors.New("a lost lease's error does not show the key's current row")
)

// TestServiceGrantsAreMinimal removes one privilege at a time from the
// service set and shows the workload then fails: none is superfluous.
func TestServiceGrantsAreMinimal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		revoke string // %[1]s schema, %[2]s role
		want   error
	}{
		// Without USAGE the schema drops out of search_path, so PostgreSQL
		// says the function does not exist (42883), which store reports as
		// ErrNotMigrated: the message cannot tell the two apart.
		{`REVOKE USAGE ON SCHEMA %[1]s FROM %[2]s`, locker.ErrNotMigrated},
		// A shared key's lease ends with its holders', read from their
		// slots by the readers' view's rules, which run as their reader.
		{`REVOKE SELECT ON %[1]s.distributed_lock FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_holders_end(text) FROM %[2]s`, locker.ErrPermissionDenied},
		// Keys are read through the readers' view.
		{`REVOKE SELECT ON %[1]s.distributed_lock_state FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_acquire_shared(text, text, bigint, integer, jsonb, text, jsonb, boolean) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_enqueue_shared(text, text, bigint, integer, bigint, bigint, jsonb, text, jsonb, boolean, text, boolean) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean, bigint) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_renew(text, text, bigint, bigint) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_release(text, text, bigint, boolean, boolean, text) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_fence(text, text, bigint) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_report_stale_write(text, text, bigint, text, jsonb) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_enqueue(text, text, bigint, bigint, bigint, jsonb, text, jsonb, boolean, bigint, text) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_waiter_poll(text, bigint, bigint) FROM %[2]s`, locker.ErrPermissionDenied},
		// The Notifier's heartbeat and Acquire's leaving are best-effort and
		// report no failure: a missing grant shows as a record that stops
		// being refreshed, or one left behind.
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_waiter_heartbeat(bigint[], bigint) FROM %[2]s`, errNoHeartbeat},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_waiter_leave(text, bigint, boolean, text) FROM %[2]s`, errWaiterLeft},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_open_session(text, bigint, text, integer, jsonb) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_session_bind(bigint, text, text, text[], bigint[]) FROM %[2]s`, locker.ErrPermissionDenied},
		// A heartbeat refused is retried until the session can no longer
		// be trusted: the bound lease is not moved on.
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_session_heartbeat(bigint, text, text[], bigint[], text[], bigint[]) FROM %[2]s`, errNoSessionHeartbeat},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_close_session(bigint, text, boolean, text) FROM %[2]s`, locker.ErrPermissionDenied},
	}
	for _, c := range cases {
		t.Run(caseName(c.revoke), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			db := e.roleWith(t, roles.Service)
			role := db.Config().ConnConfig.User
			revoke := fmt.Sprintf(c.revoke, pgx.Identifier{e.schema}.Sanitize(), pgx.Identifier{role}.Sanitize())
			if _, err := e.admin.Exec(ctx, revoke); err != nil {
				t.Fatalf("%s: %v", revoke, err)
			}
			db.Reset() // drop connections that cached plans under the old privileges
			err := serviceWorkload(ctx, db, e.admin)
			if !errors.Is(err, c.want) {
				t.Fatalf("after %s: workload err = %v; want %v", revoke, err, c.want)
			}
		})
	}
}

// setWorkload takes, keeps and releases a set of keys, waits for a set
// (queued, checked, handed its keys), and gives up waiting for one.
func setWorkload(ctx context.Context, db, admin *pgxpool.Pool, holder, lk *locker.Locker) error {
	set, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"svc-set-a", "svc-set-b"}...), Owner: "service"})
	if err != nil {
		return err
	}
	ka := lk.Keepalive(ctx, db, set...)
	testdb.Within(10*time.Second, func() bool {
		return !ka.Leases()[1].ExpiresAt.Equal(set[1].ExpiresAt) || context.Cause(ka.Context()) != nil
	})
	kept := ka.Leases()
	ka.Stop()
	if kept[1].ExpiresAt.Equal(set[1].ExpiresAt) {
		return fmt.Errorf("keepalive of a set did not renew")
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, kept...)); err != nil {
		return err
	}
	if _, err := testdb.Try(ctx, holder, admin, "svc-set-a", "other-service"); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"svc-set-a", "svc-set-b"}...), Owner: "service", Wait: locker.WaitForever}); err != nil {
		return fmt.Errorf("waiting for a set: %w", err)
	}
	if _, err := testdb.Try(ctx, holder, admin, "svc-set-c", "other-service"); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := lk.Acquire(wctx, db, locker.Request{Keys: locker.Keys([]string{"svc-set-c", "svc-set-d"}...), Owner: "service", Wait: locker.WaitForever}); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("a set giving up = %v; want its deadline", err)
	}
	var left int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key LIKE 'svc-set-%'`).Scan(&left); err != nil || left != 0 {
		return fmt.Errorf("%w: %d waiter records of a set left behind (%v)", errWaiterLeft, left, err)
	}
	return nil
}
