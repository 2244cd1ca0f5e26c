package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Revoked is what Revoke did: the lease it asked to be let go, and its
// deadline (zero: none).
type Revoked struct {
	Lease    locker.Lease
	Deadline time.Time
}

// Revoke asks the holder of key's grant token to let go (lockctl revoke):
// the holder's Keepalive learns it, with reason and the operator's role
// and actor, at its next renewal, and can finish and release cleanly. With
// forceAfter ≥ 0 the lease also ends by now + forceAfter at the latest: no
// renewal extends it past that, so a holder that has not released by then
// loses it as if it had stopped renewing (its lock-delay starts; the next
// acquirer steals it); forceAfter < 0 sets no deadline. It acts only while
// token is the key's current, running exclusive grant (ErrNotHeld,
// naming the holder now, otherwise). A "revoked" event records it.
func (o Operator) Revoke(ctx context.Context, db locker.DBTX, key string, token int64, reason string, forceAfter time.Duration) (Revoked, error) {
	if err := errors.Join(lockdb.ValidateKey(key), ValidateReason(reason)); err != nil {
		return Revoked{}, fmt.Errorf("locker: revoke: %w", err)
	}
	p := store.RevokeParams{Key: key, Token: token, Actor: o.Actor(), Reason: reason}
	if forceAfter >= 0 {
		p.ForceAfter = &forceAfter
	}
	row, deadline, ok, err := store.RevokeLease(ctx, db, p)
	if err != nil {
		return Revoked{}, fmt.Errorf("locker: revoke %q: %w", key, err)
	}
	if !ok {
		return Revoked{}, notHeld(ctx, db, key, token)
	}
	r := Revoked{Lease: locker.Lease{Key: row.Key, Owner: row.Owner, Token: row.Token, ExpiresAt: row.ExpiresAt,
		TTL: row.TTL, Mode: locker.ModeExclusive}}
	if deadline != nil {
		r.Deadline = *deadline
	}
	return r, nil
}
