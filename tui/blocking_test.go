package tui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// b opens the blocking page, whose polls read who waits for whom while it
// is on screen (and only then): on a real database a deadlock between two
// owners is drawn as a ring in the error style's words, and a chain under
// its root blocker; esc goes back to the table and the polls stop asking.
func TestBlockingPageReadsTheChains(t *testing.T) {
	pool := deadlockAndChain(t, [2]string{"y", "owner-a"}, [2]string{"x", "owner-b"}, [2]string{"billing:nightly", "waiter-1"})
	m := dbModel(t, pool, Options{}, 140, 35)
	if m.pollRequest().Blocking {
		t.Fatal("the table's polls read the blocking chains")
	}
	m, cmd := update(t, m, keyMsg("b"))
	if !m.pollRequest().Blocking {
		t.Fatal("the blocking page's polls do not read the chains")
	}
	m = runPoll(t, m, cmd)
	s := screen(m)
	for _, want := range []string{
		"3 owners waiting · 1 root blocker · 1 deadlock",
		"root-holder  root blocker · holds billing:nightly",
		"└─ waiter-1  waits ",
		"✗ deadlock: owner-a → owner-b → owner-a",
		"↑ back to owner-a: deadlock",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("blocking page lacks %q:\n%s", want, s)
		}
	}
	if root, ring := strings.Index(s, "root-holder"), strings.Index(s, "✗ deadlock"); root > ring {
		t.Errorf("the root blocker is not first:\n%s", s)
	}
	m = press(t, m, "esc")
	if m.pollRequest().Blocking || !strings.Contains(screen(m), "KEY") {
		t.Fatalf("esc did not go back to the table:\n%s", screen(m))
	}
}

