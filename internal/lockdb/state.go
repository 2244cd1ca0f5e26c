package lockdb

import "time"

// State is what a lock row means at the time it was read (locker.State).
type State string

const (
	StateHeld     State = "held"
	StateExpiring State = "expiring" // held, with less than a fifth of its TTL (and under 10s) left
	StateExpired  State = "expired"  // not released, past expires_at: the next acquirer steals it
	StateFree     State = "free"     // released; the row's owner is the last holder
)

// StateOf classifies a row from its released_at, its remaining time (on the
// database's clock when it was read) and its TTL. Expiring is a display
// hint: less than 20% of the TTL, and under 10s, is left.
func StateOf(releasedAt *time.Time, remaining, ttl time.Duration) State {
	switch {
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
