package roles_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
	"github.com/lockctl/lockctl/store"
)

// Another service reads the leader's owner and term and proclaims as it:
// refused, and the value stays the leader's. A viewer reads the leader.
func TestAnotherServiceCannotProclaimForTheLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, victim, attacker := twoServices(t)
	viewer := e.roleWith(t, roles.Viewer)
	leader, err := election.New(victim, "scheduler:leader", election.Config{Owner: "scheduler-1", Locker: locker.Config{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := leader.Campaign(ctx, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Resign(ctx)
	var ok bool
	if err := attacker.QueryRow(ctx, `SELECT distributed_lock_proclaim('scheduler:leader', 'scheduler-1', $1, '"10.6.6.6"')`, term).Scan(&ok); err != nil || ok {
		t.Errorf("another service's proclaim = %v, %v; want false", ok, err)
	}
	got, err := election.Read(ctx, viewer, "scheduler:leader")
	if err != nil || got.Value != "10.0.0.1" || got.Term != term || got.Owner != "scheduler-1" {
		t.Errorf("the viewer reads %+v, %v; want the leader's own value at term %d", got, err, term)
	}
	_, err = viewer.Exec(ctx, `SELECT distributed_lock_proclaim('scheduler:leader', 'scheduler-1', $1, '"10.6.6.6"')`, term)
	if err = store.Interpret(err); !errors.Is(err, locker.ErrPermissionDenied) {
		t.Errorf("a viewer's proclaim = %v; want permission denied", err)
	}
}
