package tui

import (
	"slices"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// Update applies one message to the model.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.sized = msg.Width, msg.Height, true
		m.layout()
		if !slices.Contains(visibleSorts(m.width), m.order) {
			// Its column no longer fits: an order nobody can see is a puzzle.
			m.order = lockview.SortKey
			m.flash = flash{"sorted by key: the column of the previous order does not fit this width", flashInfo}
			return m, m.queryChanged()
		}
		return m, nil
	case tea.BackgroundColorMsg:
		m.styles = newStyles(msg.IsDark())
		m.help.Styles = m.styles.Help
		m.refreshPanes()
		return m, nil
	case frameMsg:
		m.refreshPanes() // countdowns in the detail pane
		return m, frameTick()
	case pollTickMsg:
		if msg.gen != m.tickGen || m.paused || m.inflight {
			return m, nil
		}
		return m, m.requestPoll()
	case pageLoadedMsg:
		return m.pageLoaded(msg)
	case actionDoneMsg:
		return m.actionDone(msg)
	case tea.KeyPressMsg:
		return m.keyPressed(msg)
	case tea.PasteMsg:
		return m.forwardToInput(msg)
	}
	return m.forwardToInput(msg) // cursor blinks of the text inputs
}

// pageLoaded takes a poll's reply and arms the next poll: at once if one
// was asked for meanwhile, else after the interval (or a back-off).
func (m Model) pageLoaded(msg pageLoadedMsg) (tea.Model, tea.Cmd) {
	if !m.inflight || msg.seq != m.seq {
		return m, nil // not the poll in flight: stale
	}
	m.inflight = false
	if msg.querySeq != m.querySeq { // asked under an older filter or sort
		m.pending = false
		return m, m.requestPoll()
	}
	if msg.err != nil {
		m.failures++
		m.lastErr = msg.err
		m.hasCaps = false         // the role may differ after a reconnection
		m.sawLockctlTable = false // and the table, on another server
		m.pending = false
		return m, m.armTick(backoff(m.refresh, m.failures))
	}
	m.noteServer(msg.snap.server)
	m.failures, m.lastErr = 0, nil
	m.applySnapshot(msg.snap)
	if m.pending {
		m.pending = false
		return m, m.requestPoll()
	}
	return m, m.armTick(m.refresh)
}

func (m *Model) applySnapshot(s snapshot) {
	// New events go on top; an operator scrolled down into the log keeps
	// the lines they are reading where they are (one event, one line).
	keepLine := -1
	if len(s.events) > 0 && m.eventsView.YOffset() > 0 {
		keepLine = m.eventsView.YOffset() + len(s.events)
	}
	if s.events != nil {
		m.events = append(append([]lockview.Event{}, s.events...), m.events...)
		if len(m.events) > 500 {
			m.events = m.events[:500]
		}
	}
	defer func() {
		if keepLine >= 0 {
			m.eventsView.SetYOffset(keepLine)
		}
	}()
	if s.detail == nil && m.detail != nil && m.pane == paneDetail {
		s.detail = m.detail
	}
	if s.detail != nil && s.detail.key == m.detailKey {
		m.detail = s.detail
	}
	if s.caps != nil {
		m.caps, m.hasCaps = *s.caps, true
	}
	m.snap, m.hasSnap = s, true
	m.sawLockctlTable = !s.page.Seed
	m.keys = m.actionKeys()
	m.followSelection()
	m.refreshPanes()
}

// actionKeys enables the actions that can succeed, in keys and help: none
// with --read-only or on the reference service's table (lockctl cannot
// write it until it is migrated), else those the role may do, or all
// while the role's capabilities are not known yet.
func (m Model) actionKeys() KeyMap {
	switch {
	case m.opts.ReadOnly || (m.hasSnap && m.snap.page.Seed):
		return m.keys.withActions(false)
	case m.hasCaps:
		return m.keys.withCapabilities(m.caps)
	default:
		return m.keys.withActions(true)
	}
}

