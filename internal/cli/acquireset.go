package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// checkKeys refuses, before connecting, a key set the locker would refuse:
// a bad key, one named twice, more than locker.MaxKeys. keys empty: key
// alone.
func checkKeys(key string, keys []string) error {
	if len(keys) == 0 {
		keys = []string{key}
	}
	if len(keys) > locker.MaxKeys {
		return usagef("%d keys: at most %d can be taken at once", len(keys), locker.MaxKeys)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if err := lockdb.ValidateKey(k); err != nil {
			return usagef("invalid KEY: %w", err)
		}
		if seen[k] {
			return usagef("KEY %s is named twice: name each key once", textsafe.Escape(k))
		}
		seen[k] = true
	}
	return nil
}

// heldSet is a set of leases takeSet was granted, with the pool and locker
// that took them.
type heldSet struct {
	pool   *pgxpool.Pool
	lk     *locker.Locker
	leases []locker.Lease // in the order of opts.Keys
}

// setJSON is acquire's --json object for several keys.
type setJSON struct {
	Owner  string         `json:"owner"`
	Leases []setLeaseJSON `json:"leases"`
}

type setLeaseJSON struct {
	Key       string    `json:"key"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Mode      string    `json:"mode,omitempty"`    // shared or semaphore; omitted: held alone
	Permits   int       `json:"permits,omitempty"` // a semaphore's
}

// holderMode is lease's mode when it is a holder's (shared or semaphore),
// "" for a lease held alone.
func holderMode(lease locker.Lease) string {
	if lease.Mode == locker.ModeExclusive {
		return ""
	}
	return lease.Mode
}

// acquireSet is acquire of several keys: all of them, or none.
func acquireSet(ctx context.Context, env Env, opts AcquireOptions) int {
	held, code := takeSet(ctx, env, opts)
	if held == nil {
		return code
	}
	defer held.pool.Close()
	if opts.JSON {
		out := setJSON{Owner: held.leases[0].Owner}
		for _, l := range held.leases {
			out.Leases = append(out.Leases, setLeaseJSON{Key: l.Key, Token: l.Token, ExpiresAt: utc(l.ExpiresAt),
				Mode: holderMode(l), Permits: l.Permits})
		}
		return env.emit(out)
	}
	for _, l := range held.leases {
		printLease(env, false, l, "")
	}
	return ExitOK
}

// takeSet is takeLease for several keys: one attempt at all of them
// (a set's Acquire), or a wait for all of them (a set's waiting Acquire) up to opts.Wait.
// When they are not granted, nothing is held; it says why (the key that
// refused, or the cycle of a deadlock), closes the pool and returns nil
// with the exit code.
func takeSet(ctx context.Context, env Env, opts AcquireOptions) (*heldSet, int) {
	opts, pool, cfg, lk, code := prepareTake(ctx, env, opts)
	if lk == nil {
		return nil, code
	}
	var leases []locker.Lease
	var err error
	if opts.Wait == 0 {
		leases, err = lk.Acquire(ctx, pool, opts.request(0))
	} else {
		leases, err = waitForSet(ctx, env, pool, cfg, opts)
	}
	if err != nil {
		opts.Key = refusingKey(err, opts.Keys)
		code := reportNotAcquired(ctx, env, lk, pool, opts, err)
		pool.Close()
		return nil, code
	}
	return &heldSet{pool: pool, lk: lk, leases: leases}, ExitOK
}

// waitForSet is waitForLease for several keys: a set's waiting Acquire for at most
// wait, with a Notifier. a set's waiting Acquire claims a handed set before it returns.
func waitForSet(ctx context.Context, env Env, pool *pgxpool.Pool, cfg locker.Config, opts AcquireOptions) ([]locker.Lease, error) {
	notifier, stopNotifier, err := StartNotifier(ctx, env, pool)
	if err != nil {
		return nil, err
	}
	defer stopNotifier()
	cfg.Notifier = notifier
	lk, err := locker.New(cfg)
	if err != nil {
		return nil, err
	}
	return lk.Acquire(ctx, pool, opts.request(opts.Wait))
}

// refusingKey is the key a refusal of a set names: the key that was held,
// or that a wait which ran out waited for longest.
func refusingKey(err error, keys []string) string {
	if e := (*locker.Error)(nil); errors.As(err, &e) && e.Kind == locker.ErrHeld {
		return e.Key
	}
	return keys[0]
}

// deadlockResult is the --json object of a wait refused as a deadlock
// (exit 5).
type deadlockResult struct {
	Error          string             `json:"error"`
	Outcome        string             `json:"outcome"`
	Keys           []string           `json:"keys"`
	RequestedOwner string             `json:"requested_owner"`
	Cycle          []deadlockStepJSON `json:"cycle"`
}

type deadlockStepJSON struct {
	Owner string `json:"owner"`
	Key   string `json:"key"`
}

func deadlockOf(e *locker.Error) deadlockResult {
	r := deadlockResult{Error: "deadlock", Outcome: "deadlock", Keys: e.Keys, RequestedOwner: e.Owner, Cycle: []deadlockStepJSON{}}
	for _, s := range e.Cycle {
		r.Cycle = append(r.Cycle, deadlockStepJSON{Owner: s.Owner, Key: s.Key})
	}
	return r
}

// deadlockLine is the text of a wait refused as a deadlock: the cycle, the
// refused owner's wait first.
func deadlockLine(prog string, e *locker.Error) string {
	line := prog + ": deadlock: "
	for i, s := range e.Cycle {
		if i > 0 {
			line += ", "
		}
		next := e.Cycle[(i+1)%len(e.Cycle)].Owner
		line += fmt.Sprintf("%s waits for %s (held or queued for by %s)",
			textsafe.Escape(s.Owner), textsafe.Escape(s.Key), textsafe.Escape(next))
	}
	return line + fmt.Sprintf("; the wait of %s closed the cycle and was refused, nothing taken", textsafe.Escape(e.Owner))
}
