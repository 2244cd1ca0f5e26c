package locker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// fakeClock is a clock that moves only when the test advances it. A
// Keepalive or a waiting Acquire on it sleeps on its timers, so a test can
// see how long it chose to sleep and wake it exactly then: renewals and
// trust windows of many seconds run in milliseconds.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{} // pending, not yet fired or stopped
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now(), timers: map[*fakeTimer]struct{}{}}
}

// clockedLocker is newLocker on clk.
func clockedLocker(t *testing.T, cfg locker.Config, clk *fakeClock) *locker.Locker {
	t.Helper()
	lk := testdb.Locker(t, cfg)
	locker.SetClock(lk, clk)
	return lk
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch, func() {}
	}
	ft := &fakeTimer{at: c.now.Add(d), ch: ch}
	c.timers[ft] = struct{}{}
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.timers, ft)
	}
}

// Advance moves the clock d forward and fires the timers due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for ft := range c.timers {
		if !ft.at.After(c.now) {
			ft.ch <- c.now
			delete(c.timers, ft)
		}
	}
}

// next is how long until the earliest pending timer fires; ok is false
// when none is pending.
func (c *fakeClock) next() (d time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ft := range c.timers {
		if left := ft.at.Sub(c.now); !ok || left < d {
			d, ok = left, true
		}
	}
	return d, ok
}

// waitTimer waits until the code under test sleeps on the clock (a timer is
// pending) and returns how long it chose to sleep.
func (c *fakeClock) waitTimer(t *testing.T) time.Duration {
	t.Helper()
	var d time.Duration
	testdb.Eventually(t, 10*time.Second, "a sleep on the fake clock", func() bool {
		var ok bool
		d, ok = c.next()
		return ok
	})
	return d
}

// waitTimerOrEnd is waitTimer for a sleeper that may end instead of
// sleeping again: ended is true once ctx is done.
func (c *fakeClock) waitTimerOrEnd(t *testing.T, ctx context.Context) (d time.Duration, ended bool) {
	t.Helper()
	testdb.Eventually(t, 10*time.Second, "a sleep on the fake clock, or the end", func() bool {
		var ok bool
		d, ok = c.next()
		return ok || ctx.Err() != nil
	})
	return d, ctx.Err() != nil
}
