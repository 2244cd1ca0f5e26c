package tui

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// t0 is the fixed instant golden snapshots arrive at; views are drawn 1.5s
// later, so every countdown is deterministic.
var t0 = time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// tok is count's token in epoch 1, as a server promoted once draws them.
func tok(count int64) int64 { return 1<<40 | count }

// fixtureRows has a row in every state, a free row with its last holder,
// waiters, and a key and owner full of terminal escapes.
func fixtureRows() []lockview.ListedLock {
	dbNow := t0.Add(-20 * time.Millisecond)
	row := func(key, owner string, token int64, remaining, ttl, heldFor time.Duration) lockview.ListedLock {
		return lockview.ListedLock{Lock: lockview.Lock{
			LockInfo: lockdb.LockInfo{
				Key: key, Owner: owner, Token: tok(token), TTL: ttl, Remaining: remaining,
				ExpiresAt: dbNow.Add(remaining), AcquiredAt: dbNow.Add(-heldFor), DBNow: dbNow,
				Metadata: map[string]any{"host": "web-1", "pid": 4242},
			},
			GrantKind: "acquired", HeldFor: heldFor,
		}}
	}
	billing := row("billing:nightly", "worker-3:8812:ab12cd34", 1042, 22*time.Second, 30*time.Second, 4*time.Minute+5*time.Second)
	billing.Waiters, billing.OldestWait, billing.OldestSince = 2, 12*time.Second, ptr(dbNow.Add(-12*time.Second))
	billing.RenewCount, billing.RenewedAt = 7, ptr(dbNow.Add(-8*time.Second))
	expiring := row("cache:warmup", "worker-1:77:0f0f0f0f", 1040, 3*time.Second, 30*time.Second, 27*time.Second)
	expired := row("reports:daily", "cron-7:1:deadbeef", 997, -95*time.Second, time.Minute, 10*time.Minute)
	expired.GrantKind, expired.PreviousOwner, expired.PreviousToken = "stolen", ptr("cron-2:9:00000001"), ptr(tok(990))
	free := row("search:reindex", "indexer:5:cafe0001", 1001, -3*time.Minute, time.Minute, 5*time.Minute)
	free.ReleasedAt = ptr(dbNow.Add(-3 * time.Minute))
	evil := row("evil\x1b]2;owned\x07\x1b[2J", "bad\x1b[31mowner", 1043, 4*time.Minute, 5*time.Minute, time.Minute)
	long := row("tenant:0042:invoices:generate-monthly-statements-for-every-customer", "batch-runner:9:0badf00d", 1039,
		9*time.Minute, 10*time.Minute, time.Minute)
	return []lockview.ListedLock{billing, expiring, evil, expired, free, long}
}

func fixtureSnapshot() Snapshot {
	rows := fixtureRows()
	return Snapshot{
		Page: lockview.Page{
			Rows: rows, Anchor: 0, AnchorRank: 0, Matching: int64(len(rows)),
			Totals:        lockview.Totals{All: 6, Held: 4, Expiring: 1, Expired: 1, Free: 1, Waiting: 2, WaitedKeys: 1},
			ServerVersion: "15.18 (Debian 15.18-0+deb12u1)", DBNow: t0,
		},
		Rates: lockview.Rates{Span: time.Minute, Bucket: 5 * time.Second,
			Grants:   []int64{1, 3, 2, 0, 5, 8, 4, 2, 1, 0, 6, 9},
			Steals:   []int64{0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 1, 0},
			Handoffs: []int64{0, 1, 1, 0, 2, 3, 1, 0, 0, 0, 2, 4}},
		ReadAt:  t0,
		Latency: 4 * time.Millisecond,
	}
}

