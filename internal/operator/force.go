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

// ForceExpire ends the lease of key whose token is token, now: the next
// acquirer takes the key over with a new token, and the old holder's
// renewals and fenced writes fail. It acts only if token is still the
// current, unreleased grant — pass the token you saw, so a lock that
// changed hands meanwhile is left alone (ErrNotHeld, naming the new
// holder). Of a shared or semaphore key, it ends one holder's lease by its
// token, or every holder's by the group's. An event records the actor.
func (o Operator) ForceExpire(ctx context.Context, db locker.DBTX, key string, token int64) (locker.Lease, error) {
	return o.force(ctx, db, "force-expire", store.ForceExpire, Expired, key, token)
}

// ForceRelease frees the lease of key whose token is token, under the same
// token check as ForceExpire.
func (o Operator) ForceRelease(ctx context.Context, db locker.DBTX, key string, token int64) (locker.Lease, error) {
	return o.force(ctx, db, "force-release", store.ForceRelease, ForceReleased, key, token)
}

type forceFunc func(context.Context, store.DBTX, store.ForceParams) (store.LeaseRow, bool, error)

func (o Operator) force(ctx context.Context, db locker.DBTX, op string, run forceFunc, outcome locker.Outcome, key string, token int64) (locker.Lease, error) {
	if err := lockdb.ValidateKey(key); err != nil {
		return locker.Lease{}, fmt.Errorf("locker: %s: %w", op, err)
	}
	row, ok, err := run(ctx, db, store.ForceParams{Key: key, Token: token, Actor: o.Actor()})
	if err != nil {
		return locker.Lease{}, fmt.Errorf("locker: %s %q: %w", op, key, err)
	}
	if !ok {
		return locker.Lease{}, notHeld(ctx, db, key, token)
	}
	return locker.Lease{Key: row.Key, Owner: row.Owner, Token: row.Token, ExpiresAt: row.ExpiresAt, TTL: row.TTL,
		Outcome: outcome, Mode: locker.ModeExclusive}, nil
}

// notHeld is the refusal of a force action whose token was not current,
// with the key's row now.
func notHeld(ctx context.Context, db locker.DBTX, key string, token int64) error {
	e := &locker.Error{Kind: locker.ErrNotHeld, Key: key, Token: token}
	if cur, found, err := store.Get[lockdb.LockInfo](ctx, db, key); err == nil && found {
		e.Current = &cur
	}
	return e
}

// EndedDelay is what EndDelay ended: the key's last lease, and when its
// lock-delay would have ended.
type EndedDelay struct {
	Key        string
	Owner      string // the last holder
	Token      int64  // its grant's token
	DelayUntil time.Time
}

// EndDelay ends key's lock-delay now, as an operator who knows its last
// holder has stopped writing: the key goes at once to the head of its
// queue (or to the next acquirer). An event ("delay_ended") records the
// actor and reason. A key in no lock-delay is left alone (ErrNotDelayed).
func (o Operator) EndDelay(ctx context.Context, db locker.DBTX, key, reason string) (EndedDelay, error) {
	if err := errors.Join(lockdb.ValidateKey(key), ValidateReason(reason)); err != nil {
		return EndedDelay{}, fmt.Errorf("locker: end-delay: %w", err)
	}
	row, until, ok, err := store.EndDelay(ctx, db, store.EndDelayParams{Key: key, Actor: o.Actor(), Reason: reason})
	if err != nil {
		return EndedDelay{}, fmt.Errorf("locker: end-delay %q: %w", key, err)
	}
	if !ok {
		return EndedDelay{}, fmt.Errorf("locker: end-delay %q: %w", key, ErrNotDelayed)
	}
	return EndedDelay{Key: row.Key, Owner: row.Owner, Token: row.Token, DelayUntil: until}, nil
}

// PruneOptions configure Prune.
type PruneOptions struct {
	// FreeFor: delete lock rows released (or expired and never released)
	// longer ago than this. Defaults to 24h.
	FreeFor time.Duration
	// EventsOlderThan: also delete events older than this. Defaults to 0,
	// which keeps all events.
	EventsOlderThan time.Duration
	// GateWait bounds waiting for grants in flight. Defaults to 5s.
	GateWait time.Duration
}

// Prune deletes lock rows that have been free for longer than opts.FreeFor.
// It never breaks per-key token order: it first waits for every grant
// statement in flight and holds new ones back while it deletes, so a
// deleted key's next grant gets a larger token than any it had. It fails
// with lockdb.ErrLockTimeout, deleting nothing, if a grant inside a long
// transaction holds it back for more than opts.GateWait. It also deletes
// the waiter records of processes that died waiting, and sessions that
// lapsed.
func (o Operator) Prune(ctx context.Context, db locker.TxStarter, opts PruneOptions) (store.PruneResult, error) {
	if opts.FreeFor == 0 {
		opts.FreeFor = 24 * time.Hour
	}
	if opts.GateWait == 0 {
		opts.GateWait = 5 * time.Second
	}
	if opts.FreeFor < 0 || opts.EventsOlderThan < 0 || opts.GateWait < 0 {
		return store.PruneResult{}, fmt.Errorf("locker: prune: durations must not be negative")
	}
	res, err := store.Prune(ctx, db, opts.FreeFor, opts.EventsOlderThan, opts.GateWait)
	if err != nil {
		return store.PruneResult{}, fmt.Errorf("locker: prune: %w", err)
	}
	return res, nil
}