// keyPressed routes a key: an open dialog or input first, then the pane.
func (m Model) keyPressed(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	switch {
	case m.confirm != nil:
		return m.confirmKey(msg)
	case m.form != nil:
		return m.formKey(msg)
	case m.filtering:
		return m.filterKey(msg)
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Close):
		if m.pane != paneTable {
			m.pane = paneTable
			return m, nil
		}
		if m.filter != "" {
			m.filter = ""
			m.filterInput.SetValue("")
			return m, m.queryChanged()
		}
		return m, nil
	case key.Matches(msg, k.Help):
		if m.pane == paneHelp {
			m.pane = paneTable
		} else {
			m.pane = paneHelp
			m.refreshPanes()
			m.helpView.GotoTop()
		}
		return m, nil
	case key.Matches(msg, k.Pause):
		m.paused, m.pausedAt = !m.paused, m.now()
		if m.paused {
			m.flash = flash{"refresh paused: the data is not updated (space resumes)", flashInfo}
			return m, nil
		}
		m.flash = flash{"refresh resumed", flashInfo}
		return m, m.requestPoll()
	case key.Matches(msg, k.Slower, k.Faster):
		return m.changeInterval(key.Matches(msg, k.Slower))
	case key.Matches(msg, k.Acquire, k.Renew, k.Expire, k.Release):
		return m.startAction(msg)
	}
	switch m.pane {
	case paneDetail, paneEvents, paneHelp:
		return m.scrollPane(msg)
	}
	return m.tableKey(msg)
}

func (m Model) tableKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		return m, m.move(-1)
	case key.Matches(msg, k.Down):
		return m, m.move(1)
	case key.Matches(msg, k.PageUp):
		return m, m.move(-m.tableRows)
	case key.Matches(msg, k.PageDown):
		return m, m.move(m.tableRows)
	case key.Matches(msg, k.Home):
		return m, m.jump(0)
	case key.Matches(msg, k.End):
		return m, m.jump(-1)
	case key.Matches(msg, k.Sort):
		m.order = nextSort(visibleSorts(m.width), m.order)
		m.flash = flash{"sorted by " + sortLabel(m.order), flashInfo}
		return m, m.queryChanged()
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.prevFilter = m.filter
		m.filterInput.SetValue(m.filter)
		m.filterInput.CursorEnd()
		return m, m.filterInput.Focus()
	case key.Matches(msg, k.Detail):
		row, ok := m.selected()
		if !ok {
			return m, nil
		}
		m.pane = paneDetail
		m.detailKey = row.Key
		m.detail = &detailData{key: row.Key, lock: &row}
		m.refreshPanes()
		m.detailView.GotoTop()
		return m, m.requestPoll()
	case key.Matches(msg, k.Events):
		m.pane = paneEvents
		m.refreshPanes()
		return m, m.requestPoll()
	}
	return m, nil
}

func (m Model) scrollPane(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	vp := &m.detailView
	switch m.pane {
	case paneEvents:
		vp = &m.eventsView
	case paneHelp:
		vp = &m.helpView
	}
	k := m.keys
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
	case key.Matches(msg, k.Events):
		m.pane = paneEvents
		m.refreshPanes()
		return m, m.requestPoll()
	case key.Matches(msg, k.Detail) && m.pane != paneDetail:
		m.pane = paneTable
		return m.tableKey(msg)
	}
	return m, nil
}

// refreshIntervals are the steps + and - move through.
var refreshIntervals = []time.Duration{
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
	5 * time.Second, 10 * time.Second, 30 * time.Second,
}

func (m Model) changeInterval(slower bool) (tea.Model, tea.Cmd) {
	i := 0
	for i < len(refreshIntervals)-1 && refreshIntervals[i] < m.refresh {
		i++
	}
	if slower && refreshIntervals[i] <= m.refresh {
		i = min(i+1, len(refreshIntervals)-1)
	} else if !slower {
		i = max(i-1, 0)
	}
	m.refresh = refreshIntervals[i]
	m.flash = flash{"refreshing every " + shortDur(m.refresh), flashInfo}
	if m.inflight || m.paused {
		return m, nil // the reply arms the next tick with the new interval
	}
	return m, m.armTick(m.refresh) // retires the tick armed with the old one
}

func (m Model) filterKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "enter":
		m.filtering = false
		m.filterInput.Blur()
		return m, nil
	case "esc":
		m.filtering = false
		m.filterInput.Blur()
		if m.filter != m.prevFilter {
			m.filter = m.prevFilter
			return m, m.queryChanged()
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.filterInput, cmd = m.filterInput.Update(msg)
	if v := m.filterInput.Value(); v != m.filter {
		m.filter = v
		m.selRank = 0
		return m, tea.Batch(cmd, m.queryChanged())
	}
	return m, cmd
}

// forwardToInput passes non-key messages (cursor blinks, pastes) to the
// focused text input.
func (m Model) forwardToInput(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch {
	case m.form != nil:
		cmd = m.form.update(msg)
	case m.filtering:
		m.filterInput, cmd = m.filterInput.Update(msg)
		if v := m.filterInput.Value(); v != m.filter {
			m.filter = v
			return m, tea.Batch(cmd, m.queryChanged())
		}
	}
	return m, cmd
}

func (m Model) place(box string, h int) string {
	return lipgloss.Place(m.width, h, lipgloss.Center, lipgloss.Center, box)
}
