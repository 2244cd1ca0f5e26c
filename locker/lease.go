package locker

import (
	"os"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Outcome says what an operation did.
type Outcome string

const (
	Acquired Outcome = lockdb.OutcomeAcquired // "acquired": new row, or a free one: new token
	Stolen   Outcome = lockdb.OutcomeStolen   // "stolen": another owner's expired lease: new, larger token
	Renewed  Outcome = lockdb.OutcomeRenewed  // "renewed": already ours: same token, later expiry
	Released Outcome = lockdb.OutcomeReleased // "released": freed by its owner
)

// Lease is one grant of a key to an owner. Token is its fencing token: on a
// key, every later grant has a larger one.
type Lease struct {
	Key, Owner string
	Token      int64
	// ExpiresAt is on the database's clock. Compare it only with other
	// database times; use ValidFor for a local deadline.
	ExpiresAt time.Time
	TTL       time.Duration
	Outcome   Outcome
	// Mode is ModeExclusive (or ""), ModeShared or ModeSemaphore (Permits).
	Mode    string
	Permits int
	// A revoke (lockctl revoke) a renewal read: the operator's role and
	// actor, why, and its deadline (zero: none). Finish, then Release.
	RevokedByRole, RevokedByActor, RevokeReason string
	RevokeDeadline                              time.Time

	// revokeLeft is how long the lease had left from sentAt until
	// RevokeDeadline (database clock), when that is less than TTL: the
	// lease is trusted no longer than that.
	revokeLeft time.Duration
	// sentAt is this process's clock (with its monotonic reading) just before
	// the statement that granted or last renewed the lease was sent. The
	// database set ExpiresAt after that, so sentAt+TTL never overstates the
	// lease, whatever the clocks of the two machines say.
	sentAt time.Time
	// valid is how long from sentAt the grant certainly lasts when that is
	// less than TTL: a lease handed off from a queue, until claimed. Zero
	// means TTL.
	valid time.Duration
	// claim, for a handed-off lease, is its background claim (see claim.go),
	// whose renewal ValidFor then counts from.
	claim *pendingClaim
}

// ValidFor is how much longer the lease certainly lasts, on this process's
// monotonic clock from before the statement that last proved it was sent.
// Zero for a Lease not returned by this package.
func (l Lease) ValidFor() time.Duration {
	if l.claim != nil {
		if claimed := l.claim.claimed.Load(); claimed != nil {
			return claimed.ValidFor()
		}
	}
	if l.sentAt.IsZero() {
		return 0
	}
	return max(0, l.length()-time.Since(l.sentAt))
}

// length is how long from sentAt the grant lasts: its TTL, or the claim
// window of a hand-off not yet claimed.
func (l Lease) length() time.Duration {
	if l.valid > 0 {
		return l.valid
	}
	if l.revokeLeft > 0 {
		return min(l.revokeLeft, l.TTL)
	}
	return l.TTL
}

func (l Lease) ref() store.LeaseRef {
	return store.LeaseRef{Key: l.Key, Owner: l.Owner, Token: l.Token}
}

func leaseFrom(row store.LeaseRow, outcome Outcome, sentAt time.Time) Lease {
	return Lease{
		Key: row.Key, Owner: row.Owner, Token: row.Token,
		ExpiresAt: row.ExpiresAt, TTL: row.TTL, Outcome: outcome, Mode: ModeExclusive, sentAt: sentAt,
	}
}

// withRevoke is renewed carrying the operator's revoke v (nil: none).
func (l Lease) withRevoke(v *store.Revoke) Lease {
	if v == nil {
		return l
	}
	l.RevokedByRole, l.RevokedByActor, l.RevokeReason = v.CallerRole, v.Actor, v.Reason
	if v.ForceAt != nil {
		l.RevokeDeadline = *v.ForceAt
		// At least a microsecond: none left is a lease already lapsing.
		l.revokeLeft = max(v.Remaining, time.Microsecond)
	}
	return l
}

func defaultMetadata() map[string]any {
	host, _ := os.Hostname()
	return map[string]any{"host": host, "pid": os.Getpid()}
}
