package lockview

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// Sort is an order the console can list locks in. Each is read as a window
// around the selection, never by sorting the table. By key the window comes
// through the primary key, so a poll costs the same at row 10 and at row
// 90,000. The other orders have no index of their own (see schema.sql: an
// index on a lease column would make every grant a non-HOT update), so each
// side of their window is one pass over the table into a top-N sort that
// holds only the window's rows; with an operator's index on the column (see
// docs/operations.md) the planner reads it through that instead, from the same SQL.
// Handed the last page's Span (ListQuery.Near), as the console's polls are,
// both sides come from one pass while the selection stays near where it was;
// handed its Order too, that pass is taken only when due, and the polls in
// between read the window's rows by primary key (see Order).
type Sort string

const (
	SortKey     Sort = "key"     // lock_key ascending (primary key)
	SortTTL     Sort = "ttl"     // soonest expiry first: expired rows, then expiring ones; free rows last, by key
	SortToken   Sort = "token"   // newest grant (largest fencing token) first
	SortHeldFor Sort = "held"    // longest held first (acquired_at ascending)
	SortWaiters Sort = "waiters" // most waiters first, then longest wait, then key
)

// Sorts lists the orders in the console's cycle order.
var Sorts = []Sort{SortKey, SortTTL, SortToken, SortHeldFor, SortWaiters}

// byColumn says whether s orders by a lease column (TTL, token, held for):
// the orders without an index of their own.
func (s Sort) byColumn() bool {
	_, ok := columnOrders[s]
	return ok
}

// sortValue is a's value in the sort column of a column order, nil in the
// others.
func sortValue(s Sort, a anchorRow) any {
	if o, ok := columnOrders[s]; ok {
		return o.value(a)
	}
	return nil
}

// ListQuery asks for a window of the lock table around one row.
type ListQuery struct {
	// Filter keeps rows whose key or owner contains it, case-insensitively.
	// % and _ match themselves.
	Filter string
	Sort   Sort
	// Anchor is the key the window is centred on (the console's selection).
	// When it is empty, gone or filtered out, the row at Rank is used.
	Anchor string
	// Rank is the fallback position (0-based, in Sort order among matching
	// rows); -1 means the last row. Positions past the end give the last row.
	Rank int
	// Before and After bound the window: up to Before rows before the
	// anchor and up to After rows from the anchor on (the anchor included).
	Before, After int
	// Near is the previous page's Span: a hint that makes a poll of the
	// same order and filter cheaper (see Span). The zero Span is no hint.
	Near Span
	// Counts are an earlier page's (Page.Counts), reused instead of
	// counting the table again, which costs a pass over it, until they are
	// due (see passShare) or the filter or order changed. While they are reused the
	// anchor's rank is Rank, which the caller keeps as its selection moves
	// (the console does), corrected by what the window shows at either end
	// of the order. The zero Counts are counted afresh.
	Counts Counts
	// Order is an earlier page's (Page.Order): in a column order, its
	// window stands in for the ordering read until that is due (see
	// Order), so the poll reads the window's rows by primary key. The zero
	// Order is read afresh.
	Order Order
}

// ListedLock is a lock row as the console lists it: with its live waiters.
type ListedLock struct {
	Lock
	// Waiters counts live waiter records (seen_until in the future).
	Waiters int64 `db:"waiters"`
	// OldestWait is how long the longest waiter has waited (database clock).
	OldestWait time.Duration `db:"oldest_wait"`
	// OldestSince is when the longest waiter started waiting; nil without waiters.
	OldestSince *time.Time `db:"oldest_since"`
}

// Totals counts the whole table by state, whatever the filter.
type Totals struct {
	All      int64 `db:"total"`
	Held     int64 `db:"held"` // unexpired, unreleased (Expiring included)
	Expiring int64 `db:"expiring"`
	Expired  int64 `db:"expired"`
	Delayed  int64 `db:"delayed"` // in a lock-delay, or kept until an at-least point (counted in neither Expired nor Free)
	Free     int64 `db:"free"`
	// Waiting counts live waiters, on WaitedKeys distinct keys.
	Waiting    int64 `db:"waiting"`
	WaitedKeys int64 `db:"waited_keys"`
}

// Page is one poll's answer: a window of rows and the numbers around it.
type Page struct {
	Rows []ListedLock
	// Anchor is the index in Rows of the anchor row (-1 when Rows is empty).
	Anchor int
	// AnchorRank is the anchor row's position among matching rows.
	AnchorRank int64
	// Matching counts rows that pass the filter.
	Matching int64
	Totals   Totals
	// InRecovery is pg_is_in_recovery(): the server is a standby and
	// refuses writes.
	InRecovery    bool
	ServerVersion string
	DBNow         time.Time
	// Span is where Rows lie in the order, for the next poll's ListQuery.Near.
	Span Span
	// Reference: the table is the reference service's, not migrated
	// (ListReferenceLocks). lockctl can only show it; `lockctl migrate` adopts it.
	Reference bool
	// Counts are where Totals (but for the waiters, read every poll) and
	// Matching come from, and when they were taken: hand them back as
	// ListQuery.Counts.
	Counts Counts
	// Order is the column order's window as last read (zero in the other
	// orders): hand it back as ListQuery.Order. Its Age says how old the
	// order of Rows is.
	Order Order
}

