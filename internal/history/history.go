// Package history records what concurrent lock clients saw and checks it,
// together with what the database kept, against the lock contract. The
// locker's concurrency tests and the fault-injection suite
// (internal/faults) both use it.
//
// A key is granted in one of three modes (Op.Mode; in the log, "mode" and
// "permits" in a grant event's detail, absent for exclusive), and each
// holder has a lease of its own, named by the key and its token. Check
// holds every key to these properties among others (Check lists them all):
//
//   - an exclusive holder's lease overlaps no other holder's, exclusive,
//     shared or permit;
//   - any number of shared holders' leases may overlap;
//   - no more than N permit holders of a semaphore of N permits hold it
//     at once (N the least of the permits of the grants in force), and a
//     key holds shared holders and permits never at once;
//   - an exclusive grant's token is larger than every token granted on
//     the key before it, a shared or permit grant's larger than every
//     exclusive one before it (overlapping shared or permit holders draw
//     theirs in any order);
//   - a fenced write commits under its lease only until a grant that
//     conflicts with that lease: any grant after an exclusive lease; an
//     exclusive grant after a shared or permit one; the steal of a permit,
//     or a permit grant that, counting the writer, made more than N.
//
// A test drives many clients against one database, records every operation
// and every end of a kept lease here (Recorder), has them write under their
// leases to the guarded table (CreateGuarded, WriteGuarded), then reads the
// database's own records — the lock event log in event_id order and the
// guarded table in commit order (Observe) — and calls Check. Check is a
// direct checker rather than a linearizability search (such as porcupine):
// lock semantics depend on time (a lease ends at its expiry without any
// operation), and the event log already names a total order of each key's
// grants, so every property is a scan over sorted data, and a violation is
// reported with the operations that show it.
package history

import (
	"sync"
	"time"
)

// Kind is what a client did.
type Kind string

const (
	Grant        Kind = "grant"         // Acquire, at once or waiting, or one key of a set's Acquire (Op.Set)
	Renew        Kind = "renew"         // Renew of a lease the client held
	Release      Kind = "release"       // Release of a lease the client held, or one key of a set's Release
	Write        Kind = "write"         // one fenced transaction: Fence, guarded write, commit
	ForceExpire  Kind = "force_expire"  // an operator's ForceExpire
	ForceRelease Kind = "force_release" // an operator's ForceRelease
	Crash        Kind = "crash"         // the server was killed without a shutdown checkpoint, between Call and Return
)

// Result is how an operation ended, as the client saw it.
type Result string

const (
	OK      Result = "ok"       // granted / renewed / released / committed / expired
	Held    Result = "held"     // Grant refused: another owner holds the key
	NotHeld Result = "not_held" // Renew, Release, Write (fence) or ForceExpire refused: token not current
	GaveUp  Result = "gave_up"  // a waiting Acquire's context ended
	Failed  Result = "failed"   // an error that certainly changed nothing (e.g. before commit)
	Unknown Result = "unknown"  // an error that leaves the outcome unknown (e.g. a failed commit)
)

// Op is one operation with its local call and return times (offsets on
// this process's monotonic clock from the Recorder's start).
type Op struct {
	Client int
	Kind   Kind
	Key    string
	Owner  string
	// Token is the token the operation named (Renew, Release, Write,
	// ForceExpire) or, for a Grant that succeeded, the token granted.
	Token  int64
	Result Result
	// Outcome is the locker outcome of a successful Grant ("acquired",
	// "stolen", "renewed").
	Outcome string
	// ExpiresAt is the lease's expiry on the database clock after a
	// successful Grant or Renew.
	ExpiresAt time.Time
	// TTL of a successful Grant or Renew.
	TTL time.Duration
	// WriterSeq numbers a client's Write operations, so a committed write
	// can be matched with its row in the guarded table.
	WriterSeq int64
	// Lazy marks a Release that committed without waiting for the disk
	// (locker's default): a server Crash after it may lose it, leaving the
	// lease to run to its expiry, which is safe.
	Lazy bool
	// Set names the set call (a set's Acquire or Release) the op
	// is one key of: each key of a set call is an op of its own, all with
	// the same Set, unique to the call in the history. Empty for a
	// single-key call.
	Set string
	// Mode is the mode a Grant asked for: ModeExclusive (or empty),
	// ModeShared or ModeSemaphore, with Permits the semaphore's N. Each
	// holder of a shared or semaphore key has its own lease and token, so
	// Key and Token name the holder.
	Mode    string
	Permits int
	// LockDelay is the lock-delay a Grant asked for (locker's
	// Request.LockDelay): when the lease ends without its holder's release,
	// nobody may be granted the key for that long.
	LockDelay time.Duration
	// Session names the session of a SessionKill.
	Session int64
	// Bound marks a Grant whose lease the client then bound to a session
	// (locker.Session): from the binding on the lease ends when the session
	// does, perhaps before the grant's expiry, so that expiry is no bound
	// on the lease's end (properties 2 and 6 do not use it; 5 and 8 check
	// such leases).
	Bound        bool
	Call, Return time.Duration
	Err          string
}

// Recorder collects operations from many goroutines.
type Recorder struct {
	start   time.Time
	mu      sync.Mutex
	ops     []Op
	ends    []LeaseEnd
	vouched []Vouched
}

// NewRecorder starts a history now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is the current offset on the history's clock; take it just before
// sending an operation (Call) and just after its reply (Return).
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Add records op.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of everything recorded.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// GuardedWrite is one committed row of the test's guarded table: a write
// made under a fence with Token by Writer (an owner id), numbered CommitSeq
// in its key's commit order.
type GuardedWrite struct {
	Key       string
	Token     int64
	Writer    string
	WriterSeq int64
	CommitSeq int64
}