// delayedSnapshot is fixtureSnapshot with its first row, selected, in its
// lock-delay: the lease ran out 5s ago and its 30s delay runs 25s more.
func delayedSnapshot() Snapshot {
	s := fixtureSnapshot()
	r := &s.Page.Rows[0]
	until := r.DBNow.Add(25 * time.Second)
	r.Remaining, r.ExpiresAt = -5*time.Second, r.DBNow.Add(-5*time.Second)
	r.LockDelay, r.DelayUntil = 30*time.Second, &until
	s.Page.Totals.Held, s.Page.Totals.Delayed = 3, 1
	return s
}

// keptSnapshot is the fixture with its first row released 20 s after its
// grant, held at least 5 minutes: kept for 4m40s more.
func keptSnapshot() Snapshot {
	s := fixtureSnapshot()
	r := &s.Page.Rows[0]
	released, until := r.DBNow, r.DBNow.Add(4*time.Minute+40*time.Second)
	r.AcquiredAt, r.HeldFor = r.DBNow.Add(-20*time.Second), 20*time.Second
	r.Remaining, r.ReleasedAt = 0, &released
	r.DelayUntil, r.KeptUntil = &until, &until
	s.Page.Totals.Held, s.Page.Totals.Delayed = 3, 1
	return s
}

func fixtureEvents() []lockview.Event {
	at := func(s int) time.Time { return t0.Add(time.Duration(-s) * time.Second) }
	return []lockview.Event{
		{ID: 9, OccurredAt: at(2), Key: "reports:daily", Kind: lockdb.EventForceExpired, Owner: ptr("cron-7:1:deadbeef"), Token: ptr(tok(997)), Actor: "alice@ops", Role: "lockctl_ops"},
		{ID: 8, OccurredAt: at(8), Key: "billing:nightly", Kind: lockdb.EventAcquired, Owner: ptr("worker-3:8812:ab12cd34"), Token: ptr(tok(1042)), Actor: "worker-3:8812:ab12cd34", Role: "svc_billing", Detail: map[string]any{"waited_ms": 1200}},
		{ID: 7, OccurredAt: at(30), Key: "evil\x1b]2;owned\x07", Kind: lockdb.EventStolen, Owner: ptr("bad\x1b[31mowner"), Token: ptr(tok(1043)), PreviousOwner: ptr("x"), PreviousToken: ptr(tok(5)), Actor: "bad\x1b[31mowner", Role: "bad\x1b[31mrole"},
		{ID: 6, OccurredAt: at(61), Key: "search:reindex", Kind: lockdb.EventReleased, Owner: ptr("indexer:5:cafe0001"), Token: ptr(tok(1001)), Actor: "indexer:5:cafe0001"},
		{ID: 5, OccurredAt: at(75), Key: "inventory:us", Kind: lockdb.EventDeadlockRefused, Owner: ptr("sync-eu"), Actor: "sync-eu",
			Detail: map[string]any{"cycle": []any{map[string]any{"owner": "sync-eu", "key": "inventory:us"},
				map[string]any{"owner": "bad\x1b[31mowner", "key": "inventory:eu"}}}},
	}
}

// fixtureSessions has a run holding keys, a service with many leases and
// hostile owner and host text, and one that lapsed.
func fixtureSessions() []lockview.Session {
	dbNow := t0.Add(-20 * time.Millisecond)
	s := func(id int64, owner, host string, pid, leases int, remaining, ttl time.Duration) lockview.Session {
		return lockview.Session{ID: id, Owner: owner, Host: host, PID: pid, Leases: leases, TTL: ttl,
			Remaining: max(remaining, 0), ExpiresAt: dbNow.Add(remaining), OpenedAt: dbNow.Add(-time.Hour)}
	}
	return []lockview.Session{
		s(3, "worker-3:8812:ab12cd34", "web-1", 8812, 2, 22*time.Second, 30*time.Second),
		s(7, "bad\x1b[31mowner", "evil\x1b]2;owned\x07", 4242, 120, 50*time.Second, time.Minute),
		s(12, "cron-7:1:deadbeef", "batch-2", 1, 0, -20*time.Second, 30*time.Second),
	}
}

