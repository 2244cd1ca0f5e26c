package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// heldSession opens a session for owner that keeps keys, as lockctl run
// keeps its keys; it is closed when the test ends.
func heldSession(t *testing.T, pool *pgxpool.Pool, owner string, keys ...string) (*locker.Session, *locker.Keepalive) {
	t.Helper()
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	s, err := lk.OpenSession(ctx, pool, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys(keys...), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	keep := s.Keepalive(ctx, leases...)
	testdb.Eventually(t, 10*time.Second, "the leases bound to the session", func() bool {
		got, err := lockview.ReadSessions(ctx, pool)
		return err == nil && len(got) > 0 && got[len(got)-1].Leases == len(keys)
	})
	return s, keep
}

// openSessions puts the sessions page on screen and runs its poll.
func openSessions(t *testing.T, m Model) Model {
	t.Helper()
	m, cmd := update(t, m, keyMsg("S"))
	if m.active != pageSessions {
		t.Fatalf("S opened page %d; want the sessions page", m.active)
	}
	return runPoll(t, m, cmd)
}

// The sessions page lists each session read from the database (owner,
// host, pid, leases, time left, live); x asks first (default No), then
// ends the session under the console's actor: its leases are
// force-expired, its Keepalive learns it lost them, and the page and the
// event log show it.
func TestEndSessionFromTheSessionsPage(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	s, keep := heldSession(t, pool, "runner", "k1", "k2")
	m := openSessions(t, dbModel(t, pool, Options{}, 120, 35))
	screenText := screen(m)
	row := ""
	for _, l := range strings.Split(screenText, "\n") {
		if strings.Contains(l, "runner") {
			row = l
		}
	}
	f := strings.Fields(strings.TrimPrefix(row, "▶"))
	if len(f) < 7 || f[0] != fmt.Sprint(s.ID()) || f[1] != "runner" || f[3] == "0" || f[4] != "2" || f[len(f)-1] != "live" {
		t.Fatalf("sessions page row %q; want id, runner, host, pid, 2 leases, live:\n%s", row, screenText)
	}

	if m2, cmd := update(t, press(t, m, "x"), keyMsg("enter")); cmd != nil || m2.confirm != nil {
		t.Fatal("enter on the default (No) acted")
	}
	asked := press(t, m, "x")
	if d := screen(asked); !strings.Contains(d, "End this session?") || !strings.Contains(d, "runner") || !strings.Contains(d, "leases 2") {
		t.Fatalf("dialog:\n%s", d)
	}
	m, cmd := update(t, asked, keyMsg("y"))
	if cmd == nil {
		t.Fatal("y sent nothing")
	}
	done := cmd().(actionDoneMsg)
	if done.err != nil || done.kind != actEndSession || done.session != s.ID() || done.expired != 2 {
		t.Fatalf("end-session: %+v", done)
	}
	m, cmd = update(t, m, done)
	if want := fmt.Sprintf("✓ ended session %d: 2 leases force-expired", s.ID()); !strings.Contains(screen(m), want) {
		t.Fatalf("result not shown (want %q):\n%s", want, screen(m))
	}
	m = runPoll(t, m, cmd)
	if got := screen(m); strings.Contains(got, "runner") || !strings.Contains(got, "no sessions") {
		t.Fatalf("the ended session is still listed:\n%s", got)
	}
	testdb.Eventually(t, 30*time.Second, "the Keepalive told its session is lost", func() bool { return context.Cause(keep.Context()) != nil })
	if !errors.Is(context.Cause(keep.Context()), locker.ErrSessionLost) {
		t.Errorf("keepalive ended with %v; want ErrSessionLost", context.Cause(keep.Context()))
	}
	for _, key := range []string{"k1", "k2"} {
		if l, _, _ := store.Get[lockdb.LockInfo](ctx, pool, key); l.State() != lockdb.StateExpired {
			t.Errorf("%s is %s after its session ended; want expired", key, l.State())
		}
	}
	events, err := lockview.RecentEvents(ctx, pool, 0, 10)
	if err != nil || len(events) == 0 || events[0].Kind != lockdb.EventSessionEnded || events[0].Actor != actor {
		t.Fatalf("newest events %+v, %v; want session_ended by %s", events, err, actor)
	}
	if line := ansi.Strip(eventLine(m.styles, events[0], true)); !strings.Contains(line, fmt.Sprintf("session_ended         session %d  owner runner", s.ID())) ||
		!strings.Contains(line, "2 leases force-expired") || !strings.Contains(line, "by "+actor) {
		t.Errorf("event line %q", line)
	}

	// Ended meanwhile: the console says so.
	gone := actionResult(actionDoneMsg{kind: actEndSession, key: fmt.Sprintf("session %d", s.ID()), err: fmt.Errorf("x: %w", operator.ErrNoSession)})
	if gone.kind != flashError || !strings.Contains(gone.text, "is gone already") {
		t.Errorf("ending a session gone meanwhile: %+v", gone)
	}
}

// A session's time left counts down between polls, as a lease's does, and
// it reads lapsed once none is left; a lapsed session is not offered for
// ending.
func TestSessionsCountDownAndLapse(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 30), fixtureSnapshot())
	m = press(t, m, "S")
	s := fixtureSnapshot()
	s.Sessions = fixtureSessions()
	m = withSnapshot(t, m, s)
	if got := screen(m); !strings.Contains(got, "20.5s live") {
		t.Fatalf("first session 1.5s after its read:\n%s", got)
	}
	m = at(t, m, t0.Add(10*time.Second))
	if got := screen(m); !strings.Contains(got, "12s live") {
		t.Fatalf("first session 10s after its read:\n%s", got)
	}
	m = at(t, m, t0.Add(23*time.Second))
	if got := screen(m); !strings.Contains(got, "1 live · 2 lapsed") {
		t.Fatalf("after its time ran out the first session still counts as live:\n%s", got)
	}
	m = press(t, m, "x")
	if m.confirm != nil || !strings.Contains(m.flash.text, "has lapsed") {
		t.Fatalf("x on a lapsed session: confirm %v, flash %q", m.confirm, m.flash.text)
	}
	// Opened again later, it waits for a fresh read rather than count
	// down what it read then from the newest poll.
	if got := screen(press(t, m, "esc", "S")); !strings.Contains(got, "reading the sessions…") || strings.Contains(got, "worker-3") {
		t.Fatalf("sessions page opened again:\n%s", got)
	}
}

