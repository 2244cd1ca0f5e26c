package hotkeys

import (
	"math"
	"slices"
	"time"
)

// Times are one key's waits and holds in a window: how many, their
// median and 99th percentile, and the 99th percentile of each bucket.
type Times struct {
	Window, Bucket time.Duration
	// Waits counts the key's acquires that ended in the window, granted
	// (a grant at the first try as a wait of 0) or given up; Holds its
	// leases that ended, whose hold was measured.
	Waits, Holds     int
	WaitP50, WaitP99 time.Duration
	HoldP50, HoldP99 time.Duration
	// WaitSeries and HoldSeries are each bucket's 99th percentile, oldest
	// first (0 in a bucket without any).
	WaitSeries, HoldSeries []time.Duration
	Progress               Progress
}

// KeyTimes are key's waits and holds over the window that ends at now
// (the database's clock).
func (t *Tracker) KeyTimes(now time.Time, window time.Duration, key string) Times {
	t.mu.Lock()
	defer t.mu.Unlock()
	window = min(max(window, sliceLen), Kept)
	out := Times{Window: window, Bucket: BucketOf(window), Progress: t.progress()}
	points, perPoint := seriesShape(window, out.Bucket)
	waits, holds := make([][]uint32, points), make([][]uint32, points)
	if id, ok := t.ids[key]; ok {
		sp := spanOf(now, window)
		t.each(sp, func(no int64, e event) {
			if e.key != id {
				return
			}
			p := min(int((no-sp.first)/perPoint), points-1)
			switch {
			case e.waits() == 1:
				waits[p] = append(waits[p], e.ms)
			case e.ms != noHold:
				holds[p] = append(holds[p], e.ms)
			}
		})
	}
	var allWaits, allHolds []uint32
	out.WaitSeries, out.HoldSeries = make([]time.Duration, points), make([]time.Duration, points)
	for p := range points {
		out.WaitSeries[p] = percentile(waits[p], 0.99)
		out.HoldSeries[p] = percentile(holds[p], 0.99)
		allWaits, allHolds = append(allWaits, waits[p]...), append(allHolds, holds[p]...)
	}
	out.Waits, out.Holds = len(allWaits), len(allHolds)
	out.WaitP50, out.WaitP99 = percentile(allWaits, 0.5), percentile(allWaits, 0.99)
	out.HoldP50, out.HoldP99 = percentile(allHolds, 0.5), percentile(allHolds, 0.99)
	return out
}

// percentile is the nearest-rank q-quantile of ms (sorted in place), as a
// duration; 0 of none.
func percentile(ms []uint32, q float64) time.Duration {
	if len(ms) == 0 {
		return 0
	}
	slices.Sort(ms)
	i := int(math.Ceil(q*float64(len(ms)))) - 1
	return time.Duration(ms[min(max(i, 0), len(ms)-1)]) * time.Millisecond
}
