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
	// ErrHeld: another owner holds an unexpired lease on the key. The error
	// is a *HeldError saying who and until when.
	ErrHeld = errors.New("held by another owner")
	// ErrNotHeld: the lease named is not the current one (lost to a steal or
	// a force action, released, expired, or wrong owner or token). The error
	// is a *NotHeldError carrying the current row, if any.
	ErrNotHeld = errors.New("not held")
	// ErrQueueLost: a waiting Acquire lost its place in the queue: its
	// waiter record lapsed (the process paused for longer than
	// 3×WaitRecheck without a Notifier's heartbeat), or the key was handed
	// to it and its claim window ran out before it took it. Call Acquire
	// again to queue anew.
	ErrQueueLost = errors.New("lost its place in the queue")
	// ErrLeaseLost: a Keepalive lost its lease, and cancelled its context
	// with a *LeaseLostError saying why.
	ErrLeaseLost = errors.New("lease lost")
	// ErrDeadlock: a waiting Acquire or AcquireAll was refused because its
	// wait would close a cycle of waits (A holds X and waits for Y while B
	// holds Y and waits for X; any length, across processes). The error is
	// a *DeadlockError naming the cycle.
	ErrDeadlock = errors.New("deadlock")
	// ErrInvalidKey, ErrInvalidOwner and ErrInvalidTTL report bad arguments
	// before anything is sent to the database; ErrInvalidKeys a key set
	// that is empty, names a key twice or has more than MaxKeys keys.
	ErrInvalidKey   = errors.New("invalid lock key")
	ErrInvalidOwner = errors.New("invalid owner id")
	ErrInvalidTTL   = errors.New("invalid TTL")
	// ErrInvalidLockDelay: Config.LockDelay is negative or above
	// MaxLockDelay.
	ErrInvalidLockDelay = errors.New("invalid lock-delay")
	// ErrNotDelayed: EndDelay found the key in no lock-delay (it never had
	// one, it ran out, or the key has been granted since).
	ErrNotDelayed  = errors.New("not in a lock-delay")
	ErrInvalidKeys = errors.New("invalid key set")
	// ErrTooLarge: metadata, a stale write's detail or an operator's
	// reason is larger than the schema keeps (MaxJSONBytes,
	// MaxReasonBytes); nothing was sent.
	ErrTooLarge = errors.New("too large")
)

// Database errors: a driver error is mapped to one of these (and stays
// wrapped for detail), so callers can branch on what it means rather than
// on a SQLSTATE. Every package of lockctl returns these same values.
var (
	// ErrNotMigrated: the lock tables are missing (run Migrate) or this
	// role cannot see their schema.
	ErrNotMigrated = lockdb.ErrNotMigrated
	// ErrReadOnly: the server is a standby, or the transaction is read-only.
	ErrReadOnly = lockdb.ErrReadOnly
	// ErrPermissionDenied: the role lacks a grant the operation needs.
	ErrPermissionDenied = lockdb.ErrPermissionDenied
	// ErrLockTimeout: a database lock was not granted within lock_timeout
	// (Prune's wait for grants in flight, for example).
	ErrLockTimeout = lockdb.ErrLockTimeout
	// ErrStatementTimeout: statement_timeout or a cancel request ended the
	// statement.
	ErrStatementTimeout = lockdb.ErrStatementTimeout
	// ErrUnavailable: the database could not be reached, or the connection
	// broke mid-statement; the outcome of a write is then unknown.
	ErrUnavailable = lockdb.ErrUnavailable
	// ErrInvalidValue: the schema's checks refused a value.
	ErrInvalidValue = lockdb.ErrInvalidValue
	// ErrPoolerStatements: a transaction pooler lost the connection's
	// prepared statements; the message says which query exec mode to use.
	ErrPoolerStatements = lockdb.ErrPoolerStatements
	// ErrPoolerStartupParameter: the pooler refused a parameter of the
	// connection string (search_path, for one); the message says what
	// to do instead.
	ErrPoolerStartupParameter = lockdb.ErrPoolerStartupParameter
	// ErrCannotAdopt: Migrate found a distributed_lock it does not adopt by
	// itself (the reference service's table: `lockctl migrate` adopts it)
	// or cannot adopt, and changed nothing.
	ErrCannotAdopt = lockdb.ErrCannotAdopt
	// ErrSchemaNewer: Migrate found a schema migrated by a newer lockctl
	// and changed nothing: an older service instance never downgrades the
	// functions a newer one relies on.
	ErrSchemaNewer = lockdb.ErrSchemaNewer
	// ErrSchemaUnknown: Migrate found a schema whose recorded migrations
	// are not this lockctl's (another build's, or one made before v0.1.0,
	// which recorded no checksums) and changed nothing. The error says what
	// it found and what to do.
	ErrSchemaUnknown = lockdb.ErrSchemaUnknown
	// ErrSchemaOpen: Migrate found a lock schema in which roles other than
	// the lock tables' owner may create objects, or own functions or
	// operators, and changed nothing: what they make there could run inside
	// the protocol as the owner. The error names each, with what to run.
	ErrSchemaOpen = lockdb.ErrSchemaOpen
)

