package lockview

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/store"
)

// A column order's window (TTL, token, held for) is found with a pass over
// the table, the ordering read (see Sort). A poll handed the last page's
// Order (ListQuery.Order) takes that read only when it is due, like the
// counts: when it is older than passShare times what it took, or at once
// when the order or filter changed, the selection is no longer in the
// window, or it came within half a side of the window's edge (the console
// asks for a new window then). In between, the poll re-reads the window's
// rows by primary key and lists them as the ordering read found them: every
// row's owner, token, TTL and waiters are as live as on any poll (a lease
// that ended shows as free or expired, in its old place; a row deleted or
// no longer matching the filter drops out), only their order is as old as
// Order.Age says. An ordering read quicker than cheapOrder is taken on
// every poll, so on tables where it costs little the order never ages.

// cheapOrder: an ordering read that took less is not kept.
const cheapOrder = 20 * time.Millisecond

// Order is a column order's window as its last ordering read found it:
// the keys in order, where they stood among the matching rows, and when
// the read was taken and what it cost. It is a comparable value (the keys
// are one string), like the rest of a ListQuery.
type Order struct {
	// TakenAt is the database's clock at the ordering read; Took is how
	// long that read took, as the client saw it.
	TakenAt time.Time
	Took    time.Duration

	keys     string // the window's keys in order, joined by NUL (text never holds one)
	first    int64  // the first key's rank among the matching rows
	last     bool   // the last key ended the order
	matching int64  // the page's matching rows at the read
	sort     Sort
	pattern  string
}

// Age is how old the order was at now (the database's clock).
func (o Order) Age(now time.Time) time.Duration { return now.Sub(o.TakenAt) }

// orderOf is the Order of rows, a fresh window in order s under pattern
// whose first row is at rank first; last says the rows end the order.
func orderOf(s Sort, pattern string, rows []ListedLock, first int64, last bool, matching int64, at time.Time, took time.Duration) Order {
	if !s.byColumn() || len(rows) == 0 {
		return Order{}
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	return Order{TakenAt: at, Took: took, keys: strings.Join(keys, "\x00"), first: first, last: last,
		matching: matching, sort: s, pattern: pattern}
}

// due says whether the window in order s under pattern must be ordered
// afresh at now (the database's clock): never ordered, ordered in another
// order or filter, cheap to order, or older than passShare times what
// ordering took.
func (o Order) due(s Sort, pattern string, now time.Time) bool {
	return o.TakenAt.IsZero() || o.sort != s || o.pattern != pattern || o.Took < cheapOrder ||
		now.Sub(o.TakenAt) >= passShare*o.Took
}

// around is the kept window for an anchor at key with up to before rows
// before it and after from it on: the keys and the rank of the first. ok
// is false when key is not in the window or lies within half a side of an
// edge that does not end the order.
func (o Order) around(key string, before, after int) (keys []string, first int64, ok bool) {
	all := strings.Split(o.keys, "\x00")
	i := slices.Index(all, key)
	if i < 0 || (o.first > 0 && i < (before+1)/2) || (!o.last && len(all)-i < (after+1)/2) {
		return nil, 0, false
	}
	lo, hi := max(0, i-before), min(len(all), i+after)
	return all[lo:hi], o.first + int64(lo), true
}

// end is the rank after the window's last key.
func (o Order) end() int64 { return o.first + int64(strings.Count(o.keys, "\x00")+1) }

// keptWindowSQL re-reads the window's rows by primary key (a lookup per
// key, never a pass) in the kept order: $1 the keys in order, $2 pattern.
const keptWindowSQL = `
WITH x AS (
    SELECT k.lock_key, 1 AS side, k.pos FROM unnest($1::text[]) WITH ORDINALITY AS k(lock_key, pos))` + windowTail + `
WHERE ` + matchCond + `
ORDER BY x.pos`

// keptWindow fills page with the rows of keys (the kept window around
// anchor, the first at rank first), as they are now, in the kept order.
// The match count is the newer of the counts' and the ordering read's.
func keptWindow(ctx context.Context, db store.DBTX, page Page, q ListQuery, pattern string, keys []string, first int64, anchor string) (Page, error) {
	rows, err := collect[windowRow](db.Query(ctx, keptWindowSQL, keys, pattern))
	if err != nil {
		return Page{}, err
	}
	page.Rows = make([]ListedLock, len(rows))
	for i, r := range rows {
		page.Rows[i] = r.ListedLock
		if r.Key == anchor || (page.Anchor < 0 && i == len(rows)-1) { // the anchor, else the last row
			page.Anchor, page.AnchorRank = i, first+r.Pos-1
		}
	}
	page.Matching = q.Order.matching
	if page.Counts.TakenAt.After(q.Order.TakenAt) {
		page.Matching = max(page.Counts.Matching, q.Order.end())
	}
	if q.Near.covers(q.Sort, pattern) {
		page.Span = q.Near // for the next ordering read
	}
	page.Order = q.Order
	return page, nil
}
