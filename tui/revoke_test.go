package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// v asks before revoking the selected lease; y revokes it: the holder keeps
// it (still held), and the event names the console's actor.
func TestRevokeConfirmedAsksTheHolder(t *testing.T) {
	pool := testdb.New(t)
	lease := acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	m = press(t, m, "v")
	s := screen(m)
	for _, want := range []string{"Revoke this lock?", "billing:nightly", "worker-1", fmt.Sprint(lease.Token), "asked to let go"} {
		if !strings.Contains(s, want) {
			t.Fatalf("dialog lacks %q:\n%s", want, s)
		}
	}
	m, cmd := update(t, m, keyMsg("y"))
	if cmd == nil {
		t.Fatal("y sent nothing")
	}
	done, ok := cmd().(actionDoneMsg)
	if !ok || done.err != nil || done.kind != actRevoke {
		t.Fatalf("revoke: %+v", done)
	}
	m, cmd = update(t, m, done)
	if cmd != nil {
		m = runPoll(t, m, cmd)
	}
	if s := screen(m); !strings.Contains(s, "✓ revoked billing:nightly") {
		t.Fatalf("result not shown:\n%s", s)
	}
	if l, _, _ := store.Get[lockdb.LockInfo](context.Background(), pool, "billing:nightly"); l.State() != lockdb.StateHeld || l.Token != lease.Token {
		t.Fatalf("after a revoke: %+v; want still held by the same grant", l)
	}
	evs, err := lockview.KeyEvents(context.Background(), pool, "billing:nightly", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventRevoked || evs[0].Actor != actor {
		t.Fatalf("event %+v, %v", evs, err)
	}
}

// Only a role that may revoke is offered it, and never read-only: v then
// opens nothing.
func TestRevokeFollowsTheRole(t *testing.T) {
	keys := DefaultKeyMap()
	caps := map[roles.Kind]store.RoleCapabilities{roles.Viewer: {}, roles.Service: {Hold: true},
		roles.Operator: {Force: true, EndDelay: true, EndSession: true, Revoke: true, Prune: true}}
	for kind, c := range caps {
		if got := keys.withCapabilities(c).Revoke.Enabled(); got != (kind == roles.Operator) {
			t.Errorf("%s: revoke enabled %v", kind, got)
		}
	}
	for name, m := range map[string]Model{
		"read-only": withSnapshot(t, testModel(t, Options{ReadOnly: true}, 120, 35), fixtureSnapshot()),
		"viewer": func() Model {
			s := fixtureSnapshot()
			s.Caps = &store.RoleCapabilities{}
			return withSnapshot(t, testModel(t, Options{}, 120, 35), s)
		}(),
	} {
		if m2 := press(t, m, "v"); m2.confirm != nil {
			t.Errorf("%s: v opened %+v", name, *m2.confirm)
		}
		if help := ansi.Strip(press(t, m, "?").View().Content); strings.Contains(help, "ask the holder to let go") {
			t.Errorf("%s: help offers revoke", name)
		}
	}
}