// deadlockAndChain is a database where owner-a holds x, owner-b holds y and
// root-holder holds billing:nightly, and the waits are queued in the
// order given ({key, owner}): the tests queue owner-a for y and owner-b
// for x (a deadlock) and waiter-1 for billing:nightly (a chain).
func deadlockAndChain(t *testing.T, waits ...[2]string) *pgxpool.Pool {
	t.Helper()
	pool := testdb.New(t)
	acquire(t, pool, "x", "owner-a", time.Minute)
	acquire(t, pool, "y", "owner-b", time.Minute)
	acquire(t, pool, "billing:nightly", "root-holder", time.Minute)
	for _, w := range waits {
		q, _, err := store.Enqueue(context.Background(), pool, store.QueueParams{
			GrantParams: store.GrantParams{Key: w[0], Owner: w[1], TTL: time.Minute},
			ClaimWindow: time.Second, SeenFor: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		if q.Outcome == lockdb.OutcomeDeadlock {
			// The protocol refuses the wait that closes the cycle; a waiter
			// whose check has not run yet, or a client that never checks,
			// leaves its record as this.
			if _, err := pool.Exec(context.Background(), `INSERT INTO distributed_lock_waiter
				(lock_key, owner_id, waiting_since, seen_until, ttl, claim_window)
				VALUES ($1, $2, clock_timestamp(), clock_timestamp() + interval '1 minute',
				interval '1 minute', interval '1 second')`, w[0], w[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return pool
}

// Database text on the blocking page is escaped: no raw escape reaches
// the terminal.
func TestBlockingPageEscapesDatabaseText(t *testing.T) {
	m := press(t, withSnapshot(t, testModel(t, Options{}, 200, 50), fixtureSnapshot()), "b")
	s := fixtureSnapshot()
	s.Blocking = fixtureBlocking()
	m = step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
	view := m.View().Content
	for _, bad := range []string{"\x1b]2;owned", "\x1b[2J", "\x1b[31mowner", "\x07"} {
		if strings.Contains(view, bad) {
			t.Errorf("view contains raw %q", bad)
		}
	}
	if !strings.Contains(screen(m), `✗ deadlock: bad\x1b[31mowner`) {
		t.Errorf("the deadlock is not drawn escaped:\n%s", screen(m))
	}
}

// The cursor walks the lines that name a wait, skipping the holders' and
// the rings' lines; enter opens the detail page of the key the selected
// wait is for, read from the database, and esc comes back to the blocking
// page with the cursor where it was.
func TestBlockingPageEnterOpensTheWaitsKey(t *testing.T) {
	pool := deadlockAndChain(t, [2]string{"billing:nightly", "waiter-1"}, [2]string{"x", "owner-b"}, [2]string{"y", "owner-a"})
	m := dbModel(t, pool, Options{}, 140, 35)
	m, cmd := update(t, m, keyMsg("b"))
	m = runPoll(t, m, cmd)
	if got := selectedLine(m); !strings.Contains(got, "waiter-1  waits") || !strings.HasSuffix(got, "for billing:nightly") {
		t.Fatalf("the page opens on %q, not the first wait:\n%s", got, screen(m))
	}
	// The deadlock's tree: owner-a holds x; owner-b waits for x; owner-a for y.
	m = press(t, m, "down", "j")
	if got := selectedLine(m); !strings.Contains(got, "owner-a  waits") || !strings.Contains(got, "for y") {
		t.Fatalf("two lines down the cursor is on %q:\n%s", got, screen(m))
	}
	m, cmd = update(t, m, keyMsg("enter"))
	if m.active != pageDetail || m.pollRequest().DetailKey != "y" {
		t.Fatalf("enter opened page %d for %q", m.active, m.pollRequest().DetailKey)
	}
	if s := screen(m); !strings.Contains(s, "Lock y") || !strings.Contains(s, "reading the lock…") {
		t.Errorf("before its poll the detail page does not say it reads y:\n%s", s)
	}
	m = runPoll(t, m, cmd)
	s := screen(m)
	for _, want := range []string{"Lock y", "owner-b", "Waiters (1, in queue order", " 1. owner-a  waiting"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail page lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(footerOf(m), "r renew") {
		t.Errorf("the actions do not apply to the lock opened from a wait: %q", footerOf(m))
	}
	m, cmd = update(t, m, keyMsg("esc"))
	if m.active != pageBlocking || !m.pollRequest().Blocking {
		t.Fatalf("esc went to page %d, not back to the blocking page", m.active)
	}
	m = runPoll(t, m, cmd)
	if got := selectedLine(m); !strings.Contains(got, "owner-a  waits") || !strings.Contains(got, "for y") {
		t.Fatalf("back on the blocking page the cursor is on %q:\n%s", got, screen(m))
	}
	if m = press(t, m, "esc"); m.active != pageLocks {
		t.Fatalf("esc on the blocking page went to page %d, not the table", m.active)
	}
}

// A poll that redraws the chains keeps the cursor on its wait wherever
// the wait is drawn now; when the wait is over, on the wait line nearest
// to where it was; with no wait left, enter does nothing and the footer
// does not offer it.
func TestBlockingCursorFollowsItsWait(t *testing.T) {
	m := press(t, withSnapshot(t, testModel(t, Options{}, 120, 40), fixtureSnapshot()), "b")
	reply := func(m Model, waits ...lockview.Wait) Model { // the poll out's, else the next refresh's
		if !m.inflight {
			m = step(t, m, pollTickMsg{gen: m.tickGen})
		}
		s := fixtureSnapshot()
		b := lockview.AnalyzeBlocking(waits)
		s.Blocking = &b
		return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
	}
	all := fixtureBlocking().Waits
	without := func(waiters ...string) []lockview.Wait {
		return slices.DeleteFunc(slices.Clone(all), func(w lockview.Wait) bool { return slices.Contains(waiters, w.Waiter) })
	}
	m = press(t, reply(m, all...), "j")
	if got := selectedLine(m); !strings.Contains(got, "cron-2:9:00000001  waits") {
		t.Fatalf("the cursor is on %q, not cron-2's wait:\n%s", got, screen(m))
	}
	// worker-9 got billing:nightly: it no longer waits, and cron-2's
	// wait for its reports:weekly is now a chain of its own, drawn first.
	m = reply(m, without("worker-9:1:aaaa0001")...)
	if got := selectedLine(m); !strings.Contains(got, "└─ cron-2:9:00000001  waits") {
		t.Fatalf("after the poll the cursor is on %q, not cron-2's wait:\n%s", got, screen(m))
	}
	if lines := strings.Split(screen(m), "\n"); !strings.Contains(strings.Join(lines[:12], "\n"), "▶ └─ cron-2") {
		t.Errorf("cron-2's wait is not drawn in the first chain:\n%s", screen(m))
	}
	// cron-2 got reports:weekly too: the cursor goes to the wait line now
	// at its place.
	m = reply(m, without("worker-9:1:aaaa0001", "cron-2:9:00000001")...)
	if got := selectedLine(m); !strings.Contains(got, "worker-4:2:bbbb0002  waits") {
		t.Fatalf("with cron-2's wait over the cursor is on %q:\n%s", got, screen(m))
	}
	m = reply(m)
	if got := selectedLine(m); got != "" || strings.Contains(footerOf(m), "enter") {
		t.Fatalf("with nobody waiting the cursor is on %q, footer %q", got, footerOf(m))
	}
	if m = press(t, m, "enter"); m.active != pageBlocking {
		t.Fatalf("enter with no wait selected opened page %d", m.active)
	}
}

// selectedLine is the screen's line under the cursor, without its marker;
// "" if none.
func selectedLine(m Model) string {
	for _, l := range strings.Split(screen(m), "\n") {
		if rest, ok := strings.CutPrefix(l, "▶ "); ok {
			return strings.TrimRight(rest, " ")
		}
	}
	return ""
}

// footerOf is the screen's last line: the keys that apply.
func footerOf(m Model) string {
	lines := strings.Split(screen(m), "\n")
	return lines[len(lines)-1]
}

// On a screen too short for the chains the page scrolls with the cursor:
// G shows the last wait; going up scrolls only when the cursor would
// leave the screen, and then shows the lines that lead to its wait (on the
// first wait: its holder and the title); pgdn and pgup move a screen's
// worth of lines, at least one wait on.
func TestBlockingCursorStaysInView(t *testing.T) {
	m := press(t, withSnapshot(t, testModel(t, Options{}, 60, 15), fixtureSnapshot()), "b")
	s := fixtureSnapshot()
	s.Blocking = fixtureBlocking()
	m = step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
	m = press(t, m, "G")
	if got := selectedLine(m); !strings.Contains(got, "indexer:5:cafe0001  waits") {
		t.Fatalf("G put the cursor on %q:\n%s", got, screen(m))
	}
	if strings.Contains(screen(m), "Who waits for whom") {
		t.Fatalf("the last wait's screen still shows the title:\n%s", screen(m))
	}
	m = press(t, m, "k", "k", "k")
	if got, sc := selectedLine(m), screen(m); !strings.Contains(got, "worker-4:2:bbbb0002  waits") || strings.Contains(sc, "root blocker · holds") {
		t.Fatalf("three up the cursor is on %q, or the page scrolled while it was in view:\n%s", got, sc)
	}
	m = press(t, m, "k", "k")
	if got, sc := selectedLine(m), screen(m); !strings.Contains(got, "worker-9:1:aaaa0001  waits") ||
		!strings.Contains(sc, "Who waits for whom") || !strings.Contains(sc, "root blocker · holds") {
		t.Fatalf("on the first wait (%q) the title and its holder are not in view:\n%s", got, sc)
	}
	m = press(t, m, "pgdown")
	if got := selectedLine(m); !strings.Contains(got, "indexer:5:cafe0001  waits") {
		t.Fatalf("pgdn from the first wait put the cursor on %q:\n%s", got, screen(m))
	}
	m = press(t, m, "pgup")
	if got := selectedLine(m); !strings.Contains(got, "worker-9:1:aaaa0001  waits") {
		t.Fatalf("pgup put the cursor on %q:\n%s", got, screen(m))
	}
}
