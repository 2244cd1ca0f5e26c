package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

func columnTitles(w int) []string {
	cols, _ := tableLayout(w)
	var out []string
	for _, c := range cols {
		out = append(out, c.title)
	}
	return out
}

// Narrowing the terminal only ever drops columns, never trades one for
// another (TOKEN never reappears at a width where WAITERS goes), and KEY
// and OWNER stop growing on a wide terminal.
func TestLayoutOnlyLosesColumnsAsItNarrows(t *testing.T) {
	for w := 60; w < 260; w++ {
		narrow, wider := columnTitles(w), columnTitles(w+1)
		for _, c := range narrow {
			if !slices.Contains(wider, c) {
				t.Errorf("%s is shown at %d columns but not at %d: %v vs %v", c, w, w+1, narrow, wider)
			}
		}
	}
	if got := columnTitles(70); slices.Contains(got, "TOKEN") {
		t.Errorf("70 columns show TOKEN: %v", got)
	}
	for _, w := range []int{200, 300} {
		cols, _ := tableLayout(w)
		for _, c := range cols {
			if (c.title == "KEY" && c.width > maxKeyWidth) || (c.title == "OWNER" && c.width > maxOwnerWidth) {
				t.Errorf("at %d columns %s is %d wide", w, c.title, c.width)
			}
		}
	}
	// A capped key is cut with an ellipsis, not wrapped or spilled.
	m := withSnapshot(t, testModel(t, Options{}, 220, 30), fixtureSnapshot())
	if !strings.Contains(screen(m), "tenant:0042:invoices:generate-monthly-statement…") {
		t.Errorf("long key not truncated with an ellipsis:\n%s", screen(m))
	}
}

// The footer keeps "? help" first and "q quit" last at every width, in
// every pane, and never cuts a binding in half.
func TestFooterAlwaysOffersHelpAndQuit(t *testing.T) {
	for _, w := range []int{60, 70, 80, 100, 120, 200} {
		for _, keys := range [][]string{nil, {"enter"}, {"e"}, {"b"}, {"?"}} {
			m := press(t, withSnapshot(t, testModel(t, Options{}, w, 24), fixtureSnapshot()), keys...)
			lines := strings.Split(screen(m), "\n")
			footer := lines[len(lines)-1]
			first := "? help"
			if len(keys) > 0 {
				first = "esc back"
			}
			if !strings.HasPrefix(footer, first) || !strings.HasSuffix(footer, "q quit") || strings.Contains(footer, "…") {
				t.Errorf("%d columns, keys %v: footer %q", w, keys, footer)
			}
		}
	}
}

// s cycles only through orders whose column is on screen, the help lists
// just those, and a resize that hides the sorted column goes back to key.
func TestSortOffersOnlyVisibleColumns(t *testing.T) {
	cycle := func(m Model) []lockview.Sort {
		var seen []lockview.Sort
		for range 6 {
			seen = append(seen, m.locks().order)
			m = press(t, m, "s")
		}
		return seen
	}
	narrow := withSnapshot(t, testModel(t, Options{}, 80, 24), fixtureSnapshot())
	want := []lockview.Sort{lockview.SortKey, lockview.SortTTL, lockview.SortWaiters, lockview.SortKey, lockview.SortTTL, lockview.SortWaiters}
	if got := cycle(narrow); !slices.Equal(got, want) {
		t.Errorf("at 80 columns s cycles %v, want %v", got, want)
	}
	if help := screen(press(t, narrow, "?")); !strings.Contains(help, "sort: key, TTL, waiters ") {
		t.Errorf("help does not list the visible orders:\n%s", help)
	}
	wide := withSnapshot(t, testModel(t, Options{}, 200, 50), fixtureSnapshot())
	if got := cycle(wide); !slices.Equal(got[:5], lockview.Sorts) {
		t.Errorf("at 200 columns s cycles %v, want %v", got, lockview.Sorts)
	}
	byToken := press(t, wide, "s", "s")
	if byToken.locks().order != lockview.SortToken {
		t.Fatalf("sort %s, want token", byToken.locks().order)
	}
	m := step(t, byToken, tea.WindowSizeMsg{Width: 80, Height: 24})
	if m.locks().order != lockview.SortKey || m.querySeq == byToken.querySeq {
		t.Errorf("after narrowing to 80 columns the sort is %s (query changed: %v), want key", m.locks().order, m.querySeq != byToken.querySeq)
	}
}

// While paused, rows stop counting down: a lock 1.5s from expiry shows
// "expiring" a minute later, not "expired", and the screen says the rows
// are frozen. Unpaused, the same minute makes it expired.
func TestPausedRowsDoNotCountDown(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	later := func(m Model) Model { return at(t, m, t0.Add(time.Minute)) }
	paused := later(press(t, m, "space"))
	row := rowLine(t, paused, "cache:warmup")
	if !strings.Contains(row, "expiring") || strings.Contains(row, "expired") {
		t.Errorf("paused row counted down: %q", row)
	}
	if !strings.Contains(screen(paused), "⏸ paused: rows frozen as of") {
		t.Errorf("paused data is not marked:\n%s", screen(paused))
	}
	if row := rowLine(t, later(m), "cache:warmup"); !strings.Contains(row, "expired") {
		t.Errorf("live row did not count down: %q", row)
	}
}

