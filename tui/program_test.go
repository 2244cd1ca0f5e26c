package tui

import (
	"bytes"
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestProgramSmoke runs the whole program (Init, ticks, polls, keys, the
// renderer) against a real database: the table fills, x then y expires
// the selected lock with the console's actor, and q quits.
func TestProgramSmoke(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "smoke:lock", "worker-1", time.Minute)
	lk, err := locker.New(locker.Config{Actor: actor, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Pool: pool, Locker: lk, Server: "test", Refresh: 200 * time.Millisecond})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 35))
	waitFor := func(what string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	waitFor("smoke:lock")
	tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	waitFor("Force-expire this lock?")
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	waitFor("force-expired")
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))

	evs, err := lockview.KeyEvents(context.Background(), pool, "smoke:lock", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockview.EventForceExpired || evs[0].Actor != actor {
		t.Fatalf("last event %+v, %v", evs, err)
	}
	final := tm.FinalModel(t).(Model)
	if final.failures != 0 || final.seq < 2 {
		t.Fatalf("final model: %d failures, %d polls", final.failures, final.seq)
	}
}
