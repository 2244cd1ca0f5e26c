package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// Update applies one message: the root's own (size, colours, polls,
// actions, the keys every page shares), else the page on screen's. Every
// page then gets the root's common as it now is.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := m.route(msg)
	m.share()
	return m, cmd
}

func (m Model) route(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.sized = msg.Width, msg.Height, true
		return m, m.layout()
	case tea.BackgroundColorMsg:
		if m.followsBackground() {
			m.setStyles(newStyles(msg.IsDark()))
		}
		return m, nil
	case frameMsg:
		return m, frameTick() // share() brings the pages' countdowns up to date
	case pollTickMsg:
		if msg.gen != m.tickGen || m.paused || m.inflight {
			return m, nil
		}
		return m, m.requestPoll()
	case pageLoadedMsg:
		return m.pageLoaded(msg)
	case actionDoneMsg:
		return m.actionDone(msg)
	case contextSwitchedMsg:
		return m.contextSwitched(msg)
	case exportDoneMsg:
		return m.exportDone(msg)
	case tea.KeyPressMsg:
		return m.keyPressed(msg)
	}
	// Cursor blinks and pastes: the acquire form's or the export
	// prompt's, else the page's.
	switch {
	case m.form != nil:
		return m, m.form.update(msg)
	case m.export != nil:
		p := *m.export
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg)
		m.export = &p
		return m, cmd
	}
	return m, m.toPage(m.active, msg)
}

// setStyles draws with s from now on.
func (m *Model) setStyles(s Styles) {
	m.styles = s
	m.help.Styles = s.Help
	if m.form != nil {
		m.form.setStyles(s)
	}
	if m.export != nil {
		p := *m.export
		p.input.SetStyles(s.Input)
		m.export = &p
	}
}

// toPage gives msg to page id and carries out what the page asks.
func (m *Model) toPage(id pageID, msg tea.Msg) tea.Cmd {
	p := m.pages[id]
	if p == nil {
		return nil
	}
	p, cmd := p.Update(msg)
	m.pages[id] = p
	return tea.Batch(cmd, m.takeAsks(id))
}

// takeAsks empties page id's outbox and does what it asks.
func (m *Model) takeAsks(id pageID) tea.Cmd {
	a, ok := m.pages[id].(asker)
	if !ok {
		return nil
	}
	p, out := a.takeAsks()
	m.pages[id] = p
	if out.flash != nil {
		m.flash = *out.flash
	}
	switch {
	case out.newQuery:
		return m.queryChanged()
	case out.poll:
		return m.requestPoll()
	}
	return nil
}

// navEntry is a key that opens a page from any page. A toggle closes its
// page when pressed on it; a needsKey page opens on the key selected
// where the key was pressed (a lock's, or a wait's on the blocking page),
// and only with one. Esc on a returns page goes back to the page it was
// opened from, on any other to the locks page.
type navEntry struct {
	binding                   key.Binding
	page                      pageID
	toggle, needsKey, returns bool
}

// navigation lists the keys that open pages.
func (m Model) navigation() []navEntry {
	k := m.keys
	return []navEntry{
		{binding: k.Detail, page: pageDetail, needsKey: true, returns: true},
		{binding: k.Events, page: pageEvents},
		{binding: k.Blocking, page: pageBlocking},
		{binding: k.Sessions, page: pageSessions},
		{binding: k.HotKeys, page: pageHotKeys},
		{binding: k.Help, page: pageHelp, toggle: true},
	}
}

// openPage puts nav's page on screen and tells it so, with the selection
// of the page it is opened from.
func (m *Model) openPage(nav navEntry) tea.Cmd {
	var opened pageOpenedMsg
	if row, ok := m.selection(); ok {
		opened.lock = &row
		opened.holders, opened.holdersKnown = m.selectedHolders()
	}
	opened.key, _ = m.selectedKey()
	if w, ok := m.pages[m.active].(windowed); ok {
		opened.window = w.window()
	}
	m.back = pageNone
	if nav.returns {
		m.back = m.active
	}
	m.active = nav.page
	return m.toPage(nav.page, opened)
}

