package tui

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// acquireShared takes key shared for owner (permits 0), or one of its
// permits, with a lease of ttl.
func acquireShared(t *testing.T, pool *pgxpool.Pool, key, owner string, permits int, ttl time.Duration) locker.Lease {
	t.Helper()
	lk, err := locker.New(locker.Config{TTL: ttl, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	var lease locker.Lease
	if permits == 0 {
		lease, err = testdb.One(lk.Acquire(context.Background(), pool, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeShared}}, Owner: owner}))
	} else {
		lease, err = testdb.One(lk.Acquire(context.Background(), pool, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeSemaphore, Permits: permits}}, Owner: owner}))
	}
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// screenLine is the first line of the screen that contains what.
func screenLine(m Model, what string) string {
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	return ""
}

// holdersOf reads key's running holders' owners, in slot order.
func holdersOf(t *testing.T, pool *pgxpool.Pool, key string) []string {
	t.Helper()
	hs, err := lockview.HoldersOf(context.Background(), pool, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, h := range hs[key] {
		owners = append(owners, h.Owner)
	}
	return owners
}

// openDetail opens the detail page of the selected row and runs its poll.
func openDetail(t *testing.T, m Model) Model {
	t.Helper()
	m, cmd := update(t, m, keyMsg("enter"))
	return runPoll(t, m, cmd)
}

// confirmAction answers y to the open dialog, runs the action and the
// poll that follows it.
func confirmAction(t *testing.T, m Model) (Model, actionDoneMsg) {
	t.Helper()
	if m.confirm == nil {
		t.Fatalf("no dialog open:\n%s", screen(m))
	}
	m, cmd := update(t, m, keyMsg("y"))
	done, ok := cmd().(actionDoneMsg)
	if !ok {
		t.Fatal("y ran no action")
	}
	m, cmd = update(t, m, done)
	return runPoll(t, m, cmd), done
}

// A semaphore's row shows its permits in use, a shared key's its holders,
// never the group's "*", and escapes what its holders wrote.
func TestTableShowsSharedAndSemaphoreRows(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	acquireShared(t, pool, "readers:catalog", "api-1", 0, time.Minute)
	acquireShared(t, pool, "readers:catalog", "bad\x1b[31mreader", 0, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-1", 3, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-2", 3, time.Minute)
	m := dbModel(t, pool, Options{}, 160, 35)
	for key, want := range map[string]string{
		"readers:catalog": "shared · 2 holders", "pool:db": "semaphore · 2/3 permits", "billing:nightly": "worker-1",
	} {
		l := screenLine(m, key)
		if !strings.Contains(l, want) || strings.Contains(l, " * ") {
			t.Errorf("row of %s %q: want %q in OWNER", key, l, want)
		}
	}
	// The holders' owners are drawn on the detail page: escaped there.
	m = press(t, m, "down", "down")
	if row, _ := m.locks().selected(); row.Key != "readers:catalog" {
		t.Fatalf("selected %q", row.Key)
	}
	m = openDetail(t, m)
	if !strings.Contains(screen(m), `bad\x1b[31mreader`) || strings.Contains(m.View().Content, "\x1b[31mreader") {
		t.Fatalf("a holder's owner is not escaped:\n%s", screen(m))
	}
}

// Holders cost one statement more per poll, only when a group's row can
// be on screen; with only exclusive keys, or the table off screen, none.
func TestHoldersCostOneStatementOnlyForGroupsOnScreen(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	for _, k := range []string{"a:1", "a:2", "a:3", "a:4", "a:5"} {
		acquire(t, pool, k, "worker-1", time.Minute)
	}
	req := PollRequest{Query: lockview.ListQuery{Sort: lockview.SortKey, Before: 10, After: 10}, HolderRows: 3}
	statements := func(req PollRequest) (int, Snapshot) {
		t.Helper()
		db := &testdb.Statements{DBTX: pool}
		snap, err := readFrom(ctx, db, req)
		if err != nil {
			t.Fatal(err)
		}
		return db.N, snap
	}
	exclusive, snap := statements(req)
	if snap.Holders != nil {
		t.Fatalf("holders read with no group key: %v", snap.Holders)
	}
	// z:shared sorts last, 5 rows from the anchor (the first row): off
	// the 3 rows the table can show.
	acquireShared(t, pool, "z:shared", "reader-1", 0, time.Minute)
	if n, snap := statements(req); n != exclusive || snap.Holders != nil {
		t.Fatalf("a group's row off screen: %d statements (want %d), holders %v", n, exclusive, snap.Holders)
	}
	acquireShared(t, pool, "a:0", "reader-2", 0, time.Minute)
	n, snap := statements(req)
	if n != exclusive+1 || len(snap.Holders) != 1 || len(snap.Holders["a:0"]) != 1 {
		t.Fatalf("a group's row on screen: %d statements (want %d), holders %v", n, exclusive+1, snap.Holders)
	}
	req.HolderRows = 0
	if n, _ := statements(req); n != exclusive {
		t.Fatalf("table off screen: %d statements, want %d", n, exclusive)
	}
	// The detail page's key's holders come in the same one statement.
	req.HolderRows, req.DetailKey = 3, "a:1"
	exclusiveDetail, _ := statements(req)
	req.DetailKey = "z:shared"
	n, snap = statements(req)
	if n != exclusiveDetail || len(snap.Detail.Holders) != 1 || snap.Detail.Holders[0].Owner != "reader-1" || len(snap.Holders) != 1 {
		t.Fatalf("detail of a group: %d statements (want %d), detail %+v, table's holders %v", n, exclusiveDetail, snap.Detail, snap.Holders)
	}

	// The console asks for them only while the table is on screen.
	m := dbModel(t, pool, Options{}, 120, 35)
	if m.pollRequest().HolderRows == 0 {
		t.Fatal("the table does not ask for its groups' holders")
	}
	if m = press(t, m, "e"); m.pollRequest().HolderRows != 0 {
		t.Fatal("holders asked for with the table off screen")
	}
}

// The detail page lists each holder with its owner, token, slot and TTL,
// and the TTLs count down between polls as the rows' do.
func TestDetailListsHoldersCountingDown(t *testing.T) {
	pool := testdb.New(t)
	a := acquireShared(t, pool, "readers:catalog", "api-1", 0, time.Minute)
	b := acquireShared(t, pool, "readers:catalog", "api-2", 0, 10*time.Second)
	m := openDetail(t, dbModel(t, pool, Options{}, 120, 35))
	for _, want := range []string{"Holders (2, in slot order)", "every holder", "mode         shared", "shared · 2 holders"} {
		if !strings.Contains(screen(m), want) {
			t.Fatalf("detail lacks %q:\n%s", want, screen(m))
		}
	}
	for i, h := range []locker.Lease{a, b} {
		l := screenLine(m, "slot "+strconv.Itoa(i+1)+"  "+h.Owner)
		if !strings.Contains(l, fencetoken.Format(h.Token)) {
			t.Fatalf("holder line %q lacks its token %s:\n%s", l, fencetoken.Format(h.Token), screen(m))
		}
	}
	left := regexp.MustCompile(`(\d+\.\d)s of 10s`)
	secondsLeft := func(m Model) float64 {
		t.Helper()
		match := left.FindStringSubmatch(screenLine(m, "slot 2  api-2"))
		if match == nil {
			t.Fatalf("no time left on %q", screenLine(m, "slot 2  api-2"))
		}
		f, _ := strconv.ParseFloat(match[1], 64)
		return f
	}
	m = at(t, m, m.snap.ReadAt)
	if s := secondsLeft(m); s < 8 || s > 10 {
		t.Fatalf("api-2 has %.1fs left right after the poll, want about 10s", s)
	}
	m = at(t, m, m.snap.ReadAt.Add(5*time.Second))
	if s := secondsLeft(m); s < 3 || s > 5 {
		t.Fatalf("api-2 has %.1fs left 5s after the poll, want about 5s", s)
	}
	m = at(t, m, m.snap.ReadAt.Add(11*time.Second))
	ranOut := regexp.MustCompile(`-\d+(\.\d)?s of 10s`)
	if l := screenLine(m, "slot 2  api-2"); !ranOut.MatchString(l) || !strings.Contains(screen(m), "Holders (1, in slot order)") {
		t.Fatalf("api-2's lease ran out 11s after the poll: %q\n%s", l, screen(m))
	}
}

// Force-releasing the selected holder ends its lease alone: the others
// keep theirs, and the selection follows its holder from poll to poll.
func TestForceReleaseOneHolderKeepsTheOthers(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a := acquireShared(t, pool, "pool:db", "migrator-a", 3, time.Minute)
	b := acquireShared(t, pool, "pool:db", "migrator-b", 3, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-c", 3, time.Minute)
	m := openDetail(t, dbModel(t, pool, Options{}, 120, 35))
	m = press(t, m, "down", "down", "down") // migrator-c
	if h, ok := m.selectedHolder(); !ok || h.Owner != "migrator-c" {
		t.Fatalf("selected holder %+v", h)
	}
	// migrator-a leaves: the selection stays on migrator-c, now the
	// second line.
	if _, err := testdb.One(lk.Release(ctx, pool, a)); err != nil {
		t.Fatal(err)
	}
	m = repoll(t, m)
	if h, _ := m.selectedHolder(); h.Owner != "migrator-c" {
		t.Fatalf("after a release the selection moved to %q", h.Owner)
	}
	m = press(t, m, "up") // migrator-b
	m = press(t, m, "d")
	s := screen(m)
	for _, want := range []string{"Force-release this holder?", "migrator-b", fencetoken.Format(b.Token), "slot   2", "other holders keep theirs"} {
		if !strings.Contains(s, want) {
			t.Fatalf("dialog lacks %q:\n%s", want, s)
		}
	}
	m, done := confirmAction(t, m)
	if done.err != nil || done.token != b.Token {
		t.Fatalf("force-release: %+v", done)
	}
	if !strings.Contains(m.flash.text, "✓ force-released holder migrator-b of pool:db") {
		t.Fatalf("flash %q", m.flash.text)
	}
	if got := holdersOf(t, pool, "pool:db"); len(got) != 1 || got[0] != "migrator-c" {
		t.Fatalf("holders after releasing migrator-b: %v, want migrator-c alone", got)
	}
	if s := screen(m); strings.Contains(s, "slot 2  migrator-b") || !strings.Contains(s, "Holders (1 of 3 permits") {
		t.Fatalf("detail after the release:\n%s", s)
	}
	evs, err := lockview.KeyEvents(ctx, pool, "pool:db", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceReleased || *evs[0].Owner != "migrator-b" || evs[0].Actor != actor {
		t.Fatalf("last event %+v, %v", evs, err)
	}
	// Again on the same token: refused, naming the holder's token.
	m.confirm = &confirmModel{kind: actRelease, key: "pool:db", owner: "migrator-b", token: b.Token, slot: 2}
	m, done = confirmAction(t, m)
	if done.err == nil || !strings.Contains(m.flash.text, "holder token "+fencetoken.Format(b.Token)+" has no lease") {
		t.Fatalf("second release: %v, flash %q", done.err, m.flash.text)
	}
}

// The actions on a group's row act on every holder, by the group's token;
// renewing needs one holder's lease.
func TestForceExpireOnGroupRowEndsEveryHolder(t *testing.T) {
	pool := testdb.New(t)
	acquireShared(t, pool, "pool:db", "migrator-a", 3, time.Minute)
	acquireShared(t, pool, "pool:db", "migrator-b", 3, time.Minute)
	m := dbModel(t, pool, Options{}, 160, 35)
	m2, cmd := update(t, m, keyMsg("r"))
	if cmd != nil || !strings.Contains(m2.flash.text, "no lease of its own to renew") {
		t.Fatalf("r on a group's row: cmd %v, flash %q", cmd != nil, m2.flash.text)
	}
	m = press(t, m, "x")
	if s := screen(m); !strings.Contains(s, "Force-expire every holder of this key?") || !strings.Contains(s, "semaphore · 2/3 permits") {
		t.Fatalf("dialog:\n%s", s)
	}
	m, done := confirmAction(t, m)
	if done.err != nil {
		t.Fatal(done.err)
	}
	if !strings.Contains(m.flash.text, "✓ force-expired every holder of pool:db") {
		t.Fatalf("flash %q", m.flash.text)
	}
	if got := holdersOf(t, pool, "pool:db"); len(got) != 0 {
		t.Fatalf("holders left: %v", got)
	}
	if l := screenLine(m, "pool:db"); !strings.Contains(l, "last: semaphore, 3 permits") || !strings.Contains(l, "free") {
		t.Fatalf("row after the group ended: %q", l)
	}
}

// r renews the selected holder's lease as its owner and token; acquiring
// a key its holders hold says so.
func TestRenewOneHolderAndAcquireAGroupsKey(t *testing.T) {
	pool := testdb.New(t)
	acquireShared(t, pool, "readers:catalog", "api-1", 0, time.Minute)
	b := acquireShared(t, pool, "readers:catalog", "api-2", 0, 10*time.Second)
	m := openDetail(t, dbModel(t, pool, Options{}, 120, 35))
	m, cmd := update(t, press(t, m, "down", "down"), keyMsg("r"))
	if cmd == nil {
		t.Fatalf("r on a holder sent nothing: %q", m.flash.text)
	}
	done := cmd().(actionDoneMsg)
	if done.err != nil || done.lease.Token != b.Token || !done.lease.ExpiresAt.After(b.ExpiresAt) {
		t.Fatalf("renew: %+v (was %+v)", done, b)
	}
	if m = step(t, m, done); !strings.Contains(m.flash.text, "✓ renewed holder api-2 of readers:catalog") {
		t.Fatalf("flash %q", m.flash.text)
	}
	// a on the detail page proposes its key; the holders keep it.
	m, cmd = update(t, press(t, m, "a"), keyMsg("enter"))
	if m = step(t, m, cmd()); !strings.Contains(m.flash.text, "held by the holders of a shared or semaphore key") {
		t.Fatalf("acquire: flash %q", m.flash.text)
	}
}

// Without the actions (read-only here; a role without them alike) the
// holders can be selected and read, and no key acts on them.
func TestReadOnlyHoldersAreOnlyShown(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{ReadOnly: true}, 120, 35), groupSnapshot())
	m = press(t, m, "enter")
	m = step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: groupDetailSnapshot()})
	m = press(t, m, "down")
	if h, ok := m.selectedHolder(); !ok || h.Owner != "api-1:7001:0a0a0a0a" {
		t.Fatalf("selected holder %+v", h)
	}
	for _, k := range []string{"x", "d", "r"} {
		if m2, cmd := update(t, m, keyMsg(k)); cmd != nil || m2.confirm != nil {
			t.Fatalf("%s acted in read-only mode", k)
		}
	}
	if s := screen(m); strings.Contains(s, "expire holder") || strings.Contains(s, "actions here act") {
		t.Fatalf("read-only detail offers actions:\n%s", s)
	}
}

