package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// column is one table column; width is decided per terminal width.
type column struct {
	title string
	width int
	right bool
}

// liveRow is a row advanced from the poll's instant to now: remaining TTL,
// held-for and waits counted on the monotonic clock.
type liveRow struct {
	lockview.ListedLock
	state lockdb.State
}

// live advances r by elapsed since its snapshot arrived. A lock-delay
// that ran out meanwhile is over: the row is expired or free again.
func live(r lockview.ListedLock, elapsed time.Duration) liveRow {
	if r.ReleasedAt == nil {
		r.Remaining -= elapsed
		r.HeldFor += elapsed
	}
	if r.DelayUntil != nil && !r.DelayUntil.After(r.DBNow.Add(elapsed)) {
		r.DelayUntil, r.KeptUntil = nil, nil
	}
	if r.Waiters > 0 {
		r.OldestWait += elapsed
	}
	return liveRow{ListedLock: r, state: r.State()}
}

// Widths KEY and OWNER grow to at most: on a wide terminal the spare
// cells stay empty rather than stretch them apart from the rest of the row.
const (
	maxKeyWidth   = 48
	maxOwnerWidth = 36
)

// tableLayout picks the columns that fit in w cells. Optional columns are
// dropped from the least important up, so a narrower terminal only ever
// loses columns (never trades one for another).
func tableLayout(w int) (cols []column, wide bool) {
	// The wide TTL and STATE cells only once they cost no column.
	if w >= 100 {
		if cols, all := layoutColumns(w, true); all {
			return cols, true
		}
	}
	cols, _ = layoutColumns(w, false)
	return cols, false
}

// layoutColumns lays out w cells with wide or narrow TTL and STATE cells,
// and says whether every optional column fit.
func layoutColumns(w int, wide bool) (cols []column, all bool) {
	ttlW := 13 // "██████ 12.3s"
	if wide {
		ttlW = 17
	}
	stateW := 9
	if wide {
		stateW = 19
	}
	fixed := map[string]column{
		"TOKEN":    {title: "TOKEN", width: 9, right: true},
		"TTL":      {title: "TTL LEFT", width: ttlW},
		"HELD FOR": {title: "HELD FOR", width: 8, right: true},
		"STATE":    {title: "STATE", width: stateW},
		"WAITERS":  {title: "WAITERS", width: 12},
	}
	// Which optional columns to show, most important first.
	optional := []string{"WAITERS", "TOKEN", "HELD FOR"}
	avail := w - 2 // cursor marker
	need := func(names []string) int {
		n := fixed["TTL"].width + fixed["STATE"].width + 2
		for _, c := range names {
			n += fixed[c].width + 1
		}
		return n
	}
	var shown []string
	for _, c := range optional {
		// Keep at least 34 cells for key and owner.
		if need(append(shown, c))+34 > avail {
			break
		}
		shown = append(shown, c)
	}
	rest := avail - need(shown)
	keyW, ownerW := rest, 0
	if rest >= 34 {
		keyW = rest * 55 / 100
		ownerW = rest - keyW - 1
	}
	keyW, ownerW = min(keyW, maxKeyWidth), min(ownerW, maxOwnerWidth)
	cols = append(cols, column{title: "KEY", width: keyW})
	if ownerW > 0 {
		cols = append(cols, column{title: "OWNER", width: ownerW})
	}
	for _, name := range []string{"TOKEN", "TTL", "HELD FOR", "STATE", "WAITERS"} {
		if name == "TTL" || name == "STATE" || contains(shown, name) {
			cols = append(cols, fixed[name])
		}
	}
	return cols, len(shown) == len(optional)
}

// sortColumn is the column an order sorts by.
var sortColumn = map[lockview.Sort]string{
	lockview.SortKey: "KEY", lockview.SortTTL: "TTL LEFT", lockview.SortToken: "TOKEN",
	lockview.SortHeldFor: "HELD FOR", lockview.SortWaiters: "WAITERS",
}