// goBack is esc on a page: back to the page it was opened from, which
// keeps its place, else to the locks page.
func (m *Model) goBack() tea.Cmd {
	to := m.back
	if to == pageNone {
		to = pageLocks
	}
	m.active, m.back = to, pageNone
	return m.toPage(to, pageOpenedMsg{returned: true})
}

// selector is the page whose selected lock the keys act on: the page on
// screen, or the home page when this page selects no lock of its own.
func (m Model) selector() lockSelector {
	if s, is := m.pages[m.active].(lockSelector); is {
		return s
	}
	s, _ := m.pages[pageLocks].(lockSelector)
	return s
}

// selection is the lock the keys act on.
func (m Model) selection() (row lockview.ListedLock, ok bool) {
	if s := m.selector(); s != nil {
		return s.selectedLock()
	}
	return row, false
}

// selectedHolders are the holders of the selection when it is a group's
// row, as its page knows them; known is false when it does not.
func (m Model) selectedHolders() (holders []lockview.Holder, known bool) {
	if s, is := m.selector().(holderSelector); is {
		return s.selectedHolders()
	}
	return nil, false
}

// selectedHolder is the one holder of the selection the keys act on, when
// the page selects one (the detail page of a shared or semaphore key).
func (m Model) selectedHolder() (lockview.Holder, bool) {
	if s, is := m.selector().(holderSelector); is {
		return s.selectedHolder()
	}
	return lockview.Holder{}, false
}

// selectedKey is the key enter opens: the selected lock's, else the key
// the page on screen selects without its row.
func (m Model) selectedKey() (string, bool) {
	if row, ok := m.selection(); ok {
		return row.Key, true
	}
	if s, is := m.pages[m.active].(keySelector); is {
		return s.selectedKey()
	}
	return "", false
}

// keyPressed routes a key: an open dialog first, then a page's text input,
// then the keys every page shares, then the page on screen.
func (m Model) keyPressed(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	switch {
	case m.confirm != nil:
		return m.confirmKey(msg)
	case m.form != nil:
		return m.formKey(msg)
	case m.picker != nil:
		return m.pickerKey(msg)
	case m.export != nil:
		return m.exportKey(msg)
	}
	if c, ok := m.pages[m.active].(capturer); ok && c.capturing() {
		return m, m.toPage(m.active, msg)
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Close) && m.active != pageLocks:
		return m, m.goBack()
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Slower, k.Faster):
		return m.changeInterval(key.Matches(msg, k.Slower))
	case key.Matches(msg, k.Context) && m.canSwitch():
		return m.openPicker()
	case key.Matches(msg, k.Export) && m.opts.Export:
		return m.startExport()
	case key.Matches(msg, k.EndSession) && m.sessions() != nil:
		return m.startEndSession(m.sessions())
	case key.Matches(msg, k.Acquire, k.Renew, k.Expire, k.Release, k.EndDelay, k.Revoke):
		return m.startAction(msg)
	}
	for _, nav := range m.navigation() {
		if !key.Matches(msg, nav.binding) {
			continue
		}
		switch {
		case nav.toggle && m.active == nav.page:
			m.active = pageLocks
			return m, m.toPage(pageLocks, pageOpenedMsg{returned: true})
		case nav.needsKey && m.active == nav.page:
			return m, nil
		case nav.needsKey:
			if _, ok := m.selectedKey(); !ok {
				return m, nil
			}
		}
		return m, m.openPage(nav)
	}
	return m, m.toPage(m.active, msg)
}

// sessions is the page on screen when it selects sessions, else nil.
func (m Model) sessions() sessionSelector {
	s, _ := m.pages[m.active].(sessionSelector)
	return s
}

func (m Model) place(box string, h int) string {
	return lipgloss.Place(m.width, h, lipgloss.Center, lipgloss.Center, box)
}