// A group's row scrolled onto the screen without its holders read asks
// for a poll, which reads them; with them read, moving polls no more
// than before.
func TestScrollingOntoAGroupReadsItsHolders(t *testing.T) {
	unread := groupSnapshot()
	unread.Page.Anchor, unread.Page.AnchorRank, unread.Holders = 0, 0, nil
	read := unread
	read.Holders = groupSnapshot().Holders
	for _, c := range []struct {
		name string
		snap Snapshot
		poll bool
	}{{"unread", unread, true}, {"read", read, false}} {
		m := withSnapshot(t, testModel(t, Options{}, 120, 7), c.snap) // 1 row of table: billing:nightly
		if m.locks().tableRows != 1 || screenLine(m, "pool:db") != "" {
			t.Fatalf("%s: want pool:db off screen:\n%s", c.name, screen(m))
		}
		m, cmd := update(t, m, keyMsg("down"))
		if polled := cmd != nil && m.inflight; polled != c.poll {
			t.Fatalf("%s: moving onto pool:db polled: %v, want %v", c.name, polled, c.poll)
		}
		want := map[bool]string{true: "semaphore · ?/3", false: "semaphore · 2/3"}[c.poll]
		if l := screenLine(m, "pool:db"); !strings.Contains(l, want) {
			t.Fatalf("%s: row %q, want %q", c.name, l, want)
		}
	}
}
