package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// LockInfo is a key's lock row as of the database's clock when it was read.
type LockInfo struct {
	Key   string
	Owner string // the holder, or the last holder of a free key
	Token int64  // the current (or last) grant's fencing token
	// ExpiresAt is on the database's clock; a free key keeps its last
	// lease's expiry.
	ExpiresAt  time.Time
	TTL        time.Duration
	AcquiredAt time.Time  // when the current (or last) grant was made
	RenewedAt  *time.Time // nil until the grant is renewed
	RenewCount int32
	ReleasedAt *time.Time     // nil while the key is held or expired
	Metadata   map[string]any // what the granting Locker's Config.Metadata said
	// Remaining is ExpiresAt minus the database's clock at read time
	// (negative once expired), zero for a free key.
	Remaining time.Duration
	// DBNow is the database's clock when the row was read.
	DBNow time.Time
}

// State is what a lock row means at the time it was read: one of the
// constants below, whose text is what the CLI prints.
type State = lockdb.State

const (
	StateHeld     = lockdb.StateHeld     // "held"
	StateExpiring = lockdb.StateExpiring // "expiring": held, with less than a fifth of its TTL (and under 10s) left
	StateExpired  = lockdb.StateExpired  // "expired": not released, past ExpiresAt: the next acquirer steals it
	StateFree     = lockdb.StateFree     // "free": released; Owner is the last holder
)

// State classifies the row as of DBNow.
func (i LockInfo) State() State {
	return lockdb.StateOf(i.ReleasedAt, i.Remaining, i.TTL)
}

func lockInfoFrom(l store.Lock) LockInfo {
	return LockInfo{
		Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: l.ExpiresAt, TTL: l.TTL,
		AcquiredAt: l.AcquiredAt, RenewedAt: l.RenewedAt, RenewCount: l.RenewCount,
		ReleasedAt: l.ReleasedAt, Metadata: l.Metadata, Remaining: l.Remaining, DBNow: l.DBNow,
	}
}

// Get reads key's lock row. found is false when the key has none (never
// granted, or pruned).
func (l *Locker) Get(ctx context.Context, db DBTX, key string) (info LockInfo, found bool, err error) {
	if err := ValidateKey(key); err != nil {
		return LockInfo{}, false, fmt.Errorf("locker: get: %w", err)
	}
	row, found, err := store.Get(ctx, db, key)
	if err != nil {
		return LockInfo{}, false, fmt.Errorf("locker: get %q: %w", key, err)
	}
	if !found {
		return LockInfo{}, false, nil
	}
	return lockInfoFrom(row), true, nil
}
