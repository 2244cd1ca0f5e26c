package history

import (
	"errors"

	"github.com/lockctl/lockctl/locker"
)

// ResultOf classifies what a lock call (a grant, Renew, Release or
// ForceExpire) returned, and gives the error's text where the outcome is
// unknown. Held comes only from grants and GaveUp only from a waiting
// Acquire, so one classifier serves every call.
func ResultOf(err error) (Result, string) {
	switch {
	case err == nil:
		return OK, ""
	case gaveUpWaiting(err):
		return GaveUp, ""
	case errors.Is(err, locker.ErrHeld) && !endedWaiting(err):
		return Held, ""
	case errors.Is(err, locker.ErrNotHeld):
		return NotHeld, ""
	default:
		// A killed backend, a restart or a cancelled statement: the call
		// may have committed without its reply arriving.
		return Unknown, err.Error()
	}
}

// GrantResultOf is ResultOf for an attempt (Acquire) and Acquire, except that
// ErrNotHeld is Unknown: from a grant it means a lease handed down the
// queue was lost before its claim, so the grant itself was made.
func GrantResultOf(err error) (Result, string) {
	res, msg := ResultOf(err)
	if res == NotHeld {
		return Unknown, err.Error()
	}
	return res, msg
}

// gaveUpWaiting reports whether a waiting Acquire's context ended while it
// was queued and before any grant to it: a hand-off that may have been in
// flight leaves its outcome unknown.
func gaveUpWaiting(err error) bool {
	var gaveUp *locker.Error
	return endedWaiting(err) && errors.As(err, &gaveUp) && !gaveUp.PassedOn && !gaveUp.Unsure
}

// endedWaiting reports whether err is a wait's whose context ended first
// (a lease may have been handed to it meanwhile).
func endedWaiting(err error) bool {
	var e *locker.Error
	return errors.As(err, &e) && e.Kind == locker.ErrHeld && e.Err != nil
}

// Granted records lease as what a successful Grant returned.
func (op *Op) Granted(lease locker.Lease) {
	op.Token, op.Outcome = lease.Token, string(lease.Outcome)
	op.ExpiresAt, op.TTL = lease.ExpiresAt, lease.TTL
}

// Renewed records the expiry a successful Renew returned.
func (op *Op) Renewed(lease locker.Lease) {
	op.ExpiresAt, op.TTL = lease.ExpiresAt, lease.TTL
}
