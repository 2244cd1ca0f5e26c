package lockdb

import "time"

// State is what a lock row means at the time it was read (LockInfo.State):
// one of the constants below, whose text is what the CLI prints.
type State string

const (
	StateHeld     State = "held"
	StateExpiring State = "expiring" // held, with less than a fifth of its TTL (and under 10s) left
	StateExpired  State = "expired"  // not released, past expires_at: the next acquirer steals it
	StateFree     State = "free"     // released; the row's owner is the last holder
	// Delayed: nobody holds it, but its last lease ended without its
	// holder's release (expired, force-expired, force-released) and its
	// lock-delay still runs: nobody is granted it until delay_until.
	StateDelayed State = "delayed"
	// Kept: its holder released it before the at-least point its hold
	// asked for (locker.Request.AtLeast): nobody is granted it until then
	// (LockInfo.KeptUntil).
	StateKept State = "kept"
)

// StateOf classifies a row from its released_at, whether a release keeps
// it until its hold's at-least point (kept_until as read, set only then),
// whether it is in its lock-delay (delay_until as read, set only then),
// its remaining time (on the database's clock when it was read) and its
// TTL. Expiring is a display hint: less than 20% of the TTL, and under
// 10s, is left.
func StateOf(releasedAt *time.Time, kept, delayed bool, remaining, ttl time.Duration) State {
	switch {
	case kept:
		return StateKept
	case delayed:
		return StateDelayed
	case releasedAt != nil:
		return StateFree
	case remaining <= 0:
		return StateExpired
	case remaining < ttl/5 && remaining < 10*time.Second:
		return StateExpiring
	default:
		return StateHeld
	}
}
