package locker

import "time"

// clock is where a Locker reads the time and waits for it: the send time
// of a grant or renewal, a Keepalive's renew interval and trust window, and
// a waiting Acquire's sleeps. A Locker uses the real clock; the package's
// tests swap in a fake one (export_test.go) to drive renewals and waits
// step by step instead of sleeping. Lease expiry itself is on the database
// clock and is never read from here. Lease.ValidFor reads the real clock (a
// Lease does not know its Locker), so a test on a fake clock does not use it.
type clock interface {
	Now() time.Time
	// Timer returns a channel that receives once d has passed, and a stop
	// function that releases it early.
	Timer(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// since is how long ago t was on l's clock.
func (l *Locker) since(t time.Time) time.Duration { return l.clock.Now().Sub(t) }
