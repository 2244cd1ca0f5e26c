package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// EachListed calls fn with every row the console's table lists under
// filter and order, in that order, a window of up to MaxWindow rows at a
// time: each window is read as ListLocks reads the console's, the first
// from the top, each next from the last row of the one before. It holds
// one window at a time, whatever the table's size. Rows that move in the
// order while it reads (a renewal moves a row in the TTL order, a new row
// lands before the windows read) may be met twice or not at all, as when
// paging any live table.
func EachListed(ctx context.Context, db store.DBTX, filter string, order Sort, fn func([]ListedLock) error) error {
	return eachListed(ctx, db, filter, order, MaxWindow, fn)
}

// eachListed is EachListed in windows of size rows (MaxWindow at most, the
// anchor of each window after the first included).
func eachListed(ctx context.Context, db store.DBTX, filter string, order Sort, size int, fn func([]ListedLock) error) error {
	q := ListQuery{Filter: filter, Sort: order, Rank: 0, Before: 0, After: size}
	var last string // the last row handed to fn
	for {
		page, err := ListLocks(ctx, db, q)
		if err != nil {
			return err
		}
		rows := page.Rows
		if last != "" && len(rows) > 0 && rows[0].Key == last {
			rows = rows[1:] // the anchor: the last row of the window before
		}
		if len(rows) > 0 {
			if err := fn(rows); err != nil {
				return err
			}
		}
		// A window shorter than asked for reached the end of the order;
		// one that gave nothing new cannot move on.
		if len(page.Rows) < q.After || len(rows) == 0 {
			return nil
		}
		last = rows[len(rows)-1].Key
		// The next window starts at the last row (should it be gone, at
		// its rank), and holds size rows after it.
		q.Anchor, q.Rank, q.Counts = last, int(page.AnchorRank)+len(page.Rows)-1, page.Counts
		q.After = min(size+1, MaxWindow)
	}
}
