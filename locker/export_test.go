package locker

// Clock is the Locker's clock (see clock.go), for the external tests.
type Clock = clock

// SetClock makes l read the time from c and wait on it. Set it before l is
// used.
func SetClock(l *Locker, c Clock) { l.clock = c }
