package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// listCursor is the cursor of a page that lists rows, a screenful at a
// time (the sessions, the hot keys): the selected row and the first row
// on screen. The page keeps what the row is (its id or key) so the cursor
// can follow it from poll to poll.
type listCursor struct {
	cursor int // index of the selected row; -1: none
	top    int // first row on screen
}

// place puts the cursor on row i of n, kept within them (-1 when there
// are none), and scrolls so it is among the shown rows on screen.
func (c *listCursor) place(i, n, shown int) {
	c.cursor = -1
	if n > 0 {
		c.cursor = min(max(i, 0), n-1)
	}
	c.keepVisible(n, shown)
}

// keepVisible scrolls so the cursor's row is among the shown rows.
func (c *listCursor) keepVisible(n, shown int) {
	if c.cursor < c.top {
		c.top = max(c.cursor, 0)
	}
	if c.cursor >= c.top+shown {
		c.top = c.cursor - shown + 1
	}
	c.top = max(0, min(c.top, n-shown))
}

// moveBy moves the cursor by a movement key, and says whether msg was one.
func (c *listCursor) moveBy(k KeyMap, msg tea.KeyPressMsg, n, shown int) bool {
	switch {
	case key.Matches(msg, k.Up):
		c.place(c.cursor-1, n, shown)
	case key.Matches(msg, k.Down):
		c.place(c.cursor+1, n, shown)
	case key.Matches(msg, k.PageUp):
		c.place(c.cursor-shown, n, shown)
	case key.Matches(msg, k.PageDown):
		c.place(c.cursor+shown, n, shown)
	case key.Matches(msg, k.Home):
		c.place(0, n, shown)
	case key.Matches(msg, k.End):
		c.place(n-1, n, shown)
	default:
		return false
	}
	return true
}
