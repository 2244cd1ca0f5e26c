package roles_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// operatorWorkload is what an operator does from the console and the CLI:
// watch, revoke, force-expire, force-release, end a lock-delay, end a session,
// prune (with old events).
func operatorWorkload(ctx context.Context, db, admin *pgxpool.Pool) error {
	svc, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		return err
	}
	op, err := operator.New("oncall")
	if err != nil {
		return err
	}
	a, err := testdb.Try(ctx, svc, admin, "a", "svc")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	b, err := testdb.Try(ctx, svc, admin, "b", "svc")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	delaying, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		return err
	}
	c, err := testdb.TryDelayed(ctx, delaying, admin, "c", "svc", time.Minute)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := op.ForceRelease(ctx, admin, "c", c.Token); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := lockview.ListPrefix(ctx, db, ""); err != nil {
		return err
	}
	if _, err := lockview.ReadGauges(ctx, db); err != nil { // lockctl metrics
		return err
	}
	// A shared key's holders, as the console's detail and ls show them.
	reader, err := testdb.One(svc.Acquire(ctx, admin, locker.Request{Keys: []locker.Key{{Name: "s", Mode: locker.ModeShared}}, Owner: "svc"}))
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if hs, err := lockview.HoldersOf(ctx, db, []string{"s"}); err != nil || len(hs["s"]) != 1 {
		return fmt.Errorf("holders of s: %v: %w", hs, err)
	}
	if _, err := svc.Release(ctx, admin, reader); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := lockview.KeyEvents(ctx, db, "a", 10); err != nil {
		return err
	}
	if _, err := lockview.Waiters(ctx, db, "a"); err != nil {
		return err
	}
	if _, err := op.Revoke(ctx, db, "a", a.Token, "rotating the host", time.Minute); err != nil {
		return err
	}
	if _, err := op.ForceExpire(ctx, db, "a", a.Token); err != nil {
		return err
	}
	if _, err := op.ForceRelease(ctx, db, "b", b.Token); err != nil {
		return err
	}
	if _, err := op.EndDelay(ctx, db, "c", "its holder is gone"); err != nil {
		return err
	}
	sess, err := svc.OpenSession(ctx, admin, "svc")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	d, err := testdb.Try(ctx, svc, admin, "d", "svc")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := context.Cause(sess.Keepalive(ctx, d).Context()); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if n, err := op.EndSession(ctx, db, sess.ID(), "hung worker"); err != nil || n != 1 {
		return fmt.Errorf("end session: %d leases, %w", n, err)
	}
	_ = sess.Close(ctx)
	res, err := op.Prune(ctx, db, operator.PruneOptions{FreeFor: time.Nanosecond, EventsOlderThan: time.Nanosecond})
	if err != nil {
		return err
	}
	if res.Locks != 5 { // a, b, c, s and d, which ended with its session
		return fmt.Errorf("pruned %d locks, want 5", res.Locks)
	}
	return nil
}

func TestOperatorGrantsAreMinimal(t *testing.T) {
	t.Parallel()
	t.Run("all grants", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		db := e.roleWith(t, roles.Operator)
		if err := operatorWorkload(context.Background(), db, e.admin); err != nil {
			t.Fatalf("operator workload with the documented grants: %v", err)
		}
	})
	cases := []struct {
		revoke string // %[1]s schema, %[2]s role
		want   error
	}{
		{`REVOKE USAGE ON SCHEMA %[1]s FROM %[2]s`, locker.ErrNotMigrated},
		{`REVOKE SELECT ON %[1]s.distributed_lock FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE SELECT ON %[1]s.distributed_lock_state FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_live(distributed_lock, timestamptz) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_key_state(distributed_lock, timestamptz) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE SELECT ON %[1]s.distributed_lock_event FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE SELECT ON %[1]s.distributed_lock_waiter FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_force_expire(text, bigint, text, text) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_force_release(text, bigint, text, text) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_end_delay(text, text, text) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_prune(bigint, bigint, bigint) FROM %[2]s`, locker.ErrPermissionDenied},
		{`REVOKE EXECUTE ON FUNCTION %[1]s.distributed_lock_end_session(bigint, text, text) FROM %[2]s`, locker.ErrPermissionDenied},
	}
	for _, c := range cases {
		t.Run(caseName(c.revoke), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			db := e.roleWith(t, roles.Operator)
			role := db.Config().ConnConfig.User
			revoke := fmt.Sprintf(c.revoke, pgx.Identifier{e.schema}.Sanitize(), pgx.Identifier{role}.Sanitize())
			if _, err := e.admin.Exec(ctx, revoke); err != nil {
				t.Fatalf("%s: %v", revoke, err)
			}
			db.Reset()
			err := operatorWorkload(ctx, db, e.admin)
			if !errors.Is(err, c.want) {
				t.Fatalf("after %s: workload err = %v; want %v", revoke, err, c.want)
			}
		})
	}
}
