package tui

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// sweepSizes are terminal sizes from nothing up: none at all, one cell,
// one column or one row, the 60x4 pane of a split screen, very wide and
// short, very narrow and tall, and the sizes the goldens pin.
var sweepSizes = [][2]int{
	{0, 0}, {1, 1}, {0, 24}, {80, 0}, {1, 40}, {2, 2}, {3, 1}, {5, 3}, {10, 2}, {12, 6},
	{20, 4}, {30, 8}, {40, 5}, {59, 14}, {60, 4}, {60, 15}, {80, 1}, {80, 24}, {300, 1},
	{300, 3}, {200, 50}, {1, 200},
}

// sweepStates are the goldens' states and a few more that a golden does
// not hold: a filter being typed and a form with text in it.
func sweepStates() map[string]func(t *testing.T, w, h int) Model {
	states := consoleStates(ThemeAuto)
	live := states["table"]
	states["filter_typing"] = func(t *testing.T, w, h int) Model { return press(t, live(t, w, h), "/", "c", "r") }
	states["acquire_form_typed"] = func(t *testing.T, w, h int) Model {
		return press(t, live(t, w, h), "a", "j", "o", "b", "tab", "tab")
	}
	states["detail_scrolled"] = func(t *testing.T, w, h int) Model {
		return press(t, states["detail"](t, w, h), "G", "j", "pgdown")
	}
	return states
}

// rendered is m's screen, or a test error naming what panicked: the
// console must never panic, whatever the size.
func rendered(t *testing.T, m Model, what string) (view string, ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: View panicked: %v\n%s", what, r, debug.Stack())
			ok = false
		}
	}()
	return screen(m), true
}

// stepped is step that reports a panic instead of dying of it.
func stepped(t *testing.T, m Model, msg tea.Msg, what string) (next Model, ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: Update(%T) panicked: %v\n%s", what, msg, r, debug.Stack())
			ok = false
		}
	}()
	return step(t, m, msg), true
}

// fits says what is wrong with view for a w x h terminal: not exactly h
// lines, or a line wider than w. A terminal without a cell gets an empty
// view.
func fits(view string, w, h int) error {
	if w == 0 || h == 0 {
		if view != "" {
			return fmt.Errorf("no cell to draw in: want an empty view, got %q", view)
		}
		return nil
	}
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		return fmt.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if width(l) > w {
			return fmt.Errorf("line %d is %d cells wide, more than %d: %q", i, width(l), w, l)
		}
	}
	return nil
}

// Every page, dialog and form, built at every size from 0x0 up (the keys
// that lead there pressed at that size), renders within the size and
// never panics; so does each of them resized through every size and back.
func TestEverySizeRendersWithinIt(t *testing.T) {
	for name, build := range sweepStates() {
		t.Run(name, func(t *testing.T) {
			for _, size := range sweepSizes {
				w, h := size[0], size[1]
				what := fmt.Sprintf("%s built at %dx%d", name, w, h)
				m, ok := built(t, build, w, h, what)
				if !ok {
					continue
				}
				if view, ok := rendered(t, m, what); ok {
					if err := fits(view, w, h); err != nil {
						t.Errorf("%s: %v\n%s", what, err, view)
					}
				}
			}
			// Resized from 80x24 through every size, and back up.
			m, ok := built(t, build, 80, 24, name+" at 80x24")
			if !ok {
				return
			}
			sizes := append(append([][2]int{}, sweepSizes...), [2]int{80, 24})
			for i := len(sweepSizes) - 1; i >= 0; i-- {
				sizes = append(sizes, sweepSizes[i])
			}
			for _, size := range sizes {
				w, h := size[0], size[1]
				what := fmt.Sprintf("%s resized to %dx%d", name, w, h)
				if m, ok = stepped(t, m, tea.WindowSizeMsg{Width: w, Height: h}, what); !ok {
					return
				}
				view, ok := rendered(t, m, what)
				if !ok {
					return
				}
				if err := fits(view, w, h); err != nil {
					t.Errorf("%s: %v\n%s", what, err, view)
				}
			}
		})
	}
}

// built runs build, reporting a panic in it (an Update at that size).
func built(t *testing.T, build func(t *testing.T, w, h int) Model, w, h int, what string) (m Model, ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panicked: %v\n%s", what, r, debug.Stack())
			ok = false
		}
	}()
	return build(t, w, h), true
}

// A bar given no cells (a column squeezed to nothing) is empty, whatever
// its fraction.
func TestBarOfNoCells(t *testing.T) {
	for _, w := range []int{-8, 0} {
		if full, rest := bar(0.5, w); full != "" || rest != "" {
			t.Errorf("bar(0.5, %d) = %q, %q; want nothing", w, full, rest)
		}
	}
	if full, rest := bar(0.01, 1); full != "█" || rest != "" {
		t.Errorf("bar(0.01, 1) = %q, %q; want one filled cell", full, rest)
	}
}
