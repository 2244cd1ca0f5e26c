package faults

import (
	"context"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// lagMonitor measures how late this process's goroutines wake up: a timer
// of 5ms that fires 300ms late means the machine (not the locker) delayed
// everything by 300ms. Keepalive timing violations are printed with it.
type lagMonitor struct {
	mu      sync.Mutex
	samples [512]lagSample
	next    int
}

type lagSample struct {
	at  time.Time
	lag time.Duration
}

const lagTick = 5 * time.Millisecond

func (m *lagMonitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		start := time.Now()
		testdb.Pace(lagTick) // what is measured: how late it ends
		now := time.Now()
		m.mu.Lock()
		m.samples[m.next%len(m.samples)] = lagSample{at: now, lag: now.Sub(start) - lagTick}
		m.next++
		m.mu.Unlock()
	}
}

// maxSince is the worst wake-up delay seen after t.
func (m *lagMonitor) maxSince(t time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var worst time.Duration
	for _, s := range m.samples {
		if s.at.After(t) && s.lag > worst {
			worst = s.lag
		}
	}
	return worst
}