// fixtureBlocking has a chain two waits deep under a root blocker, a
// deadlock between owners full of terminal escapes, and a wait for a lapsed
// lease.
func fixtureBlocking() *lockview.Blocking {
	w := func(waiter, key, holder string, waited time.Duration) lockview.Wait {
		x := lockview.Wait{Waiter: waiter, Key: key, Waited: waited, WaitingMS: waited.Milliseconds()}
		if holder != "" {
			x.Holders = []string{holder}
		}
		return x
	}
	evilKey, evilOwner := "evil\x1b]2;owned\x07\x1b[2J", "bad\x1b[31mowner"
	lapsed := w("indexer:5:cafe0001", "cache:warmup", "", 2*time.Second)
	lapsed.KeyState = lockdb.StateExpired
	b := lockview.AnalyzeBlocking([]lockview.Wait{
		w("worker-9:1:aaaa0001", "billing:nightly", "worker-3:8812:ab12cd34", 12*time.Second),
		w("worker-4:2:bbbb0002", "billing:nightly", "worker-3:8812:ab12cd34", 3*time.Second),
		w("cron-2:9:00000001", "reports:weekly", "worker-9:1:aaaa0001", 40*time.Second),
		w(evilOwner, "tenant:0042:invoices", "batch-runner:9:0badf00d", 20*time.Second),
		w("batch-runner:9:0badf00d", evilKey, evilOwner, 15*time.Second),
		lapsed,
	})
	return &b
}

// testModel is a console of w x h whose clock stands still at t0+1.5s.
func testModel(t *testing.T, opts Options, w, h int) Model {
	t.Helper()
	if opts.Owner == "" {
		opts.Owner = "console:1:00c0ffee"
	}
	if opts.Server == "" {
		opts.Server = "127.0.0.1:5432/postgres"
	}
	m := New(opts)
	m.now = func() time.Time { return t0.Add(1500 * time.Millisecond) }
	m.inflightSince = t0
	return step(t, m, tea.WindowSizeMsg{Width: w, Height: h})
}

// withSnapshot feeds the first poll's reply.
func withSnapshot(t *testing.T, m Model, s Snapshot) Model {
	t.Helper()
	return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
}

// step applies one message and returns the new model (its command is
// dropped: tests that need it use update).
func step(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	m2, _ := update(t, m, msg)
	return m2
}

func update(t *testing.T, m Model, msg tea.Msg) (Model, tea.Cmd) {
	t.Helper()
	next, cmd := m.Update(msg)
	return next.(Model), cmd
}

func press(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		m = step(t, m, keyMsg(k))
	}
	return m
}

// keyMsg builds the key press a terminal would send for k.
func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// screen is the view as the operator reads it: styling stripped.
func screen(m Model) string { return ansi.Strip(m.View().Content) }

// locks is the console's home page.
func (m Model) locks() *locksPage { return m.pages[pageLocks].(*locksPage) }

// at moves the console's clock to instant and lets a countdown frame
// bring the pages up to it, as the running program's frame ticks do.
func at(t *testing.T, m Model, instant time.Time) Model {
	t.Helper()
	m.now = func() time.Time { return instant }
	return step(t, m, frameMsg{})
}

