package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// twoContexts is a console on staging's database that can switch to
// prod's (read-only), each a fresh schema with a lock of its own; closed
// counts the connections the console let go of.
func twoContexts(t *testing.T) (m Model, closed *atomic.Int32) {
	t.Helper()
	staging, prod := testdb.New(t), testdb.New(t)
	acquire(t, staging, "staging:only", "worker-s", time.Minute)
	acquire(t, prod, "prod:only", "worker-p", time.Minute)
	closed = &atomic.Int32{}
	contexts := []Context{
		{Name: "staging", Color: "green", Database: "postgres://ops@staging/app"},
		{Name: "prod", Color: "red", ReadOnly: true, Database: "service=prod"},
	}
	pools := map[string]Connection{"staging": {Pool: staging, Context: contexts[0]}, "prod": {Pool: prod, Context: contexts[1]}}
	connect := func(_ context.Context, name string) (Connection, error) {
		c, ok := pools[name]
		if !ok {
			return Connection{}, errors.New("no such context")
		}
		lk, err := locker.New(locker.Config{Actor: actor, LogGrants: true})
		if err != nil {
			return Connection{}, err
		}
		c.Locker, c.Operator, c.Server = lk, testdb.Operator(t, actor), name+"-db:5432/app"
		c.Close = func() { closed.Add(1) }
		return c, nil
	}
	first, err := connect(context.Background(), "staging")
	if err != nil {
		t.Fatal(err)
	}
	m = New(Options{Pool: first.Pool, Locker: first.Locker, Operator: first.Operator, Server: first.Server, Context: first.Context, Close: first.Close,
		Contexts: contexts, Connect: connect})
	m = step(t, m, tea.WindowSizeMsg{Width: 120, Height: 35})
	return runPoll(t, m, poll(m.ctx, m.source, m.seq, m.querySeq, m.pollRequest())), closed
}

// switchContext presses c, moves the picker's cursor down by moves and
// presses enter, then applies the switch and the first poll on the new
// connection.
func switchContext(t *testing.T, m Model, moves int) Model {
	t.Helper()
	m = press(t, m, "c")
	if m.picker == nil {
		t.Fatalf("c opened no picker:\n%s", screen(m))
	}
	for range moves {
		m = press(t, m, "down")
	}
	m, cmd := update(t, m, keyMsg("enter"))
	if cmd == nil {
		t.Fatal("enter on another context opened nothing")
	}
	m, cmd = update(t, m, cmd())
	return runBatch(t, m, cmd)
}

// runBatch runs a batch of commands as the program would, applying each
// message it yields, and a poll's reply last.
func runBatch(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	var polls []pageLoadedMsg
	var run func(cmd tea.Cmd)
	run = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		switch msg := cmd().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				run(c)
			}
		case pageLoadedMsg:
			polls = append(polls, msg)
		}
	}
	run(cmd)
	for _, p := range polls {
		m = step(t, m, p)
	}
	return m
}

