package roles_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// An actor is whatever the caller says. A service that writes events as
// "alice@ops" is recorded, beside that claim, as the role it is: every
// event names the database role whose call wrote it, which no caller
// passes in, and a viewer reads both.
func TestEventsNameTheRoleBesideTheClaimedActor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	forger := e.roleWith(t, roles.Service)
	waiterRole := e.roleWith(t, roles.Service)
	operator := e.roleWith(t, roles.Operator)
	viewer := e.roleWith(t, roles.Viewer)
	forgerRole := forger.Config().ConnConfig.User
	waitingRole := waiterRole.Config().ConnConfig.User
	operatorRole := operator.Config().ConnConfig.User

	claims := testdb.Locker(t, locker.Config{TTL: time.Minute, Actor: "alice@ops", LogGrants: true})
	lease, err := testdb.Try(ctx, claims, forger, "ledger", "billing-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := claims.ReportStaleWrite(ctx, forger, lease, "ledger"); err != nil {
		t.Fatal(err)
	}
	// A waiter of another role, claiming to be carol, handed the key by the
	// forger's release: the grant is the waiter's claim, under its role.
	carol := testdb.Locker(t, locker.Config{TTL: time.Minute, Actor: "carol@ops", LogGrants: true,
		WaitRecheck: 200 * time.Millisecond})
	got := testdb.AcquireAsync(ctx, carol, waiterRole, "ledger", "reports-1")
	testdb.WaitForWaiter(t, viewer, "ledger", "reports-1")
	if _, err := testdb.One(claims.Release(ctx, forger, lease)); err != nil {
		t.Fatal(err)
	}
	handed := <-got
	if handed.Err != nil {
		t.Fatal(handed.Err)
	}
	ops := testdb.Operator(t, "bob@ops")
	if _, err := ops.ForceExpire(ctx, operator, "ledger", handed.Lease.Token); err != nil {
		t.Fatal(err)
	}

	events, err := lockview.KeyEvents(ctx, viewer, "ledger", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, actor, role string }{ // newest first
		{"force_expired", "bob@ops", operatorRole},
		{"acquired", "carol@ops", waitingRole},
		{"released", "alice@ops", forgerRole},
		{"stale_write_rejected", "alice@ops", forgerRole},
		{"acquired", "alice@ops", forgerRole},
	}
	if len(events) != len(want) {
		t.Fatalf("%d events; want %d: %+v", len(events), len(want), events)
	}
	for i, w := range want {
		ev := events[i]
		if ev.Kind != w.kind || ev.Actor != w.actor || ev.Role != w.role {
			t.Errorf("event %d: %s by %q as %q; want %s by %q as role %q", i, ev.Kind, ev.Actor, ev.Role, w.kind, w.actor, w.role)
		}
		if by, wantBy := ev.By(func(s string) string { return s }), w.actor+" (claimed) as role "+w.role; by != wantBy {
			t.Errorf("event %d reads %q; want %q", i, by, wantBy)
		}
	}
}