// The header's counts move with the rows: once a row counts down past its
// expiry, the header counts it expired too.
func TestHeaderCountsFollowRows(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	m = at(t, m, t0.Add(5*time.Second))
	if row := rowLine(t, m, "cache:warmup"); !strings.Contains(row, "expired") {
		t.Fatalf("row did not expire: %q", row)
	}
	if head := screen(m); !strings.Contains(head, "held 3 (0 expiring) · expired 2 · free 1") {
		t.Errorf("header counts do not follow the rows:\n%s", head)
	}
}

// The dialog's help names the focused button, and follows tab.
func TestConfirmHelpFollowsFocus(t *testing.T) {
	m := press(t, withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot()), "x")
	footer := func(m Model) string {
		lines := strings.Split(screen(m), "\n")
		return lines[len(lines)-1]
	}
	if f := footer(m); !strings.Contains(f, "enter choose focused (No)") {
		t.Errorf("footer %q", f)
	}
	m = press(t, m, "tab")
	if f := footer(m); !strings.Contains(f, "enter choose focused (Yes)") {
		t.Errorf("after tab, footer %q", f)
	}
}

// A scrolled event log keeps its first visible line when new events arrive
// on top; at the top, the new events show.
func TestScrolledEventLogStaysAnchored(t *testing.T) {
	m := press(t, withSnapshot(t, testModel(t, Options{}, 120, 15), fixtureSnapshot()), "e")
	var events []lockview.Event
	for i := 40; i >= 1; i-- {
		events = append(events, lockview.Event{ID: int64(i), OccurredAt: t0, Key: fmt.Sprintf("key:%02d", i), Kind: lockdb.EventAcquired, Actor: "w"})
	}
	m = pollWithEvents(t, m, events)
	m = press(t, m, "down", "down", "down", "down", "down")
	first := bodyLine(t, m)
	m = pollWithEvents(t, m, []lockview.Event{{ID: 41, OccurredAt: t0, Key: "key:41", Kind: lockdb.EventAcquired, Actor: "w"},
		{ID: 42, OccurredAt: t0, Key: "key:42", Kind: lockdb.EventAcquired, Actor: "w"}})
	if got := bodyLine(t, m); got != first {
		t.Errorf("first visible line moved from %q to %q", first, got)
	}
	m = press(t, m, "home")
	m = pollWithEvents(t, m, []lockview.Event{{ID: 43, OccurredAt: t0, Key: "key:43", Kind: lockdb.EventAcquired, Actor: "w"}})
	if !strings.Contains(screen(m), "key:43") {
		t.Errorf("at the top, a new event is not shown:\n%s", screen(m))
	}
}

func pollWithEvents(t *testing.T, m Model, events []lockview.Event) Model {
	t.Helper()
	m, _ = update(t, m, pollTickMsg{gen: m.tickGen})
	s := fixtureSnapshot()
	s.Events = events
	return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
}

// bodyLine is the first line under the header.
func bodyLine(t *testing.T, m Model) string {
	t.Helper()
	return strings.Split(screen(m), "\n")[len(m.headerLines())]
}

// rowLine is the table line of key.
func rowLine(t *testing.T, m Model, key string) string {
	t.Helper()
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.Contains(l, key) {
			return l
		}
	}
	t.Fatalf("no row %s on screen:\n%s", key, screen(m))
	return ""
}

// Actions the role may not do are neither offered nor done: with hold but
// not force, a and r stay, x and d leave the footer and the help and do
// nothing.
func TestActionsFollowRoleCapabilities(t *testing.T) {
	m := testModel(t, Options{}, 200, 35)
	s := fixtureSnapshot()
	s.Caps = &store.RoleCapabilities{Hold: true}
	m = withSnapshot(t, m, s)
	lines := strings.Split(screen(m), "\n")
	footer := lines[len(lines)-1]
	if strings.Contains(footer, "expire") || strings.Contains(footer, "release") || !strings.Contains(footer, "a acquire") {
		t.Errorf("footer %q", footer)
	}
	if after := press(t, m, "x"); after.confirm != nil {
		t.Error("x opened a force-expire dialog for a role that may not force")
	}
	if help := screen(press(t, m, "?")); strings.Contains(help, "force-expire selected") ||
		!strings.Contains(help, "may not force-expire") {
		t.Errorf("help offers force-expire:\n%s", help)
	}
	if after := press(t, m, "a"); after.form == nil {
		t.Error("a did not open the acquire form for a role that may hold")
	}
}

// The table shows a token as epoch·count, never cut: a long count widens
// the column at the key's expense.
func TestTokensReadAsEpochAndCount(t *testing.T) {
	s := fixtureSnapshot()
	s.Page.Rows[0].Token = 3<<40 | 123456789012
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), s)
	if row := rowLine(t, m, "billing:nightly"); !strings.Contains(row, " 3·123456789012 ") {
		t.Errorf("token not shown whole as epoch·count: %q", row)
	}
	if row := rowLine(t, m, "cache:warmup"); !strings.Contains(row, " 1·1040 ") {
		t.Errorf("token not shown as epoch·count: %q", row)
	}
}
