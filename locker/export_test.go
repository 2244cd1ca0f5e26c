package locker

import "github.com/jackc/pgx/v5/pgconn"

// Clock is the Locker's clock (see clock.go), for the external tests.
type Clock = clock

// SetClock makes l read the time from c and wait on it. Set it before l is
// used.
func SetClock(l *Locker, c Clock) { l.clock = c }

// OnHeard makes n call f with every notification its LISTEN connection
// receives. Set it before n runs.
func OnHeard(n *Notifier, f func(*pgconn.Notification)) { n.heard = f }

// DeadlockCheck is how long after it queued a waiter checks for a deadlock.
const DeadlockCheck = deadlockCheck

// WakeChannel is the channel n's waiters are woken on.
func WakeChannel(n *Notifier) string { return n.channel }
