package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// b opens the blocking page, whose polls read who waits for whom while it
// is on screen (and only then): on a real database a deadlock between two
// owners is drawn as a ring in the error style's words, and a chain under
// its root blocker; esc goes back to the table and the polls stop asking.
func TestBlockingPageReadsTheChains(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	acquire(t, pool, "x", "owner-a", time.Minute)
	acquire(t, pool, "y", "owner-b", time.Minute)
	acquire(t, pool, "billing:nightly", "root-holder", time.Minute)
	for _, w := range [][2]string{{"y", "owner-a"}, {"x", "owner-b"}, {"billing:nightly", "waiter-1"}} {
		if _, _, err := store.Enqueue(ctx, pool, store.QueueParams{
			GrantParams: store.GrantParams{Key: w[0], Owner: w[1], TTL: time.Minute},
			ClaimWindow: time.Second, SeenFor: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
	}
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
