package locker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Sentinel errors; branch on them with errors.Is.
var (
	// ErrHeld: held by another owner, or kept (lock-delay, AtLeast, queue).
	ErrHeld = errors.New("held by another owner")
	// ErrNotHeld: the lease named is not current (lost, released, expired, another's).
	ErrNotHeld = errors.New("not held")
	// ErrQueueLost: a waiter's record lapsed, or a hand-off ran out unclaimed.
	ErrQueueLost = errors.New("lost its place in the queue")
	// ErrLeaseLost: a Keepalive lost a lease.
	ErrLeaseLost = errors.New("lease lost")
	// ErrDeadlock: a wait was refused: it would close a cycle of waits.
	ErrDeadlock = errors.New("deadlock")
	// ErrInvalid: a bad argument, refused before anything was sent.
	ErrInvalid = lockdb.ErrInvalid
	// ErrTooLarge: metadata or a detail over 8 KiB of JSON.
	ErrTooLarge = lockdb.ErrTooLarge
)

// The ErrInvalid errors of each argument.
var (
	errInvalidKeys      = lockdb.Invalid("key set")
	errInvalidTTL       = lockdb.Invalid("TTL")
	errInvalidLockDelay = lockdb.Invalid("lock-delay")
	errInvalidAtLeast   = lockdb.Invalid("at-least")
	errInvalidPermits   = lockdb.Invalid("permits")
	errInvalidMode      = lockdb.Invalid("mode")
)

// Database errors: a driver error is mapped to one of these (and stays
// wrapped for detail), so callers can branch on what it means rather than
// on a SQLSTATE. Every package of lockctl returns these same values.
var (
	// ErrNotMigrated: the lock tables are missing, or not visible.
	ErrNotMigrated = lockdb.ErrNotMigrated
	// ErrReadOnly: a standby, or a read-only transaction.
	ErrReadOnly = lockdb.ErrReadOnly
	// ErrPermissionDenied: the role lacks a grant.
	ErrPermissionDenied = lockdb.ErrPermissionDenied
	// ErrStatementTimeout: statement_timeout or a cancel ended it.
	ErrStatementTimeout = lockdb.ErrStatementTimeout
	// ErrUnavailable: the database could not be reached, or the
	// connection broke mid-statement (a write's outcome is unknown).
	ErrUnavailable = lockdb.ErrUnavailable
	// ErrSchemaNewer: a newer lockctl migrated the schema.
	ErrSchemaNewer = lockdb.ErrSchemaNewer
)

// Error is the error of every refusal and loss: errors.As(err, &e) with
// e *locker.Error reads what the database said, and errors.Is(err, Kind)
// branches on what happened. Which fields are set depends on Kind.
type Error struct {
	// Kind is ErrHeld (refused; or a wait that ended first, Err being
	// ctx's error), ErrNotHeld, ErrDeadlock or ErrLeaseLost.
	Kind error
	// Key, Owner and Token: the key (of several, the first), and its
	// holder's lease (ErrHeld: the last holder's when Queued or delayed),
	// the lease named (ErrNotHeld), or the refused owner (ErrDeadlock).
	Key, Owner string
	Token      int64
	ExpiresAt  time.Time     // when the holder's lease ends (database clock)
	Remaining  time.Duration // how long it still ran when read
	Queued     bool          // free, but promised to the waiters queued for it
	// QueueLength waiters; the caller's Position (1: the head) if queued.
	QueueLength, Position int
	DelayUntil            *time.Time    // the end of the key's lock-delay (database clock)
	DelayLeft             time.Duration // how long the lock-delay still ran
	// Mode, Permits and Holders: how the key is held, when a shared or
	// permit request was refused; Conflict: in another mode or permits.
	Mode             string
	Permits, Holders int
	Conflict         bool
	// Waited: how long a wait that ended lasted; PassedOn: a lease handed
	// to it then was passed on; Unsure: one may lapse unclaimed.
	Waited           time.Duration
	PassedOn, Unsure bool
	Current          *lockdb.LockInfo // the key's row (ErrNotHeld; nil: none)
	// Keys and Cycle (ErrDeadlock): the keys waited for, and the cycle the
	// wait would close, its own first: each Owner waits for its Key, held
	// or queued ahead for by the next step's Owner.
	Keys   []string
	Cycle  []DeadlockStep
	Reason string    // why a lease was lost (ErrLeaseLost)
	At     time.Time // when its Keepalive stopped trusting it
	Err    error     // the cause: ctx's error, a renewal's, a session's

	want     int   // a refused semaphore request's permits
	leaveErr error // why a wait that ended could not leave the queue
}