// connRefused is what a poll of a server that is down returns, built as the
// driver and store.Interpret build it.
func connRefused() error {
	return fmt.Errorf("%w: %w", locker.ErrUnavailable, &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5432}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

// groupSnapshot is a table with an exclusive lease, a semaphore of 3
// permits with 2 holders, a shared key with 3 holders (one owner full of
// terminal escapes), one whose holders all ran out, and a semaphore whose
// group ended; the shared key is selected.
func groupSnapshot() Snapshot {
	s := fixtureSnapshot()
	dbNow := t0.Add(-20 * time.Millisecond)
	rows := fixtureRows()
	holder := func(key string, slot int32, owner string, count int64, remaining, ttl, heldFor time.Duration) lockview.Holder {
		return lockview.Holder{Key: key, Slot: slot, Owner: owner, Token: tok(count), TTL: ttl, Remaining: remaining,
			AcquiredAt: dbNow.Add(-heldFor), ExpiresAt: dbNow.Add(remaining)}
	}
	group := func(key, mode string, permits int32, count int64, remaining, heldFor time.Duration) lockview.ListedLock {
		return lockview.ListedLock{Lock: lockview.Lock{
			LockInfo: lockdb.LockInfo{
				Key: key, Owner: lockdb.GroupOwner, Token: tok(count), TTL: 30 * time.Second, Remaining: remaining,
				ExpiresAt: dbNow.Add(remaining), AcquiredAt: dbNow.Add(-heldFor), DBNow: dbNow,
				Metadata: map[string]any{}, Mode: mode, Permits: permits,
			},
			GrantKind: "acquired", HeldFor: heldFor,
		}}
	}
	pool := group("pool:db", locker.ModeSemaphore, 3, 1050, 25*time.Second, 2*time.Minute)
	readers := group("readers:catalog", locker.ModeShared, 0, 1044, 28*time.Second, 9*time.Minute)
	readers.Waiters, readers.OldestWait, readers.OldestSince = 1, 4*time.Second, ptr(dbNow.Add(-4*time.Second))
	lapsed := group("readers:lapsed", locker.ModeShared, 0, 1030, -2*time.Second, 3*time.Minute)
	ended := group("reports:quota", locker.ModeSemaphore, 2, 1020, 0, time.Hour)
	ended.ReleasedAt = ptr(dbNow.Add(-time.Minute))
	s.Page.Rows = []lockview.ListedLock{rows[0], pool, readers, lapsed, ended}
	s.Page.Anchor, s.Page.AnchorRank, s.Page.Matching = 2, 2, 5
	s.Page.Totals = lockview.Totals{All: 5, Held: 3, Expired: 1, Free: 1, Waiting: 3, WaitedKeys: 2}
	s.Holders = map[string][]lockview.Holder{
		"pool:db": {
			holder("pool:db", 1, "migrator-1:31:aa00aa00", 1051, 25*time.Second, 30*time.Second, 2*time.Minute),
			holder("pool:db", 3, "migrator-2:32:bb11bb11", 1058, 9*time.Second, 30*time.Second, 21*time.Second),
		},
		"readers:catalog": {
			holder("readers:catalog", 1, "api-1:7001:0a0a0a0a", 1045, 28*time.Second, 30*time.Second, 9*time.Minute),
			holder("readers:catalog", 2, "bad\x1b[31mreader", 1049, 12*time.Second, time.Minute, 48*time.Second),
			holder("readers:catalog", 4, "api-3:7003:0c0c0c0c", 1061, 900*time.Millisecond, 10*time.Second, 9100*time.Millisecond),
		},
		"readers:lapsed": nil,
	}
	return s
}

// groupDetailSnapshot is groupSnapshot with the shared key's detail: its
// holders, a waiter and an event.
func groupDetailSnapshot() Snapshot {
	s := groupSnapshot()
	row := s.Page.Rows[2]
	s.Detail = &Detail{Key: row.Key, Lock: &row, Holders: s.Holders[row.Key],
		Waiters: []lockview.Waiter{{ID: 1, Key: row.Key, Owner: "writer-1:9:ffff0001", Waited: 4e9}},
		Events: []lockview.Event{{ID: 11, OccurredAt: t0.Add(-9 * time.Second), Key: row.Key, Kind: lockdb.EventAcquired,
			Owner: ptr("api-3:7003:0c0c0c0c"), Token: ptr(tok(1061)), Actor: "api-3:7003:0c0c0c0c",
			Detail: map[string]any{"mode": "shared", "slot": 4}}}}
	return s
}