// HeldError says why a key could not be had: who holds it and for how
// long, how many wait for it, and whether a lock-delay keeps it. It matches
// ErrHeld.
type HeldError struct {
	Key       string
	Owner     string
	Token     int64
	ExpiresAt time.Time     // database clock
	Remaining time.Duration // expires_at minus the database's now when read
	// Queued: the key is free or its lease lapsed, but waiters are queued
	// for it (Acquire), and a try does not jump ahead of them. Owner and
	// Token are then the last holder's.
	Queued bool
	// QueueLength is how many live waiters were queued for the key.
	QueueLength int
	// Position is the caller's own place in that queue (1: the head) when
	// it was queued itself (a waiting Acquire that gave up); 0 otherwise.
	Position int
	// DelayUntil is set when the key was free or lapsed but in its
	// lock-delay (Config.LockDelay): nobody is granted it before then
	// (database clock). Owner and Token are then the last holder's.
	DelayUntil *time.Time
	// DelayLeft is how long the lock-delay still ran when read.
	DelayLeft time.Duration
	// Mode is the key's mode when a shared or permit attempt was refused
	// (ModeExclusive: an exclusive lease holds it); Permits its
	// semaphore's permits and Holders how many leases held it. Owner and
	// Token are then those of the permit that ends first, or of the
	// group's row ("*") when no permit names one.
	Mode    string
	Permits int
	Holders int
}

func (e *HeldError) Error() string {
	return "locker: " + e.why() + e.queue()
}

func (e *HeldError) why() string {
	switch {
	case e.DelayUntil != nil:
		return fmt.Sprintf("%q is in its lock-delay until %s (%s more; last holder %q, token %d)",
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

func (e *HeldError) queue() string {
	switch {
	case e.Position > 0:
		return fmt.Sprintf("; queued %d of %d", e.Position, e.QueueLength)
	case e.QueueLength > 0:
		return fmt.Sprintf("; %d queued", e.QueueLength)
	}
	return ""
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// NotHeldError says why a lease is not current. It matches ErrNotHeld.
type NotHeldError struct {
	Key   string
	Owner string // the caller's owner ("" for operator actions)
	Token int64  // the token the caller named
	// Current is the key's row now, nil when it has none.
	Current *LockInfo
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

// LeaseLostError is the cause a Keepalive cancels its context with. It
// matches ErrLeaseLost, and wraps the renewal's error when there was one (a
// *NotHeldError when the lease was no longer current).
type LeaseLostError struct {
	Key string
	// Reason says why, in words: the renewal's refusal, or that the lease
	// could not be renewed before its trust window passed.
	Reason string
	Err    error // the renewal's error that ended it; nil when there was none
	// At is when the keepalive stopped trusting the lease, on the Locker's
	// clock: the moment its Context was cancelled, which a goroutine waiting
	// on that Context may see later on a busy machine.
	At time.Time
}

func (e *LeaseLostError) Error() string { return ErrLeaseLost.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrLeaseLost) true.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

func (e *LeaseLostError) Unwrap() error { return e.Err }

// GaveUpError: a waiting Acquire's context ended while it was queued, before
// it took the key. It wraps the context's error.
type GaveUpError struct {
	Key    string
	Holder string        // the key's holder when the waiter last looked
	Waited time.Duration // how long it waited
	// Handed says whether a lease may have been handed to the caller before
	// it left the queue: HandedNone, HandedPassedOn or HandedUnknown.
	Handed Handed
	// LeaveErr is why leaving the queue failed (Handed is then
	// HandedUnknown), nil when it did not.
	LeaveErr error
	Err      error // the context's error
	// Position, QueueLength and DelayUntil are where the waiter stood when
	// it last looked: its place in the queue (1: the head), the queue's
	// length, and the end of the key's lock-delay if it was in one.
	Position    int
	QueueLength int
	DelayUntil  *time.Time
}

// Handed is what became of a lease handed to a waiter that gave up.
type Handed int

const (
	// HandedNone: no lease was handed to it; it left the queue.
	HandedNone Handed = iota
	// HandedPassedOn: one was, unclaimed; it was released and passed on.
	HandedPassedOn
	// HandedUnknown: leaving the queue failed or found its record gone: a
	// lease handed to it meanwhile lapses at the end of its claim window.
	HandedUnknown
)

func (e *GaveUpError) Error() string {
	msg := fmt.Sprintf("locker: acquire %q: gave up waiting for %q after %s: %v",
		e.Key, e.Holder, e.Waited.Round(time.Millisecond), e.Err)
	switch {
	case e.LeaveErr != nil:
		return msg + fmt.Sprintf(" (leaving the queue failed: %v; a lease handed to it meanwhile lapses at the end of its claim window)", e.LeaveErr)
	case e.Handed == HandedPassedOn:
		return msg + " (the lease handed to it meanwhile was released and passed on)"
	case e.Handed == HandedUnknown:
		return msg + " (its record was gone: a lease handed to it may have lapsed unclaimed)"
	}
	return msg
}

func (e *GaveUpError) Unwrap() error { return e.Err }

// DeadlockError: a waiting acquire was refused because its wait would close
// a cycle of waits. Of the waits on a cycle, the youngest is refused (the
// one that closed it, as PostgreSQL's lock manager refuses the wait that
// closes a cycle); the others keep waiting. It matches ErrDeadlock.
type DeadlockError struct {
	Keys  []string // the keys the refused call waited for
	Owner string   // its owner
	// Cycle is the cycle of waits, the refused owner's first: each step's
	// Owner waits for its Key, which the next step's owner holds or is
	// queued ahead for; the last step's owner waits for the first's.
	Cycle []DeadlockStep
}

// DeadlockStep is one wait of a deadlock's cycle.
type DeadlockStep struct {
	Owner string
	Key   string
}

func (e *DeadlockError) Error() string {
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

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}