// c opens the picker: each context, its database, prod read-only, staging
// in use; enter on prod moves the whole console there: its locks, its name
// in the header, no action (prod is read-only), and the staging
// connection closed.
func TestSwitchContext(t *testing.T) {
	m, closed := twoContexts(t)
	s := screen(m)
	if !strings.Contains(s, "staging:only") || !strings.Contains(s, " staging ") {
		t.Fatalf("before the switch:\n%s", s)
	}
	if help := screen(press(t, m, "?")); !strings.Contains(help, "switch context") {
		t.Errorf("help does not offer c:\n%s", help)
	}
	picker := screen(press(t, m, "c"))
	for _, want := range []string{"Switch context", "postgres://ops@staging/app", "service=prod", "read-only", "in use"} {
		if !strings.Contains(picker, want) {
			t.Errorf("the picker lacks %q:\n%s", want, picker)
		}
	}
	m = switchContext(t, m, 1)
	s = screen(m)
	header := strings.SplitN(s, "\n", 2)[0]
	if !strings.Contains(header, " prod ") || strings.Contains(header, " staging ") || !strings.Contains(header, "read-only context") ||
		!strings.Contains(header, "prod-db:5432/app") {
		t.Errorf("header after the switch: %q", header)
	}
	if !strings.Contains(s, "prod:only") || strings.Contains(s, "staging:only") {
		t.Errorf("after the switch the table is not prod's:\n%s", s)
	}
	if !strings.Contains(s, "switched to context prod") {
		t.Errorf("no message says the switch was done:\n%s", s)
	}
	if strings.Contains(s, "x expire") || m.keys.Expire.Enabled() || m.keys.Acquire.Enabled() {
		t.Errorf("a read-only context offers actions:\n%s", s)
	}
	if m2 := press(t, m, "x"); m2.confirm != nil {
		t.Error("x opened a confirmation on a read-only context")
	}
	if closed.Load() != 1 {
		t.Errorf("%d connections closed after the switch; want staging's", closed.Load())
	}
	// And back: the actions return with staging.
	m = switchContext(t, m, 1) // the cursor starts on prod, in use; down wraps to staging
	if s := screen(m); !strings.Contains(s, "staging:only") || !m.keys.Expire.Enabled() {
		t.Errorf("back on staging:\n%s", s)
	}
}

// A reply to a poll on the connection switched away from is dropped, and
// so is a connection opened for a switch that another superseded (it is
// closed unused).
func TestSwitchDropsWhatTheOldConnectionAnswers(t *testing.T) {
	m, closed := twoContexts(t)
	m, stale := update(t, m, pollTickMsg{gen: m.tickGen}) // a poll of staging, out
	m = press(t, m, "c", "down")
	m, open1 := update(t, m, keyMsg("enter"))
	m = press(t, m, "c", "down") // the cursor is on staging, in use: down to prod again
	m, open2 := update(t, m, keyMsg("enter"))
	first, second := open1(), open2()
	m, cmd := update(t, m, second)
	m = runBatch(t, m, cmd)
	m, closeUnused := update(t, m, first)
	if closeUnused == nil {
		t.Fatal("the superseded connection is not closed")
	}
	closeUnused()
	if closed.Load() != 2 {
		t.Errorf("%d connections closed; want staging's and the superseded one", closed.Load())
	}
	if stale != nil {
		m = step(t, m, stale())
	}
	if m.hasSnap && strings.Contains(screen(m), "staging:only") {
		t.Errorf("staging's reply shown after the switch:\n%s", screen(m))
	}
}

// Without Connect (the console over SSH, the demo) c is not offered.
func TestNoSwitchWithoutConnect(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{Contexts: []Context{{Name: "a"}}}, 120, 35), fixtureSnapshot())
	if help := screen(press(t, m, "?")); m.keys.Context.Enabled() || strings.Contains(help, "switch context") {
		t.Fatalf("c offered without Connect:\n%s", help)
	}
	if m = press(t, m, "c"); m.picker != nil {
		t.Fatal("c opened a picker without Connect")
	}
}

// A picker of more contexts than the terminal has rows for shows the
// cursor's, whichever it is.
func TestPickerScrollsToItsCursor(t *testing.T) {
	var many []Context
	for i := range 40 {
		many = append(many, Context{Name: fmt.Sprintf("region-%02d", i), Database: "service=r"})
	}
	m := testModel(t, Options{Contexts: many, Connect: func(context.Context, string) (Connection, error) { return Connection{}, nil }}, 80, 24)
	m = withSnapshot(t, m, fixtureSnapshot())
	m = press(t, m, "c")
	for range 30 {
		m = press(t, m, "down")
	}
	s := screen(m)
	if !strings.Contains(s, "▶  region-30") || strings.Contains(s, "region-00") {
		t.Fatalf("the picker with its cursor on region-30:\n%s", s)
	}
	if lines := strings.Count(s, "\n") + 1; lines != 24 {
		t.Fatalf("%d lines on a 24-line terminal", lines)
	}
}
