package tui

import (
	"time"

	"github.com/lockctl/lockctl/internal/hotkeys"
)

// fixtureHotKeys is a 15-minute ranking by total wait: a queue that
// waited most, a key stolen and handed off, one force-expired.
func fixtureHotKeys() *hotkeys.Ranking {
	series := func(points ...int64) []int64 { return append(points, make([]int64, hotkeys.Points-len(points))...) }
	row := func(key string, c hotkeys.Counts, wait, waits, steals, handoffs, forces []int64) hotkeys.Row {
		return hotkeys.Row{Key: key, Counts: c, Series: [5][]int64{series(wait...), series(waits...), series(steals...),
			series(handoffs...), series(forces...)}}
	}
	rows := []hotkeys.Row{
		row("billing:nightly", hotkeys.Counts{WaitTime: 754 * time.Second, Waits: 212, Handoffs: 208},
			[]int64{12000, 40000, 90000, 160000, 200000, 150000, 60000, 30000, 8000, 4000},
			[]int64{4, 10, 22, 40, 50, 41, 25, 12, 5, 3}, nil, []int64{4, 10, 21, 39, 49, 40, 25, 12, 5, 3}, nil),
		row("deploy:prod", hotkeys.Counts{WaitTime: 95 * time.Second, Waits: 9, Steals: 2, Handoffs: 8},
			[]int64{0, 0, 0, 45000, 50000}, []int64{0, 0, 0, 4, 5}, []int64{0, 0, 0, 1, 1}, []int64{0, 0, 0, 4, 4}, nil),
		row("tenant-42:orders:export", hotkeys.Counts{WaitTime: 2300 * time.Millisecond, Waits: 31, Handoffs: 31},
			[]int64{200, 300, 200, 300, 200, 300, 200, 300, 200, 100}, []int64{3, 3, 3, 3, 3, 3, 3, 3, 3, 4}, nil,
			[]int64{3, 3, 3, 3, 3, 3, 3, 3, 3, 4}, nil),
		row("report:weekly", hotkeys.Counts{Forces: 1, Steals: 1}, nil, nil, []int64{0, 0, 0, 0, 0, 0, 0, 1}, nil,
			[]int64{0, 0, 0, 0, 0, 0, 1}),
	}
	return &hotkeys.Ranking{Window: 15 * time.Minute, Bucket: 90 * time.Second, By: hotkeys.ByWaitTime, Rows: rows, Keys: 4,
		Total:    hotkeys.Counts{WaitTime: 851300 * time.Millisecond, Waits: 252, Steals: 3, Handoffs: 247, Forces: 1},
		Progress: hotkeys.Progress{CaughtUp: true}}
}

// fixtureTimes are billing:nightly's waits and holds over 15 minutes.
func fixtureTimes() *hotkeys.Times {
	ms := func(xs ...int64) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	return &hotkeys.Times{Window: 15 * time.Minute, Bucket: 90 * time.Second, Waits: 214, Holds: 210,
		WaitP50: 2100 * time.Millisecond, WaitP99: 9800 * time.Millisecond, HoldP50: 3900 * time.Millisecond, HoldP99: 4800 * time.Millisecond,
		WaitSeries: ms(3000, 4000, 6000, 8000, 9800, 9000, 5000, 3000, 1000, 800),
		HoldSeries: ms(4100, 4200, 4300, 4800, 4700, 4500, 4400, 4300, 4200, 4100),
		Progress:   hotkeys.Progress{CaughtUp: true}}
}
