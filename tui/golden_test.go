package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// TestGolden pins what the operator sees in each state, at the sizes that
// matter: the classic 80x24, a wide 200x50 and the 60x15 minimum. Regenerate with
// `go test ./tui -run TestGolden -update`.
func TestGolden(t *testing.T) {
	for name, build := range consoleStates(ThemeAuto) {
		for _, size := range [][2]int{{80, 24}, {200, 50}, {60, 15}} {
			t.Run(fmt.Sprintf("%s_%dx%d", name, size[0], size[1]), func(t *testing.T) {
				m := build(t, size[0], size[1])
				view := screen(m)
				lines := strings.Split(view, "\n")
				if len(lines) != size[1] {
					t.Errorf("view has %d lines, want %d", len(lines), size[1])
				}
				for i, l := range lines {
					if width(l) > size[0] {
						t.Errorf("line %d is %d cells wide, more than %d: %q", i, width(l), size[0], l)
					}
				}
				golden.RequireEqual(t, []byte(view))
			})
		}
	}
}

// consoleStates builds the console in each state worth seeing, at w x h,
// in theme: every page, dialog and form, up, down and reconnecting.
func consoleStates(theme Theme) map[string]func(t *testing.T, w, h int) Model {
	live := func(t *testing.T, w, h int) Model {
		return withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), fixtureSnapshot())
	}
	return map[string]func(t *testing.T, w, h int) Model{
		"table": live,
		"starting": func(t *testing.T, w, h int) Model {
			return testModel(t, Options{Theme: theme}, w, h)
		},
		"reconnecting": func(t *testing.T, w, h int) Model {
			m := live(t, w, h)
			m = step(t, m, pollTickMsg{gen: m.tickGen})
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq,
				err: connRefused()})
		},
		"down_at_start": func(t *testing.T, w, h int) Model {
			m := testModel(t, Options{Theme: theme}, w, h)
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq,
				err: connRefused()})
		},
		"paused":         func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "space") },
		"confirm_expire": func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "x") },
		"detail": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "enter")
			s := fixtureSnapshot()
			row := s.Page.Rows[0]
			s.Detail = &Detail{Key: row.Key, Lock: &row, Events: fixtureEvents()[1:2],
				Waiters: []lockview.Waiter{{ID: 1, Key: row.Key, Owner: "worker-9:1:aaaa0001", Waited: 12e9}, {ID: 2, Key: row.Key, Owner: "worker-4:2:bbbb0002", Waited: 3e9}}}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"events": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "e")
			s := fixtureSnapshot()
			s.Events = append(fixtureEvents(), lockview.Event{ID: 4, OccurredAt: t0.Add(-80 * time.Second),
				Kind: lockdb.EventSessionEnded, Owner: ptr("batch-runner:9:0badf00d"), Actor: "alice@ops",
				Detail: map[string]any{"session_id": float64(12), "host": "batch-2", "pid": float64(9), "leases": float64(3), "reason": "hung job"}})
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"blocking": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "b")
			s := fixtureSnapshot()
			s.Blocking = fixtureBlocking()
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		// The cursor on the last wait: the page scrolls to keep it in view.
		"blocking_last": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "b")
			s := fixtureSnapshot()
			s.Blocking = fixtureBlocking()
			return press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s}), "G", "k")
		},
		// The selected key in its lock-delay: the footer offers u.
		"delayed": func(t *testing.T, w, h int) Model {
			return withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), delayedSnapshot())
		},
		"delayed_detail": func(t *testing.T, w, h int) Model {
			m := press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), delayedSnapshot()), "enter")
			s := delayedSnapshot()
			row := s.Page.Rows[0]
			s.Detail = &Detail{Key: row.Key, Lock: &row,
				Waiters: []lockview.Waiter{{ID: 1, Key: row.Key, Owner: "worker-9:1:aaaa0001", Waited: 12e9}, {ID: 2, Key: row.Key, Owner: "worker-4:2:bbbb0002", Waited: 3e9}}}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"kept": func(t *testing.T, w, h int) Model {
			return withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), keptSnapshot())
		},
		"kept_detail": func(t *testing.T, w, h int) Model {
			m := press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), keptSnapshot()), "enter")
			s := keptSnapshot()
			row := s.Page.Rows[0]
			s.Detail = &Detail{Key: row.Key, Lock: &row}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"sessions": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "S")
			s := fixtureSnapshot()
			s.Sessions = fixtureSessions()
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"confirm_end_session": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "S")
			s := fixtureSnapshot()
			s.Sessions = fixtureSessions()
			return press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s}), "j", "x")
		},
		// h: the keys that cost the most waiting in the last 15 minutes.
		"hotkeys": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "h")
			s := fixtureSnapshot()
			s.HotKeys = fixtureHotKeys()
			return press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s}), "j")
		},
		// The hour still being read: how far, and the counts so far.
		"hotkeys_reading": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "h")
			s := fixtureSnapshot()
			s.HotKeys = fixtureHotKeys()
			s.HotKeys.Progress = hotkeys.Progress{Read: 340000, Of: 1000000}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		// enter on a hot key: its detail, with its waits and holds over the
		// window.
		"hotkeys_detail": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "h")
			s := fixtureSnapshot()
			s.HotKeys = fixtureHotKeys()
			m = press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s}), "enter")
			s = fixtureSnapshot()
			row := s.Page.Rows[0]
			s.Detail = &Detail{Key: row.Key, Lock: &row, Events: fixtureEvents()[1:2], Times: fixtureTimes(),
				Waiters: []lockview.Waiter{{ID: 1, Key: row.Key, Owner: "worker-9:1:aaaa0001", Waited: 12e9}}}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"help": func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "?") },
		"help_readonly": func(t *testing.T, w, h int) Model {
			return press(t, withSnapshot(t, testModel(t, Options{Theme: theme, ReadOnly: true}, w, h), fixtureSnapshot()), "?")
		},
		"replica": func(t *testing.T, w, h int) Model {
			s := fixtureSnapshot()
			s.Page.InRecovery = true
			return press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), s), "x")
		},
		"filter_no_match": func(t *testing.T, w, h int) Model {
			m := press(t, live(t, w, h), "/", "z", "z", "enter")
			s := fixtureSnapshot()
			s.Page = lockview.Page{Anchor: -1, Totals: s.Page.Totals, DBNow: t0}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		// The filter typed: its input has the keyboard.
		"filtering": func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "/", "b", "i") },
		// Connected through a read-only context: its name in its colour
		// before everything else, and no action offered.
		"context": func(t *testing.T, w, h int) Model {
			m := testModel(t, Options{Theme: theme, Context: Context{Name: "prod-eu", Color: "red", ReadOnly: true,
				Database: "service=prod-eu"}}, w, h)
			return withSnapshot(t, m, fixtureSnapshot())
		},
		// c: the contexts to switch to, the one in use and a read-only one
		// marked.
		"context_picker": func(t *testing.T, w, h int) Model {
			m := testModel(t, Options{Theme: theme, Context: Context{Name: "staging", Color: "green"},
				Contexts: []Context{{Name: "staging", Color: "green", Database: "postgres://ops:xxxxx@staging-db.internal/app"},
					{Name: "prod-eu", Color: "red", ReadOnly: true, Database: "service=lockctl-prod-eu"},
					{Name: "prod-us", Color: "#d97706", Database: "host=db.us.internal dbname=app user=ops"}},
				Connect: func(context.Context, string) (Connection, error) { return Connection{}, nil }}, w, h)
			return press(t, withSnapshot(t, m, fixtureSnapshot()), "c", "down")
		},
		// E: where to write the table, a name proposed.
		"export_prompt": func(t *testing.T, w, h int) Model {
			return press(t, withSnapshot(t, testModel(t, Options{Theme: theme, Export: true}, w, h), fixtureSnapshot()), "E")
		},
		"kept_order": func(t *testing.T, w, h int) Model {
			// Sorted by TTL on a large table between two ordering reads:
			// the rows are this poll's, their order 4s old.
			m := press(t, live(t, w, h), "s")
			s := fixtureSnapshot()
			s.Page.Order = lockview.Order{TakenAt: t0.Add(-4 * time.Second), Took: 130 * time.Millisecond}
			return step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: s})
		},
		"acquire_form": func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "a") },
		// Shared and semaphore keys: OWNER names their holders, the
		// footer's actions are the key's (every holder).
		"groups": func(t *testing.T, w, h int) Model {
			return withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), groupSnapshot())
		},
		"confirm_group": func(t *testing.T, w, h int) Model {
			return press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), groupSnapshot()), "x")
		},
		// The shared key's holders, the second selected.
		"group_detail": func(t *testing.T, w, h int) Model {
			m := press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), groupSnapshot()), "enter")
			return press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: groupDetailSnapshot()}), "down", "down")
		},
		"confirm_holder": func(t *testing.T, w, h int) Model {
			m := press(t, withSnapshot(t, testModel(t, Options{Theme: theme}, w, h), groupSnapshot()), "enter")
			return press(t, step(t, m, pageLoadedMsg{seq: m.seq, querySeq: m.querySeq, snap: groupDetailSnapshot()}), "down", "down", "d")
		},
		"status_line": func(t *testing.T, w, h int) Model {
			m := testModel(t, Options{Theme: theme, Status: func() string { return "demo: 8 workers · 1,204 grants · 3 steals · 1 zombie write refused" }}, w, h)
			return withSnapshot(t, m, fixtureSnapshot())
		},
	}
}
