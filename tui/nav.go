package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// rankOf is the position among matching rows of snap.page.Rows[i].
func (m Model) rankOf(i int) int64 {
	p := m.snap.page
	return p.AnchorRank - int64(p.Anchor) + int64(i)
}

// selected is the row under the cursor.
func (m Model) selected() (lockview.ListedLock, bool) {
	rows := m.snap.page.Rows
	if m.cursor < 0 || m.cursor >= len(rows) {
		return lockview.ListedLock{}, false
	}
	return rows[m.cursor], true
}

// followSelection puts the cursor back on the selected key after a poll;
// if the key is gone or filtered out, on the row now at its position.
func (m *Model) followSelection() {
	rows := m.snap.page.Rows
	if len(rows) == 0 {
		m.cursor = -1
		return
	}
	i := -1
	if m.selKey != "" {
		for j, r := range rows {
			if r.Key == m.selKey {
				i = j
				break
			}
		}
	}
	if i < 0 {
		i = max(0, m.snap.page.Anchor)
	}
	m.cursor, m.selKey, m.selRank = i, rows[i].Key, m.rankOf(i)
	m.ensureVisible()
}

// move shifts the selection by delta rows within the loaded window, and
// polls for a window around the new selection when it nears the edge.
func (m *Model) move(delta int) tea.Cmd {
	rows := m.snap.page.Rows
	if len(rows) == 0 || m.cursor < 0 {
		return nil
	}
	i := min(max(m.cursor+delta, 0), len(rows)-1)
	m.cursor, m.selKey, m.selRank = i, rows[i].Key, m.rankOf(i)
	m.ensureVisible()
	nearTop := i < m.tableRows && m.rankOf(0) > 0
	nearEnd := i >= len(rows)-m.tableRows && m.rankOf(len(rows)-1) < m.snap.page.Matching-1
	if nearTop || nearEnd {
		return m.requestPoll()
	}
	return nil
}

// jump selects the first row (rank 0) or the last (-1).
func (m *Model) jump(rank int64) tea.Cmd {
	m.selKey, m.selRank = "", rank
	if rank < 0 {
		m.topRank = max(0, m.snap.page.Matching-int64(m.tableRows))
	} else {
		m.topRank = 0
	}
	// Show it at once if it is loaded.
	if n := len(m.snap.page.Rows); n > 0 {
		want := rank
		if rank < 0 {
			want = m.snap.page.Matching - 1
		}
		if i := int(want - m.rankOf(0)); i >= 0 && i < n {
			m.cursor, m.selKey, m.selRank = i, m.snap.page.Rows[i].Key, want
		}
	}
	return m.requestPoll()
}

// ensureVisible scrolls so the selection is on screen.
func (m *Model) ensureVisible() {
	if m.cursor < 0 || m.tableRows <= 0 {
		return
	}
	rank, rows := m.selRank, int64(m.tableRows)
	if rank < m.topRank {
		m.topRank = rank
	}
	if rank >= m.topRank+rows {
		m.topRank = rank - rows + 1
	}
	m.topRank = max(0, min(m.topRank, m.snap.page.Matching-rows))
	// Never above the first loaded row.
	m.topRank = max(m.topRank, m.rankOf(0))
	if rank < m.topRank { // window shorter than the screen above the cursor
		m.topRank = rank
	}
}
