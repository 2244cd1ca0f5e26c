package hotkeys

import (
	"cmp"
	"slices"
	"time"
)

// Column is what keys are ranked by.
type Column int

const (
	ByWaitTime Column = iota // the total time acquires waited for the key
	ByWaits                  // how many acquires waited (hand-offs and waits given up)
	BySteals                 // expired leases taken over
	ByHandoffs               // grants to a caller that had waited
	ByForces                 // operators' force-expires and force-releases
	columnCount
)

// Columns are every Column, in the order the page shows them.
var Columns = []Column{ByWaitTime, ByWaits, BySteals, ByHandoffs, ByForces}

func (c Column) String() string {
	return [...]string{"total wait", "waits", "steals", "hand-offs", "forces"}[c]
}

// Counts are what a key's events in a window add up to.
type Counts struct {
	WaitTime time.Duration
	Waits    int64
	Steals   int64
	Handoffs int64
	Forces   int64
}

// Value is c's count in column col (WaitTime in milliseconds).
func (c Counts) Value(col Column) int64 {
	switch col {
	case ByWaits:
		return c.Waits
	case BySteals:
		return c.Steals
	case ByHandoffs:
		return c.Handoffs
	case ByForces:
		return c.Forces
	}
	return c.WaitTime.Milliseconds()
}

// hot: anything the page ranks by.
func (c Counts) hot() bool {
	return c.WaitTime > 0 || c.Waits > 0 || c.Steals > 0 || c.Handoffs > 0 || c.Forces > 0
}

// count adds e to c.
func (c *Counts) count(e event) {
	switch e.kind {
	case handedOff:
		c.Handoffs++
		c.Waits++
	case stolen:
		c.Steals++
	case stolenAfterWait:
		c.Steals++
		c.Handoffs++
		c.Waits++
	case gaveUp:
		c.Waits++
	case forced:
		c.Forces++
	default:
		return
	}
	c.WaitTime += time.Duration(e.ms) * time.Millisecond * time.Duration(e.waits())
}

// waits is 1 when e's ms is a wait, 0 when it is a hold.
func (e event) waits() int {
	if e.kind == ended || e.kind == forced {
		return 0
	}
	return 1
}

// Row is one key's counts in the window, and each column's series.
type Row struct {
	Key string
	Counts
	// Series are the window's buckets, oldest first, in each column's
	// units (Value's).
	Series [columnCount][]int64
}

// Ranking is the hot keys of a window.
type Ranking struct {
	Window time.Duration
	// Bucket is the span of each point of a Row's Series.
	Bucket time.Duration
	By     Column
	// Rows are the keys with anything counted, most first by By (ties:
	// the longer total wait, then by key), at most the limit asked.
	Rows []Row
	// Keys counts the keys with anything counted; Total adds up them all.
	Keys     int
	Total    Counts
	Progress Progress
}

// Points is how many buckets a window's series have: ten, so a sparkline
// of each of five columns fits a 120-column terminal.
const Points = 10

// BucketOf is the span of one point of window's series (6s of a minute,
// 90s of 15 minutes, 6m of an hour), whole slices.
func BucketOf(window time.Duration) time.Duration {
	return max(window/Points/sliceLen, 1) * sliceLen
}

// seriesShape is how many points window's series have in buckets of
// bucket, and how many slices each point adds up.
func seriesShape(window, bucket time.Duration) (points int, perPoint int64) {
	return max(int(window/bucket), 1), int64(bucket / sliceLen)
}

// span is a window's slices, ending at now's: the first and the last.
type span struct{ first, last int64 }

func spanOf(now time.Time, window time.Duration) span {
	last := sliceOf(now)
	return span{first: last - int64(window/sliceLen) + 1, last: last}
}

// each calls fn with every event in sp, oldest slice first; t.mu is held.
func (t *Tracker) each(sp span, fn func(no int64, e event)) {
	for no := sp.first; no <= sp.last; no++ {
		s := &t.ring[ringIndex(no)]
		if s.no != no {
			continue
		}
		for _, e := range s.events {
			fn(no, e)
		}
	}
}

// Rank ranks the keys by col over the window that ends at now (the
// database's clock), the first limit of them with their series.
func (t *Tracker) Rank(now time.Time, window time.Duration, col Column, limit int) Ranking {
	t.mu.Lock()
	defer t.mu.Unlock()
	window = min(max(window, sliceLen), Kept)
	r := Ranking{Window: window, Bucket: BucketOf(window), By: col, Progress: t.progress()}
	sp := spanOf(now, window)
	// The keys' counts, by key id, in a buffer kept from call to call:
	// a pass over a million events then allocates nothing per event.
	if len(t.counts) < len(t.keys) {
		t.counts, t.touched, t.rowOf = make([]Counts, len(t.keys)), make([]bool, len(t.keys)), make([]int32, len(t.keys))
	}
	var touched []uint32
	t.each(sp, func(_ int64, e event) {
		if !t.touched[e.key] {
			t.touched[e.key] = true
			touched = append(touched, e.key)
		}
		t.counts[e.key].count(e)
	})
	type ranked struct {
		id uint32
		c  Counts
	}
	all := make([]ranked, 0, len(touched))
	for _, id := range touched {
		c := t.counts[id]
		t.counts[id], t.touched[id] = Counts{}, false
		if c.hot() {
			all = append(all, ranked{id, c})
			r.Total.WaitTime += c.WaitTime
			r.Total.Waits += c.Waits
			r.Total.Steals += c.Steals
			r.Total.Handoffs += c.Handoffs
			r.Total.Forces += c.Forces
		}
	}
	r.Keys = len(all)
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.c.Value(col), a.c.Value(col)), cmp.Compare(b.c.WaitTime, a.c.WaitTime),
			cmp.Compare(t.keys[a.id], t.keys[b.id]))
	})
	all = all[:min(len(all), limit)]
	points, perPoint := seriesShape(window, r.Bucket)
	r.Rows = make([]Row, len(all))
	for i, a := range all {
		t.rowOf[a.id] = int32(i + 1)
		r.Rows[i] = Row{Key: t.keys[a.id], Counts: a.c}
		for c := range r.Rows[i].Series {
			r.Rows[i].Series[c] = make([]int64, points)
		}
	}
	t.each(sp, func(no int64, e event) {
		i := int(t.rowOf[e.key]) - 1
		if i < 0 {
			return
		}
		var one Counts
		one.count(e)
		p := min(int((no-sp.first)/perPoint), points-1)
		for c := range Columns {
			r.Rows[i].Series[c][p] += one.Value(Column(c))
		}
	})
	for _, a := range all {
		t.rowOf[a.id] = 0
	}
	return r
}
