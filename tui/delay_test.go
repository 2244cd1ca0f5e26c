package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// delayedKey leaves key force-expired by an operator with a lock-delay of
// a minute, and a waiter queued for it.
func delayedKey(t *testing.T, pool store.DBTX, key string) locker.Lease {
	t.Helper()
	ctx := context.Background()
	lk, err := locker.New(locker.Config{TTL: time.Minute, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := testdb.TryDelayed(ctx, lk, pool, key, "worker-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Enqueue(ctx, pool, store.QueueParams{
		GrantParams: store.GrantParams{Key: key, Owner: "waiter-7", TTL: time.Minute},
		ClaimWindow: time.Second, SeenFor: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := (operator.Operator{}).ForceExpire(ctx, pool, key, lease.Token); err != nil {
		t.Fatal(err)
	}
	return lease
}

// A key in its lock-delay reads as delayed in the table, with the delay's
// time left, and the detail pane says the holder, the delay's end and the
// queue.
func TestDelayedKeyIsShownAsSuch(t *testing.T) {
	pool := testdb.New(t)
	delayedKey(t, pool, "billing:nightly")
	m := dbModel(t, pool, Options{}, 120, 35)
	if s := screen(m); !strings.Contains(s, "delayed, no grants") {
		t.Fatalf("table does not show the delay:\n%s", s)
	}
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	s := screen(m)
	for _, want := range []string{"delayed, no grants", "more: nobody is granted it before then",
		"lock-delay   1m", "until ", "queue        1 waiter", "worker-1", "waiter-7"} {
		if !strings.Contains(s, want) {
			t.Fatalf("detail lacks %q:\n%s", want, s)
		}
	}
}

// The delay's end passes between polls: the row is no longer shown as
// delayed, without waiting for the next poll.
func TestDelayEndsOnScreenBetweenPolls(t *testing.T) {
	var r lockview.ListedLock
	r.DBNow = time.Now()
	until := r.DBNow.Add(time.Second)
	r.DelayUntil, r.Remaining = &until, -time.Second
	if st := live(r, 500*time.Millisecond).state; st != lockdb.StateDelayed {
		t.Fatalf("half a second in: %s; want delayed", st)
	}
	if st := live(r, 1500*time.Millisecond).state; st != lockdb.StateExpired {
		t.Fatalf("after the delay: %s; want expired", st)
	}
}

// u asks before ending a delay (default No), then ends it under the
// operator's actor: the head waiter gets the key at once.
func TestEndDelayConfirmedHandsTheKeyOn(t *testing.T) {
	pool := testdb.New(t)
	lease := delayedKey(t, pool, "billing:nightly")
	m := dbModel(t, pool, Options{}, 120, 35)
	s := screen(press(t, m, "u"))
	for _, want := range []string{"End the lock-delay of this lock?", "billing:nightly", "worker-1", "Yes, end it (y)", "No (n/esc)"} {
		if !strings.Contains(s, want) {
			t.Fatalf("dialog lacks %q:\n%s", want, s)
		}
	}
	if m2, cmd := update(t, press(t, m, "u"), keyMsg("enter")); cmd != nil || m2.confirm != nil {
		t.Fatal("enter on the default (No) acted")
	}
	m, cmd := update(t, press(t, m, "u"), keyMsg("y"))
	if cmd == nil {
		t.Fatal("y sent nothing")
	}
	done := cmd().(actionDoneMsg)
	if done.err != nil || done.kind != actEndDelay || done.ended.Token != lease.Token {
		t.Fatalf("end-delay: %+v", done)
	}
	m, _ = update(t, m, done)
	if s := screen(m); !strings.Contains(s, "✓ ended the lock-delay of billing:nightly") {
		t.Fatalf("result not shown:\n%s", s)
	}
	l, _, _ := store.Get[lockdb.LockInfo](context.Background(), pool, "billing:nightly")
	if l.Owner != "waiter-7" || l.State() == lockdb.StateDelayed {
		t.Fatalf("after end-delay the key is %s's, %s; want handed to waiter-7", l.Owner, l.State())
	}
	evs, err := lockview.KeyEvents(context.Background(), pool, "billing:nightly", 10)
	found := false
	for _, e := range evs {
		found = found || e.Kind == lockdb.EventDelayEnded && e.Actor == actor
	}
	if err != nil || !found {
		t.Fatalf("no delay_ended event by %s: %+v, %v", actor, evs, err)
	}
	for _, e := range evs {
		started := e.Kind == lockdb.EventForceExpired || e.Kind == lockdb.EventDelayEnded
		if line := eventLine(m.styles, e, false); started && !strings.Contains(line, "lock-delay until ") {
			t.Errorf("event line %q does not say the lock-delay's end", line)
		}
	}
}

// u on a key in no lock-delay asks nothing and says why.
func TestEndDelayOnlyOnADelayedKey(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := press(t, dbModel(t, pool, Options{}, 120, 35), "u")
	if m.confirm != nil || !strings.Contains(m.flash.text, "not in a lock-delay") {
		t.Fatalf("u on a held key: confirm %v, flash %q", m.confirm, m.flash.text)
	}
}

// The key is offered only to a role that may end a delay.
func TestEndDelayFollowsTheRole(t *testing.T) {
	keys := DefaultKeyMap()
	for kind, can := range map[roles.Kind]bool{roles.Viewer: false, roles.Service: false, roles.Operator: true} {
		caps := map[roles.Kind]store.RoleCapabilities{roles.Viewer: {}, roles.Service: {Hold: true},
			roles.Operator: {Force: true, EndDelay: true, Prune: true}}[kind]
		if got := keys.withCapabilities(caps).EndDelay.Enabled(); got != can {
			t.Errorf("%s: end-delay enabled %v; want %v", kind, got, can)
		}
	}
}

var _ tea.Msg = actionDoneMsg{}

// A delayed key is counted as such in the header; when its lock-delay
// ends between polls it moves from delayed to free (force-released) at
// once, and the totals still add up.
func TestDelayEndingMovesTheTotals(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := testdb.TryDelayed(ctx, lk, pool, "k", "worker-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (operator.Operator{}).ForceRelease(ctx, pool, "k", lease.Token); err != nil {
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	before := m.liveTotals()
	if before.Delayed != 1 || before.Free != 0 || before.Expired != 0 {
		t.Fatalf("totals %+v; want the key delayed", before)
	}
	if s := screen(m); !strings.Contains(s, "expired 0 · delayed 1 · free 0") {
		t.Fatalf("header does not count the delayed key:\n%s", s)
	}
	m.snap.ReadAt = m.snap.ReadAt.Add(-2 * time.Second) // the delay has ended on screen
	if st := live(m.snap.Page.Rows[0], m.advance()).state; st != lockdb.StateFree {
		t.Fatalf("on screen 2s later the row is %s; want free", st)
	}
	if after := m.liveTotals(); after.Delayed != 0 || after.Free != 1 || after.All != 1 {
		t.Fatalf("totals after the delay's end %+v; want the key free", after)
	}
}

// The footer offers u on a delayed key, to a role that may end a delay:
// not on another key, not to a role without the grant, not read-only.
func TestFooterOffersEndDelayOnADelayedKey(t *testing.T) {
	footer := func(m Model) string { return ansi.Strip(m.footer()) }
	m := withSnapshot(t, testModel(t, Options{}, 120, 30), delayedSnapshot())
	if f := footer(m); !strings.Contains(f, "u end delay") {
		t.Errorf("footer on a delayed key: %q; want u", f)
	}
	if f := footer(press(t, m, "enter")); !strings.Contains(f, "u end delay") {
		t.Errorf("detail footer on a delayed key: %q; want u", f)
	}
	if f := footer(press(t, m, "j")); strings.Contains(f, "u end delay") {
		t.Errorf("footer on an expiring key: %q; want no u", f)
	}
	noGrant := delayedSnapshot()
	noGrant.Caps = &store.RoleCapabilities{Hold: true, Force: true}
	if f := footer(withSnapshot(t, testModel(t, Options{}, 120, 30), noGrant)); strings.Contains(f, "u end delay") || !strings.Contains(f, "x expire") {
		t.Errorf("footer for a role that may force but not end a delay: %q; want x and no u", f)
	}
	if f := footer(withSnapshot(t, testModel(t, Options{ReadOnly: true}, 120, 30), delayedSnapshot())); strings.Contains(f, "u end delay") {
		t.Errorf("read-only footer: %q; want no u", f)
	}
}
