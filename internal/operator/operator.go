// Package operator is what lockctl's commands and console do to other
// owners' leases: force-expire and force-release a lease, end a key's
// lock-delay or a session early, prune rows that have stayed free. A
// service keeps its own leases with package locker and never needs these;
// an operator reaches them through lockctl (or, from another language,
// through the protocol functions they call, docs/protocol.md). Each action
// runs one protocol function and names Operator.Actor on the event it
// writes. Their errors read "locker: …", as every lock operation's do.
package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Operator acts as one person or tool, its actor, which every event an
// action writes records. The zero value acts as DefaultActor().
type Operator struct {
	actor string
}

// New returns an Operator acting as actor ("": DefaultActor()), which must
// be a valid owner id.
func New(actor string) (Operator, error) {
	if err := lockdb.ValidateOwner(actor); actor != "" && err != nil {
		return Operator{}, fmt.Errorf("locker: actor: %w", err)
	}
	return Operator{actor: actor}, nil
}

// Outcomes of the force actions (locker.Lease.Outcome).
const (
	Expired       locker.Outcome = lockdb.OutcomeExpired       // "expired": force-expired: the next acquirer steals it
	ForceReleased locker.Outcome = lockdb.OutcomeForceReleased // "force_released": freed by an operator
)

// ErrNotDelayed: EndDelay found the key in no lock-delay (it never had
// one, it ran out, or the key has been granted since).
var ErrNotDelayed = errors.New("not in a lock-delay")

// ErrNoSession: EndSession found no such session (closed, ended, or pruned
// after it lapsed).
var ErrNoSession = errors.New("no such session")

// Actor is the name o records on events.
func (o Operator) Actor() string {
	if o.actor == "" {
		return DefaultActor()
	}
	return o.actor
}

// DefaultActor is "user@host", the name recorded on events an operator
// causes.
func DefaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	actor := name + "@" + host
	if len(actor) > lockdb.MaxOwnerBytes {
		actor = actor[:lockdb.MaxOwnerBytes]
	}
	return actor
}

// MaxReasonBytes bounds an operator's reason (EndDelay, EndSession), which
// an event's detail keeps beside what the event says itself.
const MaxReasonBytes = lockdb.MaxJSONBytes / 2

// ValidateReason accepts a reason of at most MaxReasonBytes.
func ValidateReason(reason string) error {
	if len(reason) > MaxReasonBytes {
		return fmt.Errorf("%w: reason is %d bytes, more than %d", locker.ErrTooLarge, len(reason), MaxReasonBytes)
	}
	return nil
}

// EndSession is the operator's end of session id (lockctl end-session):
// every lease still bound to it is force-expired (an event each, naming
// the actor and reason; its lock-delay starts), the session is deleted and
// a session_ended event records it. Its process learns at its next
// heartbeat that the session is lost, and every bound Keepalive's Context
// ends. It returns how many leases it expired.
func (o Operator) EndSession(ctx context.Context, db locker.DBTX, id int64, reason string) (int, error) {
	if err := ValidateReason(reason); err != nil {
		return 0, fmt.Errorf("locker: end session %d: %w", id, err)
	}
	outcome, expired, err := store.EndSession(ctx, db, id, o.Actor(), reason)
	if err != nil {
		return 0, fmt.Errorf("locker: end session %d: %w", id, err)
	}
	if outcome != lockdb.OutcomeEnded {
		return 0, fmt.Errorf("locker: end session %d: %w", id, ErrNoSession)
	}
	return expired, nil
}