// likePattern turns a filter into an ILIKE pattern matching it anywhere,
// with \, % and _ escaped so they match themselves. "" stays "".
func likePattern(filter string) string {
	if filter == "" {
		return ""
	}
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(filter) + "%"
}

// matchCond is the filter; $2 is likePattern's result ("" matches all).
const matchCond = `($2 = '' OR l.lock_key ILIKE $2 OR l.owner_id ILIKE $2)`

// keyMatch is matchCond over the lock table itself (distributed_lock l),
// whose rows are leases: a key's own row is at slot 0, its other rows are
// its holders' (store/sql/migrations). The orders read the table, whose
// columns an operator's index may be built on; the rows shown come from
// the readers' view (windowTail).
const keyMatch = `l.slot = 0 AND ` + matchCond

// liveWaitersCTE aggregates live waiters per key. The waiter table is small
// (one row per blocked Acquire), so reading all of it is cheap.
const liveWaitersCTE = `w AS (
    SELECT w.lock_key, count(*) AS n, min(w.waiting_since) AS since
    FROM distributed_lock_waiter w
    WHERE w.seen_until > distributed_lock_now()
    GROUP BY w.lock_key)`

// anchorColumns are a row's values in every sort order. since is NULL for a
// key without live waiters (it sorts after all waited keys).
const anchorColumns = `l.lock_key, l.expires_at, l.released_at, l.fence_token, l.acquired_at,
    coalesce(w.n, 0) AS n, w.since`

