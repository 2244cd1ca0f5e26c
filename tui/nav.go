package tui

import (
	"github.com/lockctl/lockctl/internal/lockview"
)

// rankOf is the position among matching rows of page.Rows[i].
func (p *locksPage) rankOf(i int) int64 {
	pg := p.page
	return pg.AnchorRank - int64(pg.Anchor) + int64(i)
}

// selected is the row under the cursor.
func (p *locksPage) selected() (lockview.ListedLock, bool) {
	rows := p.page.Rows
	if p.cursor < 0 || p.cursor >= len(rows) {
		return lockview.ListedLock{}, false
	}
	return rows[p.cursor], true
}

// followSelection puts the cursor back on the selected key after a poll;
// if the key is gone or filtered out, on the row now at its position.
func (p *locksPage) followSelection() {
	rows := p.page.Rows
	if len(rows) == 0 {
		p.cursor = -1
		return
	}
	i := -1
	if p.selKey != "" {
		for j, r := range rows {
			if r.Key == p.selKey {
				i = j
				break
			}
		}
	}
	if i < 0 {
		i = max(0, p.page.Anchor)
	}
	p.cursor, p.selKey, p.selRank = i, rows[i].Key, p.rankOf(i)
	p.ensureVisible()
}

// move shifts the selection by delta rows within the loaded window, and
// asks for a window around the new selection when it nears the edge.
func (p *locksPage) move(delta int) {
	rows := p.page.Rows
	if len(rows) == 0 || p.cursor < 0 {
		return
	}
	i := min(max(p.cursor+delta, 0), len(rows)-1)
	p.cursor, p.selKey, p.selRank = i, rows[i].Key, p.rankOf(i)
	p.ensureVisible()
	nearTop := i < p.tableRows && p.rankOf(0) > 0
	nearEnd := i >= len(rows)-p.tableRows && p.rankOf(len(rows)-1) < p.page.Matching-1
	if nearTop || nearEnd || p.missingHolders() {
		p.out.poll = true
	}
}

// missingHolders says a group row on screen has no holders read: the last
// poll read them for the rows then around the selection, or none while the
// table was off screen. The next poll reads them.
func (p *locksPage) missingHolders() bool {
	rows := p.page.Rows
	first := int(p.topRank - p.rankOf(0))
	for i := max(first, 0); i < len(rows) && i < first+p.tableRows; i++ {
		if _, read := p.holders[rows[i].Key]; !read && runningGroup(rows[i].Lock) {
			return true
		}
	}
	return false
}

// jump selects the first row (rank 0) or the last (-1).
func (p *locksPage) jump(rank int64) {
	p.selKey, p.selRank = "", rank
	if rank < 0 {
		p.topRank = max(0, p.page.Matching-int64(p.tableRows))
	} else {
		p.topRank = 0
	}
	// Show it at once if it is loaded (and the rows are the query's).
	if n := len(p.page.Rows); n > 0 && !p.awaiting {
		want := rank
		if rank < 0 {
			want = p.page.Matching - 1
		}
		if i := int(want - p.rankOf(0)); i >= 0 && i < n {
			p.cursor, p.selKey, p.selRank = i, p.page.Rows[i].Key, want
		}
	}
	p.out.poll = true
}

// ensureVisible scrolls so the selection is on screen.
func (p *locksPage) ensureVisible() {
	if p.cursor < 0 || p.tableRows <= 0 {
		return
	}
	rank, rows := p.selRank, int64(p.tableRows)
	if rank < p.topRank {
		p.topRank = rank
	}
	if rank >= p.topRank+rows {
		p.topRank = rank - rows + 1
	}
	p.topRank = max(0, min(p.topRank, p.page.Matching-rows))
	// Never above the first loaded row.
	p.topRank = max(p.topRank, p.rankOf(0))
	if rank < p.topRank { // window shorter than the screen above the cursor
		p.topRank = rank
	}
}
