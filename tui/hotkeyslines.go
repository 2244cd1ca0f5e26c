package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/hotkeys"
)

// hotColumn is one of the hot keys page's counts as laid out: its value
// right-aligned in valueW cells, then, when spark, its series.
type hotColumn struct {
	col    hotkeys.Column
	valueW int
	spark  bool
}

func (c hotColumn) width() int {
	if c.spark {
		return c.valueW + 1 + hotkeys.Points
	}
	return c.valueW
}

// hotTitle is a column's title; the column ranked by is marked.
func hotTitle(col, by hotkeys.Column) string {
	t := strings.ToUpper(col.String())
	if col == by {
		t += "▼"
	}
	return t
}

// minHotKey is the fewest cells the key column is given before counts
// are dropped; maxHotKey the most it takes of a wide terminal, so the
// counts stay near their keys.
const minHotKey, maxHotKey = 16, 64

// hotLayout lays out w cells: the key, then every count with its
// sparkline when they fit; else every count with only the ranked one's
// sparkline, dropping the counts not ranked by from the last while the
// key would get too few cells.
func hotLayout(w int, by hotkeys.Column) (keyW int, cols []hotColumn) {
	var all []hotColumn
	for _, c := range hotkeys.Columns {
		all = append(all, hotColumn{col: c, valueW: max(width(hotTitle(c, c)), 7)})
	}
	keyWith := func(cols []hotColumn) int {
		used := 2 // the cursor's marker
		for _, c := range cols {
			used += 1 + c.width()
		}
		return w - used
	}
	sparked := make([]hotColumn, len(all))
	for i, c := range all {
		c.spark, c.valueW = true, 7 // the title spans the value and its sparkline
		sparked[i] = c
	}
	if k := keyWith(sparked); k >= minHotKey {
		return min(k, maxHotKey), sparked
	}
	cols = all
	for i := range cols {
		cols[i].spark = cols[i].col == by
	}
	for i := len(cols) - 1; i >= 0 && keyWith(cols) < minHotKey; i-- {
		if cols[i].col != by {
			cols = append(cols[:i:i], cols[i+1:]...)
		}
	}
	return min(max(keyWith(cols), 1), maxHotKey), cols
}

func hotTitles(keyW int, cols []hotColumn, by hotkeys.Column) string {
	titles := []string{fit("KEY", keyW)}
	for _, c := range cols {
		titles = append(titles, fitRight(hotTitle(c.col, by), c.width()))
	}
	return strings.Join(titles, " ")
}

// hotValue is a count as the page shows it: the total wait as a duration.
func hotValue(r hotkeys.Row, col hotkeys.Column) string {
	if col == hotkeys.ByWaitTime {
		if r.WaitTime == 0 {
			return "0"
		}
		return shortDur(r.WaitTime.Round(time.Millisecond))
	}
	return fmt.Sprint(r.Value(col))
}

// rowView draws one key's counts and sparklines.
func (p *hotKeysPage) rowView(r hotkeys.Row, keyW int, cols []hotColumn, selected bool) string {
	s := p.c.styles
	text, spark := lipgloss.NewStyle(), s.Spark
	sep, marker := " ", "  "
	if selected {
		text, spark = text.Inherit(s.Selected), spark.Inherit(s.Selected)
		sep, marker = s.Selected.Render(" "), s.Selected.Render("▶ ")
	}
	cells := []string{text.Render(fit(safe(r.Key), keyW))}
	for _, c := range cols {
		cell := text.Render(fitRight(hotValue(r, c.col), c.valueW))
		if c.spark {
			cell += sep + spark.Render(sparkline(r.Series[c.col]))
		}
		cells = append(cells, cell)
	}
	return marker + strings.Join(cells, sep)
}
