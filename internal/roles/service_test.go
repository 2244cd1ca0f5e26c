package roles_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	lk, err := locker.New(locker.Config{TTL: 2 * time.Second, WaitRecheck: 80 * time.Millisecond,
		RenewEvery: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	// Acquire must wait (registering, refreshing and removing a waiter
	// record): the key is held for 600ms by another owner.
	if _, err := holder.TryAcquire(ctx, admin, "svc", "other-service"); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if cur, _, err := store.Get(ctx, admin, "svc"); err != nil || cur.Remaining < 300*time.Millisecond {
		return fmt.Errorf("setup: the key must be held long enough for Acquire to wait: %+v, %v", cur, err)
	}
	lease, err := lk.Acquire(ctx, db, "svc", "service")
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
	if lease, err = lk.Renew(ctx, db, lease); err != nil {
		return err
	}
	ka := lk.Keepalive(ctx, db, lease)
	// Until its first renewal, or its end (a renewal it may not make).
	testdb.Within(10*time.Second, func() bool {
		return !ka.Lease().ExpiresAt.Equal(lease.ExpiresAt) || ka.Err() != nil
	})
	kept := ka.Lease()
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
	if _, err := lk.TryAcquire(ctx, db, "svc-2", "service"); err != nil {
		return err
	}
	if _, err := lk.Release(ctx, db, lease); err != nil {
		return err
	}
	return nil
}

var errWaiterLeft = errors.New("waiter record left behind")

// TestServiceGrantsAreMinimal removes one privilege at a time from the
// service set and shows the workload then fails: none is superfluous.
func TestServiceGrantsAreMinimal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		revoke string // %[1]s schema, %[2]s role
		want   error
	}{
		// Without USAGE the schema drops out of search_path, so PostgreSQL
		// says the table does not exist (42P01), which store reports as
		// ErrNotMigrated: the message cannot tell the two apart.
		{`REVOKE USAGE ON SCHEMA %[1]s FROM %[2]s`, store.ErrNotMigrated},
		{`REVOKE SELECT ON %[1]s.distributed_lock FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE INSERT ON %[1]s.distributed_lock FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE UPDATE ON %[1]s.distributed_lock FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE INSERT ON %[1]s.distributed_lock_event FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE SELECT ON %[1]s.distributed_lock_waiter FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE INSERT ON %[1]s.distributed_lock_waiter FROM %[2]s`, store.ErrPermissionDenied},
		{`REVOKE UPDATE ON %[1]s.distributed_lock_waiter FROM %[2]s`, store.ErrPermissionDenied},
		// Acquire removes its waiter record best-effort and does not report
		// a failure, so a missing DELETE shows as a record left behind.
		{`REVOKE DELETE ON %[1]s.distributed_lock_waiter FROM %[2]s`, errWaiterLeft},
		{`REVOKE USAGE ON SEQUENCE %[1]s.distributed_lock_fence_seq FROM %[2]s`, store.ErrPermissionDenied},
	}
	for _, c := range cases {
		f := strings.Fields(c.revoke)
		t.Run(strings.ReplaceAll(strings.Join(f[1:len(f)-2], " "), "%[1]s", "schema"), func(t *testing.T) {
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
