package tui

import (
	"github.com/lockctl/lockctl/internal/lockview"
)

// fitTokens widens the TOKEN column to the longest token among rows as
// shown (shownToken), taking the cells from KEY: a token is what an
// operator types back (renew, release), so it is never cut. Tokens on the
// reference service's table are epoch milliseconds, 13 digits.
func fitTokens(cols []column, rows []lockview.ListedLock, reference bool) []column {
	need := 0
	for _, r := range rows {
		need = max(need, width(shownToken(r.Token, reference)))
	}
	token, key := -1, -1
	for i, c := range cols {
		switch c.title {
		case "TOKEN":
			token = i
		case "KEY":
			key = i
		}
	}
	if token < 0 || key < 0 || need <= cols[token].width {
		return cols
	}
	grow := min(need-cols[token].width, cols[key].width-10) // a key keeps 10 cells
	if grow <= 0 {
		return cols
	}
	cols = append([]column(nil), cols...)
	cols[token].width += grow
	cols[key].width -= grow
	return cols
}