// x ends a session only for a role that may, and never read-only, where
// the footer does not offer it; nor does x on the sessions page touch the
// home page's selected lock.
func TestEndSessionFollowsTheRole(t *testing.T) {
	keys := DefaultKeyMap()
	caps := map[roles.Kind]store.RoleCapabilities{roles.Viewer: {}, roles.Service: {Hold: true},
		roles.Operator: {Force: true, EndDelay: true, EndSession: true, Prune: true}}
	for kind, c := range caps {
		if got := keys.withCapabilities(c).EndSession.Enabled(); got != (kind == roles.Operator) {
			t.Errorf("%s: end-session enabled %v", kind, got)
		}
	}
	sessionsOn := func(opts Options, c *store.RoleCapabilities) Model {
		s := fixtureSnapshot()
		s.Sessions, s.Caps = fixtureSessions(), c
		m := press(t, withSnapshot(t, testModel(t, opts, 120, 30), s), "S")
		return withSnapshot(t, m, s)
	}
	footer := func(m Model) string { return ansi.Strip(m.footer()) }
	if f := footer(sessionsOn(Options{}, nil)); !strings.Contains(f, "x end session") {
		t.Errorf("footer %q; want x end session", f)
	}
	for name, m := range map[string]Model{
		"read-only":       sessionsOn(Options{ReadOnly: true}, nil),
		"force, no grant": sessionsOn(Options{}, &store.RoleCapabilities{Hold: true, Force: true}),
	} {
		if f := footer(m); strings.Contains(f, "end session") {
			t.Errorf("%s: footer %q offers end session", name, f)
		}
		if m = press(t, m, "x"); m.confirm != nil {
			t.Errorf("%s: x opened %+v", name, *m.confirm)
		}
	}
	if !key.Matches(keyMsg("S"), keys.Sessions) {
		t.Error("S does not open the sessions page")
	}
}

// The whole program: S shows the session a process keeps its keys with,
// x then y ends it, and the page, refreshed, no longer lists it.
func TestProgramEndsASession(t *testing.T) {
	pool := testdb.New(t)
	heldSession(t, pool, "svc-runner:1:feed", "job:a", "job:b")
	tm := startProgram(t, pool, 200*time.Millisecond)
	waitOutput(t, tm, "job:a", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'S', Text: "S"})
	waitOutput(t, tm, "svc-runner:1:feed", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	waitOutput(t, tm, "End this session?", 10*time.Second)
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	// The flash and the emptied page may come in one frame, and the
	// renderer does not draw an unchanged line again: wait for both at once.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("2 leases force-expired")) && bytes.Contains(b, []byte("no sessions"))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
