package locker

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Sentinel errors; branch on them with errors.Is. Database failures are
// reported as the store package's errors (store.ErrNotMigrated,
// store.ErrReadOnly, store.ErrPermissionDenied, store.ErrUnavailable, …).
var (
	// ErrHeld: another owner holds an unexpired lease on the key. The error
	// is a *HeldError saying who and until when.
	ErrHeld = errors.New("held by another owner")
	// ErrNotHeld: the lease named is not the current one (lost to a steal or
	// a force action, released, expired, or wrong owner or token). The error
	// is a *NotHeldError carrying the current row, if any.
	ErrNotHeld = errors.New("not held")
	// ErrLeaseLost is the cause a Keepalive cancels its context with.
	ErrLeaseLost = errors.New("lease lost")
	// ErrInvalidKey, ErrInvalidOwner and ErrInvalidTTL report bad arguments
	// before anything is sent to the database.
	ErrInvalidKey   = errors.New("invalid lock key")
	ErrInvalidOwner = errors.New("invalid owner id")
	ErrInvalidTTL   = errors.New("invalid TTL")
)

// HeldError says who holds a key. It matches ErrHeld.
type HeldError struct {
	Key       string
	Owner     string
	Token     int64
	ExpiresAt time.Time     // database clock
	Remaining time.Duration // expires_at minus the database's now when read
}

func (e *HeldError) Error() string {
	if e.Remaining <= 0 {
		// The row was locked by another transaction at every attempt: a
		// grant or release in progress, or a fenced write of the holder.
		return fmt.Sprintf("locker: %q is busy: another transaction is changing it (last seen: %q, token %d)",
			e.Key, e.Owner, e.Token)
	}
	return fmt.Sprintf("locker: %q is held by %q (token %d) for another %s",
		e.Key, e.Owner, e.Token, e.Remaining.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// NotHeldError says why a lease is not current. It matches ErrNotHeld.
type NotHeldError struct {
	Key   string
	Owner string // the caller's owner ("" for operator actions)
	Token int64  // the token the caller named
	// Current is the key's row now, nil when it has none.
	Current *store.Lock
}

func (e *NotHeldError) Error() string {
	return fmt.Sprintf("locker: token %d of %q is not the current lease: %s", e.Token, e.Key, e.reason())
}

func (e *NotHeldError) reason() string {
	c := e.Current
	switch {
	case c == nil:
		return "the key has no lock row"
	case c.Token != e.Token:
		return fmt.Sprintf("now token %d of %q (%s)", c.Token, c.Owner, c.State())
	case c.ReleasedAt != nil:
		return "it was released"
	case c.Remaining <= 0:
		return "it expired"
	case e.Owner != "" && c.Owner != e.Owner:
		return fmt.Sprintf("it belongs to %q", c.Owner)
	default:
		return "it changed"
	}
}

// Is makes errors.Is(err, ErrNotHeld) true.
func (e *NotHeldError) Is(target error) bool { return target == ErrNotHeld }
