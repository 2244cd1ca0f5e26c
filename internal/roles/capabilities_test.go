package roles_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// store.Capabilities says what each grant set may do, and each answer is
// checked by doing it as that role: the console hides exactly the actions
// that would be refused.
func TestCapabilitiesMatchWhatTheRoleCanDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	want := map[roles.Kind]store.RoleCapabilities{
		roles.Viewer:   {},
		roles.Operator: {Force: true, EndDelay: true, EndSession: true, Revoke: true, Prune: true},
		roles.Service:  {Hold: true},
	}
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Actor: "capabilities-test"})
	op := testdb.Operator(t, "capabilities-test")
	delaying := testdb.Locker(t, locker.Config{TTL: time.Minute})
	for kind, w := range want {
		db := e.roleWith(t, kind)
		got, err := store.Capabilities(ctx, db)
		if err != nil || got != w {
			t.Errorf("%s: capabilities %+v, %v; want %+v", kind, got, err, w)
		}
		can := func(err error) bool {
			if err != nil && !errors.Is(err, locker.ErrPermissionDenied) {
				t.Fatalf("%s: %v", kind, err)
			}
			return err == nil
		}
		_, err = testdb.Try(ctx, lk, db, fmt.Sprintf("hold-%s", kind), "svc")
		hold := can(err)
		victim, err := testdb.Try(ctx, lk, e.admin, fmt.Sprintf("victim-%s", kind), "other")
		if err != nil {
			t.Fatal(err)
		}
		_, err = op.Revoke(ctx, db, victim.Key, victim.Token, "", -1)
		revoke := can(err)
		_, err = op.ForceExpire(ctx, db, victim.Key, victim.Token)
		force := can(err)
		delayed, err := testdb.TryDelayed(ctx, delaying, e.admin, fmt.Sprintf("delayed-%s", kind), "other", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.ForceRelease(ctx, e.admin, delayed.Key, delayed.Token); err != nil {
			t.Fatal(err)
		}
		_, err = op.EndDelay(ctx, db, delayed.Key, "")
		endDelay := can(err)
		// No such session: the role may end one, or it is refused first.
		_, err = op.EndSession(ctx, db, 1<<40, "")
		endSession := can(ignore(err, operator.ErrNoSession))
		_, err = op.Prune(ctx, db, operator.PruneOptions{FreeFor: time.Hour})
		prune := can(err)
		if did := (store.RoleCapabilities{Hold: hold, Force: force, EndDelay: endDelay, EndSession: endSession, Revoke: revoke, Prune: prune}); did != got {
			t.Errorf("%s: capabilities say %+v, the role could do %+v", kind, got, did)
		}
	}
	if got, err := store.Capabilities(ctx, e.admin); err != nil || got != (store.RoleCapabilities{Hold: true, Force: true, EndDelay: true, EndSession: true, Revoke: true, Prune: true}) {
		t.Errorf("table owner: capabilities %+v, %v; want all", got, err)
	}
}

// ignore is err, or nil when it is target.
func ignore(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return err
}

// On a database without the lock tables, Capabilities says to migrate.
func TestCapabilitiesUnmigrated(t *testing.T) {
	t.Parallel()
	pool := testdb.Pool(t, testdb.EmptyDSN(t))
	if _, err := store.Capabilities(context.Background(), pool); !errors.Is(err, locker.ErrNotMigrated) {
		t.Fatalf("capabilities on an empty schema: %v, want ErrNotMigrated", err)
	}
}
