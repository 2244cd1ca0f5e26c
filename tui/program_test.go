package tui

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// startProgram runs the whole console program (Init, ticks, polls, keys,
// the renderer) on pool in a 120x35 test terminal, acting as actor and
// logging grants as lockctl's console does.
func startProgram(t *testing.T, pool *pgxpool.Pool, refresh time.Duration) *teatest.TestModel {
	t.Helper()
	lk, err := locker.New(locker.Config{Actor: actor, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Pool: pool, Locker: lk, Operator: testdb.Operator(t, actor), Server: "test", Refresh: refresh})
	return teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 35))
}

// waitOutput waits until the program has drawn what, or fails the test.
func waitOutput(t *testing.T, tm *teatest.TestModel, what string, within time.Duration) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
		teatest.WithDuration(within), teatest.WithCheckInterval(20*time.Millisecond))
}

// TestProgramSmoke runs the whole program (Init, ticks, polls, keys, the
// renderer) against a real database: the table fills, x then y expires
// the selected lock with the console's actor, and q quits.
func TestProgramSmoke(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "smoke:lock", "worker-1", time.Minute)
	tm := startProgram(t, pool, 200*time.Millisecond)
	waitOutput(t, tm, "smoke:lock", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	waitOutput(t, tm, "Force-expire this lock?", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	waitOutput(t, tm, "force-expired", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))

	evs, err := lockview.KeyEvents(context.Background(), pool, "smoke:lock", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceExpired || evs[0].Actor != actor {
		t.Fatalf("last event %+v, %v", evs, err)
	}
	final := tm.FinalModel(t).(Model)
	if final.failures != 0 || final.seq < 2 {
		t.Fatalf("final model: %d failures, %d polls", final.failures, final.seq)
	}
}

// TestProgramHidesActionsTheRoleLacks runs the program as an operator role
// (may force, may not hold): x is offered and works, a and r are neither in
// the footer nor act.
func TestProgramHidesActionsTheRoleLacks(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.DSN(t)
	admin := testdb.Pool(t, dsn)
	acquire(t, admin, "ops:lock", "worker-1", time.Minute)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	role := fmt.Sprintf("lockctl_tui_operator_%d", os.Getpid())
	quoted := pgx.Identifier{role}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE ROLE "+quoted+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+quoted)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+quoted)
	})
	grants, err := roles.Statements(roles.Operator, cfg.ConnConfig.RuntimeParams["search_path"], role)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		if _, err := admin.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	cfg.ConnConfig.User = role
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tm := startProgram(t, pool, 200*time.Millisecond)
	// The row arrives with the first poll, which also reads the capabilities.
	waitOutput(t, tm, "ops:lock", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'a', Text: "a"})
	tm.Send(tea.KeyPressMsg{Code: 'r', Text: "r"})
	tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	waitOutput(t, tm, "Force-expire this lock?", 5*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	waitOutput(t, tm, "✓ force-expired ops:lock", 5*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	final := tm.FinalModel(t).(Model)
	if final.form != nil || !final.hasCaps || final.caps.Hold {
		t.Fatalf("final model: form open %v, capabilities %+v (read %v)", final.form != nil, final.caps, final.hasCaps)
	}
	lines := strings.Split(screen(final), "\n")
	if footer := lines[len(lines)-1]; !strings.Contains(footer, "x expire • d release • b blocking • h hot keys") {
		t.Fatalf("footer %q: want expire and release, no renew or acquire", footer)
	}
	if evs, err := lockview.KeyEvents(ctx, admin, "ops:lock", 1); err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceExpired || evs[0].Actor != actor {
		t.Fatalf("events %+v, %v", evs, err)
	}
}

// TestProgramForceReleasesOneHolder runs the program on a shared key with
// two holders: enter lists them, ↓ selects the first, d then y frees its
// lease alone.
func TestProgramForceReleasesOneHolder(t *testing.T) {
	pool := testdb.New(t)
	a := acquireShared(t, pool, "readers:catalog", "reader-a", 0, time.Minute)
	acquireShared(t, pool, "readers:catalog", "reader-b", 0, time.Minute)
	tm := startProgram(t, pool, 200*time.Millisecond)
	waitOutput(t, tm, "shared · 2 holders", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitOutput(t, tm, "Holders (2, in slot order)", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
	tm.Send(tea.KeyPressMsg{Code: 'd', Text: "d"})
	waitOutput(t, tm, "Force-release this holder?", 5*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	// The result, and the poll after it: its history line, drawn whole
	// (the renderer redraws only the cells that change), maybe in the
	// same frame.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("✓ force-released holder reader-a")) && bytes.Contains(b, []byte("force_released"))
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if s := screen(tm.FinalModel(t).(Model)); !strings.Contains(s, "Holders (1, in slot order)") || !strings.Contains(s, "slot 2  reader-b") {
		t.Fatalf("final screen:\n%s", s)
	}
	if got := holdersOf(t, pool, "readers:catalog"); len(got) != 1 || got[0] != "reader-b" {
		t.Fatalf("holders %v, want reader-b alone", got)
	}
	evs, err := lockview.KeyEvents(context.Background(), pool, "readers:catalog", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceReleased || *evs[0].Token != a.Token || evs[0].Actor != actor {
		t.Fatalf("last event %+v, %v", evs, err)
	}
}