// visibleSorts are the orders whose column is on screen at width w, in
// lockview.Sorts' order: s never sorts by a column the operator cannot see.
func visibleSorts(w int) []lockview.Sort {
	cols, _ := tableLayout(w)
	var out []lockview.Sort
	for _, s := range lockview.Sorts {
		for _, c := range cols {
			if c.title == sortColumn[s] {
				out = append(out, s)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tableView draws the column titles and the visible rows.
func (p *locksPage) tableView() string {
	cols, wide := tableLayout(p.width)
	cols = fitTokens(cols, p.page.Rows, p.c.reference)
	s := p.c.styles
	var b strings.Builder
	b.WriteString("  " + s.Header.Render(titlesLine(cols)))
	if !p.c.hasSnap && p.c.failing {
		b.WriteString("\n\n  " + s.Muted.Render("no data yet: the database has not answered; retrying (see above)"))
		return b.String()
	}
	if !p.c.hasSnap {
		b.WriteString("\n\n  " + s.Muted.Render("waiting for the first poll…"))
		return b.String()
	}
	rows := p.page.Rows
	if len(rows) == 0 {
		msg := "no locks in this table yet"
		if p.filter != "" {
			msg = "no lock's key or owner contains " + fmt.Sprintf("%q", p.filter) + " (esc clears the filter)"
		}
		b.WriteString("\n\n  " + s.Muted.Render(msg))
		return b.String()
	}
	elapsed := p.c.advance
	first := int(p.topRank - p.rankOf(0))
	for i := max(first, 0); i < len(rows) && i < first+p.tableRows; i++ {
		if p.awaiting && !matchesFilter(rows[i], p.filter) {
			continue // the old query's row, which the new filter drops
		}
		b.WriteString("\n")
		b.WriteString(p.rowView(live(rows[i], elapsed), cols, wide, i == p.cursor))
	}
	return b.String()
}

// titlesLine is the titles of cols, aligned as their cells.
func titlesLine(cols []column) string {
	titles := make([]string, len(cols))
	for i, c := range cols {
		if c.right {
			titles[i] = fitRight(c.title, c.width)
		} else {
			titles[i] = fit(c.title, c.width)
		}
	}
	return strings.Join(titles, " ")
}

// stateStyle is the colour of a state.
func (s Styles) stateStyle(st lockdb.State) lipgloss.Style {
	switch st {
	case lockdb.StateExpiring:
		return s.Expiring
	case lockdb.StateExpired:
		return s.Expired
	case lockdb.StateFree:
		return s.Free
	case lockdb.StateDelayed, lockdb.StateKept:
		return s.Delayed
	default:
		return s.Held
	}
}

// delayLeft is what is left of a delayed row's lock-delay, counted from
// the poll's instant plus elapsed.
func delayLeft(r lockview.ListedLock, elapsed time.Duration) time.Duration {
	if r.DelayUntil == nil {
		return 0
	}
	return r.DelayUntil.Sub(r.DBNow.Add(elapsed))
}

// inDelay: nobody is granted a key in state st until a time an operator's
// end-delay (u) may bring forward: a lock-delay, or a hold's at-least point.
func inDelay(st lockdb.State) bool {
	return st == lockdb.StateDelayed || st == lockdb.StateKept
}

// stateLabel says what a state means for an operator.
func stateLabel(st lockdb.State, wide bool) string {
	switch {
	case st == lockdb.StateExpiring && wide:
		return "expiring soon"
	case st == lockdb.StateExpired && wide:
		return "expired, stealable"
	case st == lockdb.StateFree && wide:
		return "free (released)"
	case st == lockdb.StateDelayed && wide:
		return "delayed, no grants"
	case st == lockdb.StateKept && wide:
		return "kept (at least)"
	}
	return string(st)
}

func (p *locksPage) rowView(r liveRow, cols []column, wide bool, selected bool) string {
	s := p.c.styles
	stStyle := s.stateStyle(r.state)
	cells := make([]string, len(cols))
	for i, c := range cols {
		var text string
		style := lipgloss.NewStyle()
		switch c.title {
		case "KEY":
			text = fit(safe(r.Key), c.width)
		case "OWNER":
			switch {
			case grouped(r.LockInfo):
				text, style = fit(p.groupOwner(r, c.width), c.width), s.Group
				if r.state == lockdb.StateFree {
					style = s.Muted
				}
			case r.state == lockdb.StateFree:
				text, style = fit("last: "+safe(r.Owner), c.width), s.Muted
			default:
				text = safe(r.Owner)
				if v, ok := electionValue(r.Metadata); ok {
					text = "leader " + safe(v) + " · " + text
				}
				text = fit(text, c.width)
			}
		case "TOKEN":
			text = fitRight(shownToken(r.Token, p.c.reference), c.width)
		case "TTL LEFT":
			cells[i] = p.ttlCell(r, c.width, selected)
			continue
		case "HELD FOR":
			if r.state == lockdb.StateFree || p.page.Reference { // the reference's table does not record it
				text, style = fitRight("—", c.width), s.Muted
			} else {
				text = fitRight(shortDur(r.HeldFor), c.width)
			}
		case "STATE":
			text, style = fit(stateLabel(r.state, wide), c.width), stStyle
		case "WAITERS":
			if r.Waiters == 0 {
				text, style = fit("—", c.width), s.Muted
			} else {
				text, style = fit(fmt.Sprintf("%d · %s", r.Waiters, wholeDur(r.OldestWait)), c.width), s.Warning
			}
		}
		if selected {
			style = style.Inherit(s.Selected)
		}
		cells[i] = style.Render(text)
	}
	sep, marker := " ", "  "
	if selected {
		sep, marker = s.Selected.Render(" "), s.Selected.Render("▶ ")
	}
	return marker + strings.Join(cells, sep)
}

// groupOwner is what the OWNER cell of a group's row says in w cells:
// how many hold it, by the holders the last poll read.
func (p *locksPage) groupOwner(r liveRow, w int) string {
	hs, known := p.holders[r.Key]
	return widest(groupOwner(r.LockInfo, liveHolders(hs, p.c.advance), known), w)
}

// ttlCell is a bar of the remaining share of the lease and the seconds left.
func (p *locksPage) ttlCell(r liveRow, w int, selected bool) string {
	s := p.c.styles
	stStyle, empty := s.stateStyle(r.state), s.BarEmpty
	textStyle := lipgloss.NewStyle()
	if selected {
		stStyle, empty, textStyle = stStyle.Inherit(s.Selected), empty.Inherit(s.Selected), textStyle.Inherit(s.Selected)
	}
	barW := w - 8
	var label string
	var frac float64
	switch r.state {
	case lockdb.StateFree:
		return s.Muted.Inherit(textStyle).Render(fit("—", w))
	case lockdb.StateDelayed:
		// The bar and the time are the lock-delay's.
		left := delayLeft(r.ListedLock, p.c.advance)
		label = shortDur(left)
		if r.LockDelay > 0 {
			frac = float64(left) / float64(r.LockDelay)
		}
	case lockdb.StateKept:
		// The bar and the time are the at-least period's, from the grant.
		left := delayLeft(r.ListedLock, p.c.advance)
		label = shortDur(left)
		if period := r.KeptUntil.Sub(r.AcquiredAt); period > 0 {
			frac = float64(left) / float64(period)
		}
	case lockdb.StateExpired:
		label = "-" + shortDur(-r.Remaining)
	case lockdb.StateHeld, lockdb.StateExpiring:
		label = shortDur(r.Remaining)
		if r.TTL <= 0 { // the reference service's table records no TTL: nothing to measure a bar against
			return textStyle.Render(strings.Repeat(" ", max(barW, 0)+1) + fitRight(label, 7))
		}
		frac = float64(r.Remaining) / float64(r.TTL)
	}
	full, rest := bar(frac, barW)
	return stStyle.Render(full) + empty.Render(rest) + textStyle.Render(" "+fitRight(label, 7))
}

// matchesFilter is the filter's rule (lockview.ListQuery.Filter) on a row
// at hand: its key or owner contains filter, ignoring case.
func matchesFilter(row lockview.ListedLock, filter string) bool {
	f := strings.ToLower(filter)
	return strings.Contains(strings.ToLower(row.Key), f) || strings.Contains(strings.ToLower(row.Owner), f)
}
