package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/store"
)

// ForceExpire ends the lease of key whose token is token, now, as an
// operator: the next acquirer takes the key over with a new token, and the
// old holder's renewals and fenced writes fail. It acts only if token is
// still the current, unreleased grant — pass the token you saw, so a lock
// that changed hands meanwhile is left alone (*NotHeldError with the new
// holder). An event records Config.Actor.
func (l *Locker) ForceExpire(ctx context.Context, db DBTX, key string, token int64) (Lease, error) {
	return l.force(ctx, db, "force-expire", store.ForceExpire, Expired, key, token)
}

// ForceRelease frees the lease of key whose token is token, as an operator,
// under the same token check as ForceExpire.
func (l *Locker) ForceRelease(ctx context.Context, db DBTX, key string, token int64) (Lease, error) {
	return l.force(ctx, db, "force-release", store.ForceRelease, ForceReleased, key, token)
}

type forceFunc func(context.Context, store.DBTX, store.ForceParams) (store.LeaseRow, bool, error)

func (l *Locker) force(ctx context.Context, db DBTX, op string, run forceFunc, outcome Outcome, key string, token int64) (Lease, error) {
	if err := ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: %s: %w", op, err)
	}
	row, ok, err := run(ctx, db, store.ForceParams{Key: key, Token: token, Actor: l.operatorActor()})
	if err != nil {
		return Lease{}, fmt.Errorf("locker: %s %q: %w", op, key, err)
	}
	if !ok {
		return Lease{}, notHeld(ctx, db, key, "", token)
	}
	return leaseFrom(row, outcome, time.Time{}), nil
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
// queue (or to the next acquirer). An event ("delay_ended") records
// Config.Actor and reason. A key in no lock-delay is left alone
// (ErrNotDelayed).
func (l *Locker) EndDelay(ctx context.Context, db DBTX, key, reason string) (EndedDelay, error) {
	if err := errors.Join(ValidateKey(key), ValidateReason(reason)); err != nil {
		return EndedDelay{}, fmt.Errorf("locker: end-delay: %w", err)
	}
	row, until, ok, err := store.EndDelay(ctx, db, store.EndDelayParams{Key: key, Actor: l.operatorActor(), Reason: reason})
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

// PruneResult counts what Prune deleted.
type PruneResult struct {
	Locks    int64
	Events   int64
	Waiters  int64 // records of processes that died waiting
	Sessions int64 // sessions that lapsed (Session)
}

// Prune deletes lock rows that have been free for longer than opts.FreeFor.
// It never breaks per-key token order: it first waits for every grant
// statement in flight and holds new ones back while it deletes, so a deleted
// key's next grant gets a larger token than any it had. It fails with
// ErrLockTimeout, deleting nothing, if a grant inside a long transaction
// holds it back for more than opts.GateWait. It also deletes the waiter
// records of processes that died waiting.
func (l *Locker) Prune(ctx context.Context, db TxStarter, opts PruneOptions) (PruneResult, error) {
	if opts.FreeFor == 0 {
		opts.FreeFor = 24 * time.Hour
	}
	if opts.GateWait == 0 {
		opts.GateWait = 5 * time.Second
	}
	if opts.FreeFor < 0 || opts.EventsOlderThan < 0 || opts.GateWait < 0 {
		return PruneResult{}, fmt.Errorf("locker: prune: durations must not be negative")
	}
	res, err := store.Prune(ctx, db, opts.FreeFor, opts.EventsOlderThan, opts.GateWait)
	if err != nil {
		return PruneResult{}, fmt.Errorf("locker: prune: %w", err)
	}
	return PruneResult{Locks: res.Locks, Events: res.Events, Waiters: res.Waiters, Sessions: res.Sessions}, nil
}