// anchorSQL reads the anchor's sort values, if it exists and matches.
// $1 key, $2 pattern.
const anchorSQL = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM distributed_lock l LEFT JOIN w ON w.lock_key = l.lock_key
WHERE l.lock_key = $1 AND ` + keyMatch

type anchorRow struct {
	Key        string     `db:"lock_key"`
	ExpiresAt  time.Time  `db:"expires_at"`
	ReleasedAt *time.Time `db:"released_at"`
	Token      int64      `db:"fence_token"`
	AcquiredAt time.Time  `db:"acquired_at"`
	N          int64      `db:"n"`
	Since      *time.Time `db:"since"`
}

// MaxWindow bounds Before and After.
const MaxWindow = 1000

// checkQuery refuses a sort that known has no statement for and a window
// outside 0..MaxWindow rows before and 1..MaxWindow from the anchor on.
func checkQuery(q ListQuery, known map[Sort]string) error {
	if _, ok := known[q.Sort]; !ok {
		return fmt.Errorf("lockview: unknown sort %q", q.Sort)
	}
	if q.Before < 0 || q.After < 1 || q.Before > MaxWindow || q.After > MaxWindow {
		return fmt.Errorf("lockview: window %d before, %d after: out of range", q.Before, q.After)
	}
	return nil
}

// ListLocks reads the window of rows q asks for, the table's totals and the
// server's role. The window is read as Sort describes, never by sorting the
// table; the counts cost one pass over the table and are taken only when
// q.Counts are due (ListQuery.Counts), and on the occasions that position
// the window by rank (no anchor: first poll, Home, End, the selection gone).
// Likewise a column order's window is ordered only when q.Order is due, and
// re-read by primary key in between (Order). Its statements run one after
// another, each with its own snapshot unless db is a transaction: under
// concurrent writes the counts and the rows can be a few milliseconds
// apart, reused counts as old as Counts.Age says, and a kept order as old
// as Order.Age says.
func ListLocks(ctx context.Context, db store.DBTX, q ListQuery) (Page, error) {
	if err := checkQuery(q, windowSQL); err != nil {
		return Page{}, err
	}
	pattern := likePattern(q.Filter)
	var anchor *anchorRow
	if q.Anchor != "" {
		a, found, err := maybeOne[anchorRow](db.Query(ctx, anchorSQL, q.Anchor, pattern))
		if err != nil {
			return Page{}, err
		}
		if found {
			anchor = &a
		}
	}
	st, _, err := maybeOne[pollRow](db.Query(ctx, pollSQL, pollArgs(anchor, pattern)...))
	if err != nil {
		return Page{}, err
	}
	counts, scanRank, fresh := q.Counts, int64(0), false
	if anchor == nil || counts.due(q.Sort, pattern, st.DBNow) {
		if counts, scanRank, err = counted(ctx, db, q.Sort, anchor, pattern); err != nil {
			return Page{}, err
		}
		fresh = true
	}
	page := Page{Anchor: -1, Matching: counts.Matching, InRecovery: st.InRecovery,
		ServerVersion: st.ServerVersion, DBNow: st.DBNow, Counts: counts,
		Totals: Totals{All: counts.All, Held: counts.Held, Expiring: counts.Expiring, Expired: counts.Expired,
			Delayed: counts.Delayed, Free: counts.Free, Waiting: st.Waiting, WaitedKeys: st.WaitedKeys}}
	if counts.Matching == 0 && fresh {
		return page, nil
	}
	if anchor != nil && !q.Order.due(q.Sort, pattern, st.DBNow) {
		if keys, first, ok := q.Order.around(anchor.Key, q.Before, q.After); ok {
			return keptWindow(ctx, db, page, q, pattern, keys, first, anchor.Key)
		}
	}
	var rank int64
	switch {
	case anchor == nil:
		rank = int64(q.Rank)
		if rank < 0 || rank >= counts.Matching {
			rank = counts.Matching - 1
		}
		a, found, err := nthAnchor(ctx, db, q.Sort, pattern, rank, counts.Matching, st.MatchingWaited)
		if err != nil {
			return Page{}, err
		}
		if !found { // the table shrank between the two statements
			return page, nil
		}
		anchor = &a
	case q.Sort == SortWaiters && anchor.N > 0:
		rank = st.WaitedRank // from the waiter table: exact on every poll
	case !fresh:
		rank = min(max(int64(q.Rank), 0), max(counts.Matching-1, 0))
	case q.Sort != SortWaiters:
		rank = scanRank
	default:
		rank = st.MatchingWaited + scanRank - st.WaitedKeyRank
	}
	start := time.Now()
	rows, err := readWindow(ctx, db, q, pattern, *anchor, rank, counts.Matching)
	if err != nil {
		return Page{}, err
	}
	took := time.Since(start)
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Side != rows[j].Side {
			return rows[i].Side < rows[j].Side
		}
		if rows[i].Side == 0 { // before the anchor: farthest first
			return rows[i].Pos > rows[j].Pos
		}
		return rows[i].Pos < rows[j].Pos
	})
	if !fresh {
		rank, page.Matching = reconcile(rows, q, rank, counts.Matching)
	}
	page.Rows = make([]ListedLock, len(rows))
	for i, r := range rows {
		page.Rows[i] = r.ListedLock
		if r.Side == 1 && r.Pos == 1 {
			page.Anchor = i
		}
	}
	if page.Anchor < 0 && len(page.Rows) > 0 { // anchor vanished between statements
		page.Anchor = len(page.Rows) - 1
	}
	page.AnchorRank = rank
	page.Span = spanOf(q.Sort, pattern, page.Rows)
	page.Order = orderOf(q.Sort, pattern, page.Rows, rank-int64(page.Anchor), onSide(rows, 1) < q.After,
		page.Matching, st.DBNow, took)
	return page, nil
}

// reconcile corrects a reused rank and match count by what the window
// shows: a side shorter than asked for reached that end of the order, so
// the rows before the anchor are all there are, or the rows from it on end
// the order; and there are at least as many rows as the window holds.
func reconcile(rows []windowRow, q ListQuery, rank, matching int64) (int64, int64) {
	before, after := int64(onSide(rows, 0)), int64(onSide(rows, 1))
	if before < int64(q.Before) {
		rank = before
	}
	rank = max(rank, before)
	if after < int64(q.After) {
		return rank, rank + after
	}
	return rank, max(matching, rank+after)
}

// readWindow reads the rows around anchor a, which is at rank among
// matching rows. With a Span of this order and filter it reads the rows
// from the span's first row up to its last row's value first (one pass); a
// side holding fewer rows than the totals say lie there is then read again
// the full way, alone (a LIMIT of 0 reads nothing for the other side). The
// totals come from the statement before, so a row that moved in between
// costs at worst that second read, or leaves a side one row short until
// the next poll.
func readWindow(ctx context.Context, db store.DBTX, q ListQuery, pattern string, a anchorRow, rank, matching int64) ([]windowRow, error) {
	if !q.Near.covers(q.Sort, pattern) {
		return collect[windowRow](db.Query(ctx, windowSQL[q.Sort], windowArgs(q.Sort, a, pattern, q.Before, q.After)...))
	}
	rows, err := collect[windowRow](db.Query(ctx, nearSQL[q.Sort], nearArgs(q.Sort, a, pattern, q.Before, q.After, q.Near)...))
	if err != nil {
		return nil, err
	}
	before, after := q.Before, q.After
	if int64(onSide(rows, 0)) >= min(int64(q.Before), rank) {
		before = 0
	} else {
		rows = dropSide(rows, 0)
	}
	if int64(onSide(rows, 1)) >= min(int64(q.After), matching-rank) {
		after = 0
	} else {
		rows = dropSide(rows, 1)
	}
	if before == 0 && after == 0 {
		return rows, nil
	}
	rest, err := collect[windowRow](db.Query(ctx, windowSQL[q.Sort], windowArgs(q.Sort, a, pattern, before, after)...))
	return append(rows, rest...), err
}

// maybeOne collects at most one row; found is false when there is none.
func maybeOne[T any](rows pgx.Rows, err error) (v T, found bool, _ error) {
	if err != nil {
		return v, false, store.Interpret(err)
	}
	v, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, store.Interpret(err)
	}
	return v, true, nil
}
