package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// scroll moves a page's viewport by the KeyMap's movement keys, and says
// whether msg was one of them.
func scroll(vp *viewport.Model, k KeyMap, msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, k.Up):
		vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		vp.PageUp()
	case key.Matches(msg, k.PageDown):
		vp.PageDown()
	case key.Matches(msg, k.Home):
		vp.GotoTop()
	case key.Matches(msg, k.End):
		vp.GotoBottom()
	default:
		return false
	}
	return true
}

// sizeViewport gives vp the page's size.
func sizeViewport(vp *viewport.Model, width, height int) {
	vp.SetWidth(width)
	vp.SetHeight(height)
}