// DeadlockStep is one wait of a deadlock's cycle.
type DeadlockStep struct {
	Owner string
	Key   string
}

func (e *Error) Error() string {
	switch {
	case e.Kind == ErrNotHeld:
		return fmt.Sprintf("locker: token %d of %q is not the current lease: %s", e.Token, e.Key, e.notHeldReason())
	case e.Kind == ErrLeaseLost:
		return ErrLeaseLost.Error() + ": " + e.Reason
	case e.Kind == ErrDeadlock:
		return e.deadlock()
	case e.Err != nil:
		return e.gaveUp()
	case e.Conflict:
		return e.conflict()
	}
	return "locker: " + e.why() + e.queue()
}

// Is makes errors.Is(err, e.Kind) true.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) why() string {
	switch {
	case e.DelayUntil != nil:
		// The protocol answers a lock-delay and an at-least hold's keep alike.
		return fmt.Sprintf("%q is in its lock-delay, or kept by an at-least hold, until %s (%s more; last holder %q, token %d)",
			e.Key, e.DelayUntil.UTC().Format(time.RFC3339Nano), e.DelayLeft.Round(time.Millisecond), e.Owner, e.Token)
	case e.Queued:
		return fmt.Sprintf("%q is promised to the waiters queued for it (last holder %q, token %d): a try does not jump the queue",
			e.Key, e.Owner, e.Token)
	case e.Remaining <= 0:
		// The row was locked by another transaction at every attempt: a
		// grant or release in progress, or a fenced write of the holder.
		return fmt.Sprintf("%q is busy: another transaction is changing it (last seen: %q, token %d)",
			e.Key, e.Owner, e.Token)
	}
	return fmt.Sprintf("%q is held by %q (token %d) for %s more",
		e.Key, e.Owner, e.Token, e.Remaining.Round(time.Millisecond))
}

func (e *Error) queue() string {
	switch {
	case e.Position > 0:
		return fmt.Sprintf("; queued %d of %d", e.Position, e.QueueLength)
	case e.QueueLength > 0:
		return fmt.Sprintf("; %d queued", e.QueueLength)
	}
	return ""
}

func (e *Error) notHeldReason() string {
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

func (e *Error) gaveUp() string {
	msg := fmt.Sprintf("locker: acquire %q: gave up waiting for %q after %s: %v",
		e.Key, e.Owner, e.Waited.Round(time.Millisecond), e.Err)
	switch {
	case e.leaveErr != nil:
		return msg + fmt.Sprintf(" (leaving the queue failed: %v; a lease handed to it meanwhile lapses at the end of its claim window)", e.leaveErr)
	case e.PassedOn:
		return msg + " (the lease handed to it meanwhile was released and passed on)"
	case e.Unsure:
		return msg + " (its record was gone: a lease handed to it may have lapsed unclaimed)"
	}
	return msg
}

func (e *Error) conflict() string {
	asked := "shared"
	if e.want > 0 {
		asked = fmt.Sprintf("as a semaphore of %d permits", e.want)
	}
	held := "shared"
	if e.Mode == ModeSemaphore {
		held = fmt.Sprintf("as a semaphore of %d permits", e.Permits)
	}
	holders := fmt.Sprintf("%d holders; cannot take it %s until they end", e.Holders, asked)
	if e.Holders == 1 {
		holders = fmt.Sprintf("1 holder; cannot take it %s until it ends", asked)
	}
	return fmt.Sprintf("locker: %q is held %s by %s", e.Key, held, holders)
}

func (e *Error) deadlock() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locker: acquire %s: deadlock: ", quoteKeys(e.Keys))
	for i, s := range e.Cycle {
		next := e.Cycle[(i+1)%len(e.Cycle)].Owner
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q waits for %q (held or queued ahead by %q)", s.Owner, s.Key, next)
	}
	fmt.Fprintf(&b, "; the wait of %q closed the cycle and was refused", e.Owner)
	return b.String()
}

// left records on a wait that ended what leaving the queue did: whether a
// lease handed to it meanwhile was passed on, or may lapse unclaimed.
func (e *Error) left(did string, leaveErr error) {
	switch {
	case leaveErr != nil:
		e.Unsure, e.leaveErr = true, leaveErr
	case did == lockdb.PassedOn:
		e.PassedOn = true
	case did == lockdb.LeftNone:
		e.Unsure = true
	}
}

func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}
