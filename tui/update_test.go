package tui

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

const actor = "alice@ops-console"

// dbModel is a console on a fresh migrated schema, with the first poll run.
func dbModel(t *testing.T, pool *pgxpool.Pool, opts Options, w, h int) Model {
	t.Helper()
	lk, err := locker.New(locker.Config{Actor: actor, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.Pool, opts.Locker, opts.Operator = pool, lk, testdb.Operator(t, actor)
	m := New(opts)
	m = step(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	return runPoll(t, m, poll(m.ctx, m.source, m.seq, m.querySeq, m.pollRequest()))
}

// runPoll runs a poll command and applies its reply.
func runPoll(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		t.Fatal("expected a poll command, got none")
	}
	msg, ok := cmd().(pageLoadedMsg)
	if !ok {
		t.Fatalf("command did not poll")
	}
	return step(t, m, msg)
}

// repoll asks for a poll as a refresh tick would and applies it.
func repoll(t *testing.T, m Model) Model {
	t.Helper()
	m, cmd := update(t, m, pollTickMsg{gen: m.tickGen})
	return runPoll(t, m, cmd)
}

func acquire(t *testing.T, pool *pgxpool.Pool, key, owner string, ttl time.Duration) locker.Lease {
	t.Helper()
	lk, err := locker.New(locker.Config{TTL: ttl, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := testdb.Try(context.Background(), lk, pool, key, owner)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

func TestPollShowsLocksFromDatabase(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	acquire(t, pool, "evil\x1b]2;owned\x07\x1b[2J", "bad\x1b[31mowner", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	view := m.View().Content
	for _, want := range []string{"billing:nightly", `evil\x1b]2;owned\x07`, `bad\x1b[31mowner`, "● live", "locks 2"} {
		if !strings.Contains(screen(m), want) {
			t.Errorf("screen lacks %q:\n%s", want, screen(m))
		}
	}
	// The raw output must never carry the database's escape sequences.
	for _, bad := range []string{"\x1b]2;owned", "\x1b[2J", "\x07"} {
		if strings.Contains(view, bad) {
			t.Errorf("view contains raw %q", bad)
		}
	}
}

// The first poll reads the role's capabilities from the database; the
// table's owner may do everything.
func TestPollReadsCapabilities(t *testing.T) {
	m := dbModel(t, testdb.New(t), Options{}, 120, 35)
	if !m.hasCaps || m.caps != (store.RoleCapabilities{Hold: true, Force: true, EndDelay: true, EndSession: true, Revoke: true, Prune: true}) {
		t.Fatalf("capabilities %+v (read: %v)", m.caps, m.hasCaps)
	}
	if req := m.pollRequest(); req.Caps {
		t.Error("capabilities read again on every poll")
	}
}

func TestPollsNeverOverlapAndStaleRepliesAreDropped(t *testing.T) {
	m := testModel(t, Options{}, 120, 35)
	first := m.seq
	// A tick while the first poll is out does nothing.
	m, cmd := update(t, m, pollTickMsg{gen: m.tickGen})
	if cmd != nil || m.seq != first {
		t.Fatalf("tick during a poll sent another (seq %d → %d)", first, m.seq)
	}
	// Changing the sort while the poll is out queues one, it does not send it.
	m, cmd = update(t, m, keyMsg("s"))
	if cmd != nil || !m.pending || m.seq != first {
		t.Fatalf("sort during a poll: cmd=%v pending=%v seq=%d", cmd != nil, m.pending, m.seq)
	}
	// The reply to the old sort is dropped and the queued poll goes out.
	m, cmd = update(t, m, pageLoadedMsg{seq: first, querySeq: 0, snap: fixtureSnapshot()})
	if m.hasSnap {
		t.Fatal("a reply to the old sort was shown")
	}
	if cmd == nil || m.seq != first+1 || !m.inflight {
		t.Fatalf("queued poll not sent: seq %d inflight %v", m.seq, m.inflight)
	}
	// A reply with another sequence number is ignored.
	m2 := step(t, m, pageLoadedMsg{seq: first, querySeq: m.querySeq, snap: fixtureSnapshot()})
	if m2.hasSnap || !m2.inflight {
		t.Fatal("stale reply applied")
	}
	// The matching reply is applied and arms the next tick.
	m, cmd = update(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: fixtureSnapshot()})
	if !m.hasSnap || m.inflight || cmd == nil {
		t.Fatal("reply not applied or next tick not armed")
	}
}

func TestIntervalChangeRetiresOldTicks(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	oldGen := m.tickGen
	m = press(t, m, "+")
	if m.refresh != 2*time.Second || m.tickGen == oldGen {
		t.Fatalf("refresh %s gen %d (was %d)", m.refresh, m.tickGen, oldGen)
	}
	if _, cmd := update(t, m, pollTickMsg{gen: oldGen}); cmd != nil {
		t.Fatal("a tick armed under the old interval still polled")
	}
	if _, cmd := update(t, m, pollTickMsg{gen: m.tickGen}); cmd == nil {
		t.Fatal("the current tick did not poll")
	}
	m = press(t, m, "-", "-", "-", "-", "-")
	if m.refresh != 250*time.Millisecond {
		t.Fatalf("refresh %s after going faster, want the 250ms floor", m.refresh)
	}
	if !strings.Contains(screen(m), "every 250ms") {
		t.Fatalf("header does not show the interval:\n%s", screen(m))
	}
}

func TestPauseStopsPolling(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	m = press(t, m, "space")
	if _, cmd := update(t, m, pollTickMsg{gen: m.tickGen}); cmd != nil {
		t.Fatal("paused console polled")
	}
	if !strings.Contains(screen(m), "paused") {
		t.Fatal("pause not shown")
	}
	m, cmd := update(t, m, keyMsg("space"))
	if cmd == nil || !m.inflight {
		t.Fatal("resume did not poll at once")
	}
}

func TestFailureKeepsSnapshotBacksOffAndRecovers(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	for attempt := 1; attempt <= 3; attempt++ {
		m = step(t, m, pollTickMsg{gen: m.tickGen})
		var cmd tea.Cmd
		m, cmd = update(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq,
			err: connRefused()})
		if cmd == nil {
			t.Fatal("no retry armed after a failure")
		}
		s := screen(m)
		for _, want := range []string{fmt.Sprintf("reconnecting, attempt %d", attempt), "connection refused", "billing:nightly", "last good data"} {
			if !strings.Contains(s, want) {
				t.Fatalf("attempt %d: screen lacks %q:\n%s", attempt, want, s)
			}
		}
	}
	if got := backoff(m.refresh, m.failures); got != 4*time.Second {
		t.Fatalf("backoff after 3 failures = %s, want 4s", got)
	}
	m = step(t, m, pollTickMsg{gen: m.tickGen})
	m = step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: fixtureSnapshot()})
	if s := screen(m); !strings.Contains(s, "● live") || strings.Contains(s, "reconnecting") {
		t.Fatalf("not recovered:\n%s", s)
	}
}

func TestSlowPollShowsAsState(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	m = step(t, m, pollTickMsg{gen: m.tickGen})
	m.now = func() time.Time { return m.inflightSince.Add(2 * time.Second) }
	if s := screen(m); !strings.Contains(s, "slow: no reply for 2s") {
		t.Fatalf("slow poll not shown:\n%s", s)
	}
}

func TestCountdownUsesMonotonicElapsedSincePoll(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	row := func(m Model, key string) string {
		for _, l := range strings.Split(screen(m), "\n") {
			if strings.Contains(l, key) {
				return l
			}
		}
		return ""
	}
	if l := row(m, "cache:warmup"); !strings.Contains(l, "1.5s") || !strings.Contains(l, "expiring") {
		t.Fatalf("cache:warmup at +1.5s: %q", l)
	}
	m = at(t, m, t0.Add(4*time.Second))
	if l := row(m, "cache:warmup"); !strings.Contains(l, "-1s") || !strings.Contains(l, "expired") {
		t.Fatalf("cache:warmup at +4s should have run out: %q", l)
	}
	if l := row(m, "billing:nightly"); !strings.Contains(l, " 18s ") {
		t.Fatalf("billing:nightly at +4s: %q", l)
	}
}

func TestSelectionFollowsKeyAcrossRefreshes(t *testing.T) {
	pool := testdb.New(t)
	for i := range 30 {
		acquire(t, pool, fmt.Sprintf("job:%02d", i), "w", time.Minute)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	m = press(t, m, "down", "down", "down")
	if k, _ := m.locks().selected(); k.Key != "job:03" {
		t.Fatalf("selected %q, want job:03", k.Key)
	}
	// Rows appear before it: the selection stays on job:03.
	for i := range 5 {
		acquire(t, pool, fmt.Sprintf("a:%d", i), "w", time.Minute)
	}
	m = repoll(t, m)
	if k, _ := m.locks().selected(); k.Key != "job:03" || m.locks().selRank != 8 {
		t.Fatalf("after inserts selected %q at %d, want job:03 at 8", k.Key, m.locks().selRank)
	}
	if !strings.Contains(screen(m), "row 9 of 35") {
		t.Fatalf("position not shown:\n%s", screen(m))
	}
}

func TestScrollingLargeTableFetchesWindows(t *testing.T) {
	pool := testdb.New(t)
	if _, err := pool.Exec(context.Background(), `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
SELECT 'k:' || lpad(i::text, 5, '0'), 'w', nextval('distributed_lock_fence_seq'),
       clock_timestamp() + interval '1 hour', interval '1 hour', clock_timestamp()
FROM generate_series(1, 12000) i`); err != nil {
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	if n := len(m.snap.Page.Rows); n > 4*m.locks().tableRows+1 {
		t.Fatalf("poll read %d rows for a %d-row screen", n, m.locks().tableRows)
	}
	// Page down until the window must move; each poll recentres it.
	for i := 0; i < 20; i++ {
		var cmd tea.Cmd
		m, cmd = update(t, m, keyMsg("pgdown"))
		if cmd != nil {
			m = runPoll(t, m, cmd)
		}
	}
	want := fmt.Sprintf("k:%05d", 1+20*m.locks().tableRows)
	if k, _ := m.locks().selected(); k.Key != want {
		t.Fatalf("after 20 pages selected %q, want %q", k.Key, want)
	}
	m, cmd := update(t, m, keyMsg("end"))
	m = runPoll(t, m, cmd)
	if k, _ := m.locks().selected(); k.Key != "k:12000" || !strings.Contains(screen(m), "row 12000 of 12000") {
		t.Fatalf("end: selected %q\n%s", k.Key, screen(m))
	}
	m, cmd = update(t, m, keyMsg("home"))
	m = runPoll(t, m, cmd)
	if k, _ := m.locks().selected(); k.Key != "k:00001" {
		t.Fatalf("home: selected %q", k.Key)
	}
}

// In a column order each poll hands the store the last page's span, so
// the window is read in one pass while it stays put; scrolling moves it
// off the span and must still land on the right rows.
func TestScrollingByTTLPassesTheLastSpan(t *testing.T) {
	pool := testdb.New(t)
	if _, err := pool.Exec(context.Background(), `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
SELECT 'k:' || lpad(i::text, 5, '0'), 'w', nextval('distributed_lock_fence_seq'),
       clock_timestamp() + interval '1 hour' - i * interval '1 millisecond', interval '2 hours', clock_timestamp()
FROM generate_series(1, 3000) i`); err != nil {
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	for m.locks().order != lockview.SortTTL {
		var cmd tea.Cmd
		if m, cmd = update(t, m, keyMsg("s")); cmd != nil {
			m = runPoll(t, m, cmd)
		}
	}
	m, cmd := update(t, m, keyMsg("home")) // the selection kept its key, now the last row
	m = runPoll(t, m, cmd)
	for i := 0; i < 5; i++ {
		var cmd tea.Cmd
		m, cmd = update(t, m, keyMsg("pgdown"))
		if cmd != nil {
			m = runPoll(t, m, cmd)
		}
		m = repoll(t, m) // a refresh with the selection still
		if m.snap.Page.Span == (lockview.Span{}) || m.pollRequest().Query.Near != m.snap.Page.Span {
			t.Fatalf("the next poll does not carry the last page's span")
		}
	}
	// Soonest expiry first: k:03000 has the least time left.
	want := fmt.Sprintf("k:%05d", 3000-5*m.locks().tableRows)
	if k, _ := m.locks().selected(); k.Key != want {
		t.Fatalf("after 5 pages by TTL selected %q, want %q", k.Key, want)
	}
}

func TestFilterRunsInTheQuery(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	acquire(t, pool, "reports:daily", "worker-2", time.Minute)
	acquire(t, pool, "100%_done", "worker-3", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	m, _ = update(t, m, keyMsg("/"))
	for _, r := range "%_" {
		var cmd tea.Cmd
		m, cmd = update(t, m, keyMsg(string(r)))
		if cmd != nil {
			m.inflight = false // the first poll went out with Init in a real program
			m.pending = false
			m = runPoll(t, m, m.requestPoll())
		}
	}
	m = press(t, m, "enter")
	s := screen(m)
	if !strings.Contains(s, "100%_done") || strings.Contains(s, "billing:nightly") || !strings.Contains(s, "row 1 of 1") {
		t.Fatalf("filter %q:\n%s", m.locks().filter, s)
	}
}

// Until the reply to a new filter is in, the rows shown are the old
// query's: none is selected, so enter opens nothing and the actions have
// no lock, and the rows the filter drops are hidden.
func TestNewFilterSelectsNothingUntilItsReply(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	acquire(t, pool, "reports:daily", "worker-2", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	if k, _ := m.locks().selected(); k.Key != "billing:nightly" {
		t.Fatalf("selected %q before the filter; want billing:nightly", k.Key)
	}
	m = press(t, m, append(append([]string{"/"}, strings.Split("reports", "")...), "enter")...)
	s := screen(m)
	if strings.Contains(s, "billing:nightly") || !strings.Contains(s, "reports:daily") || !strings.Contains(s, "reading…") {
		t.Fatalf("filter typed, its reply not in:\n%s", s)
	}
	for _, k := range []string{"enter", "x", "g"} {
		if m = press(t, m, k); m.active != pageLocks || m.confirm != nil {
			t.Fatalf("%s before the filter's reply opened %v (dialog %v):\n%s", k, m.active, m.confirm != nil, screen(m))
		}
	}
	m.inflight, m.pending = false, false // the reply to the old query came back meanwhile
	m = runPoll(t, m, m.requestPoll())
	if s := screen(m); !regexp.MustCompile(`row 1 of 1\b`).MatchString(s) || strings.Contains(s, "reading…") {
		t.Fatalf("after the reply:\n%s", s)
	}
	if m = press(t, m, "enter"); m.active != pageDetail || !strings.Contains(screen(m), "Lock reports:daily") {
		t.Fatalf("enter after the reply:\n%s", screen(m))
	}
}

// expireSelected presses x and y on the selected row and runs the action.
func expireSelected(t *testing.T, m Model) (Model, actionDoneMsg) {
	t.Helper()
	m = press(t, m, "x")
	if m.confirm == nil {
		t.Fatalf("x did not ask:\n%s", screen(m))
	}
	m, cmd := update(t, m, keyMsg("y"))
	if cmd == nil {
		t.Fatal("y sent nothing")
	}
	done, ok := cmd().(actionDoneMsg)
	if !ok {
		t.Fatal("not an action result")
	}
	m, cmd = update(t, m, done)
	if cmd != nil {
		m = runPoll(t, m, cmd)
	}
	return m, done
}

func TestForceExpireConfirmedRecordsActor(t *testing.T) {
	pool := testdb.New(t)
	lease := acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	s := screen(press(t, m, "x"))
	for _, want := range []string{"Force-expire this lock?", "billing:nightly", "worker-1", fmt.Sprint(lease.Token), "No (n/esc)"} {
		if !strings.Contains(s, want) {
			t.Fatalf("dialog lacks %q:\n%s", want, s)
		}
	}
	m, done := expireSelected(t, m)
	if done.err != nil {
		t.Fatal(done.err)
	}
	if s := screen(m); !strings.Contains(s, "✓ force-expired billing:nightly") || !strings.Contains(s, "expired, stealable") {
		t.Fatalf("result not shown:\n%s", s)
	}
	evs, err := lockview.KeyEvents(context.Background(), pool, "billing:nightly", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceExpired || evs[0].Actor != actor {
		t.Fatalf("event %+v, %v", evs, err)
	}
}

func TestConfirmDefaultsToNo(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	for _, cancel := range []string{"enter", "n", "esc"} {
		m2, cmd := update(t, press(t, m, "x"), keyMsg(cancel))
		if cmd != nil || m2.confirm != nil || !strings.Contains(m2.flash.text, "cancelled") {
			t.Fatalf("%s did not cancel", cancel)
		}
	}
	// tab moves the focus to Yes; then enter confirms.
	m2, cmd := update(t, press(t, m, "d", "tab"), keyMsg("enter"))
	if cmd == nil || m2.confirm != nil {
		t.Fatal("enter on Yes did not act")
	}
	if done := cmd().(actionDoneMsg); done.err != nil || done.kind != actRelease {
		t.Fatalf("release: %+v", done)
	}
	l, _, _ := store.Get[lockdb.LockInfo](context.Background(), pool, "billing:nightly")
	if l.State() != lockdb.StateFree {
		t.Fatalf("state %s after force-release", l.State())
	}
}

// A refused force-expire names the new holder first, so the name is on
// screen even at 120 columns with a long key.
func TestActionOnChangedLockSaysWhoHoldsItNow(t *testing.T) {
	pool := testdb.New(t)
	key := "billing:nightly:tenant-0042:generate-monthly-statements-for-every-customer"
	acquire(t, pool, key, "worker-1", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	testdb.ExpireLease(t, pool, key)
	newer := acquire(t, pool, key, "worker-2:batch-host-17:8812", time.Minute) // steals it
	m, done := expireSelected(t, m)
	if !errors.Is(done.err, locker.ErrNotHeld) {
		t.Fatalf("err = %v, want ErrNotHeld", done.err)
	}
	want := fmt.Sprintf("now held by worker-2:batch-host-17:8812 (token %s)", fencetoken.Format(newer.Token))
	lines := strings.Split(screen(m), "\n")
	if flashLine := lines[len(lines)-2]; !strings.Contains(flashLine, want) || !strings.Contains(flashLine, "force-expire refused") {
		t.Fatalf("status line %q lacks %q", flashLine, want)
	}
	l, _, _ := store.Get[lockdb.LockInfo](context.Background(), pool, key)
	if l.Token != newer.Token || l.State() != lockdb.StateHeld {
		t.Fatalf("the newer holder was touched: %+v", l)
	}
}

func TestActionDuringOutageChangesNothing(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := dbModel(t, pool, Options{}, 120, 35)
	dead, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	m.opts.Pool = dead
	m, done := expireSelected(t, m)
	if done.err == nil {
		t.Fatal("expire against a dead database succeeded")
	}
	if !strings.Contains(m.flash.text, "failed, nothing changed") || !strings.Contains(m.flash.text, "unreachable") {
		t.Fatalf("flash %q", m.flash.text)
	}
	l, _, _ := store.Get[lockdb.LockInfo](context.Background(), pool, "billing:nightly")
	if l.State() != lockdb.StateHeld {
		t.Fatalf("state %s", l.State())
	}
}

func TestRenewAndAcquireThroughLocker(t *testing.T) {
	pool := testdb.New(t)
	lease := acquire(t, pool, "billing:nightly", "worker-1", 10*time.Second)
	m := dbModel(t, pool, Options{Owner: "console-owner", TTL: 45 * time.Second}, 120, 35)
	m, cmd := update(t, m, keyMsg("r"))
	done := cmd().(actionDoneMsg)
	if done.err != nil || done.lease.Token != lease.Token {
		t.Fatalf("renew: %+v", done)
	}
	m = step(t, m, done)
	if !strings.Contains(m.flash.text, "✓ renewed billing:nightly") {
		t.Fatalf("flash %q", m.flash.text)
	}
	// Acquire: the form defaults owner and TTL; type a key.
	m = press(t, m, "a")
	if m.form == nil || m.form.inputs[1].Value() != "console-owner" || m.form.inputs[2].Value() != "45s" {
		t.Fatal("acquire form defaults wrong")
	}
	m = press(t, m, "n", "e", "w")
	m, cmd = update(t, m, keyMsg("enter"))
	done = cmd().(actionDoneMsg)
	if done.err != nil || done.lease.Owner != "console-owner" || done.lease.TTL != 45*time.Second {
		t.Fatalf("acquire: %+v", done)
	}
	m = step(t, m, done)
	if !strings.Contains(m.flash.text, "✓ acquired new for console-owner") {
		t.Fatalf("flash %q", m.flash.text)
	}
	// A bad TTL is refused in the form.
	m = press(t, m, "a", "k", "tab", "tab", "x", "enter")
	if m.form == nil || !strings.Contains(m.form.err, "TTL") {
		t.Fatalf("bad TTL accepted (form open %v)", m.form != nil)
	}
}

func TestReadOnlyHasNoActions(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{ReadOnly: true}, 120, 35), fixtureSnapshot())
	for _, k := range []string{"x", "d", "r", "a"} {
		m2, cmd := update(t, m, keyMsg(k))
		if cmd != nil || m2.confirm != nil || m2.form != nil {
			t.Fatalf("%s acted in read-only mode", k)
		}
	}
	s := screen(press(t, m, "?"))
	if strings.Contains(s, "force-expire") || strings.Contains(s, "acquire a lock") {
		t.Fatalf("read-only help offers actions:\n%s", s)
	}
}

func TestReplicaRefusesActions(t *testing.T) {
	snap := fixtureSnapshot()
	snap.Page.InRecovery = true
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), snap)
	m = press(t, m, "x")
	if m.confirm != nil || !strings.Contains(m.flash.text, "replica — read-only") {
		t.Fatalf("replica: confirm=%v flash %q", m.confirm != nil, m.flash.text)
	}
	if !strings.Contains(screen(m), "replica — read-only") {
		t.Fatal("header does not say replica")
	}
}

func TestDetailAndEventsPanesReadTheDatabase(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	if _, _, err := store.Enqueue(context.Background(), pool, store.QueueParams{
		GrantParams: store.GrantParams{Key: "billing:nightly", Owner: "waiter-7", TTL: time.Minute},
		ClaimWindow: time.Second, SeenFor: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	s := screen(m)
	for _, want := range []string{"Lock billing:nightly", "waiter-7", "Recent events", "acquired", "metadata"} {
		if !strings.Contains(s, want) {
			t.Fatalf("detail lacks %q:\n%s", want, s)
		}
	}
	m = press(t, m, "esc")
	m, cmd = update(t, m, keyMsg("e"))
	m = runPoll(t, m, cmd)
	if s := screen(m); !strings.Contains(s, "Event log") || !strings.Contains(s, "billing:nightly") {
		t.Fatalf("events pane:\n%s", s)
	}
}

func TestResizeRelayouts(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	big := m.locks().tableRows
	m = step(t, m, tea.WindowSizeMsg{Width: 60, Height: 15})
	if m.locks().tableRows >= big || len(strings.Split(screen(m), "\n")) != 15 {
		t.Fatalf("resize: %d rows", m.locks().tableRows)
	}
	if !strings.Contains(screen(New(Options{})), "starting") {
		t.Fatal("no placeholder before the first size")
	}
}

func TestQuitKeys(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	for _, k := range []string{"q", "ctrl+c"} {
		if _, cmd := update(t, m, keyMsg(k)); cmd == nil || cmd() != tea.Quit() {
			t.Fatalf("%s does not quit", k)
		}
	}
	// q inside the filter is text, not quit.
	m = press(t, m, "/", "q")
	if m.locks().filter != "q" {
		t.Fatalf("filter %q", m.locks().filter)
	}
}
