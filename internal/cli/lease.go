package cli

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// LeaseOptions name a lease for renew, release, downgrade and upgrade.
type LeaseOptions struct {
	Key   string
	Owner string
	Token int64
	TTL   time.Duration // renew, downgrade, upgrade: the new lease length
	Wait  time.Duration // upgrade only: how long to wait for the other holders
	JSON  bool
}

// check validates what the flag types cannot, before connecting.
func (o LeaseOptions) check() error {
	if err := lockdb.ValidateKey(o.Key); err != nil {
		return usagef("invalid KEY: %w", err)
	}
	if err := lockdb.ValidateOwner(o.Owner); err != nil {
		return usagef("invalid --owner: %w", err)
	}
	if o.Token <= 0 {
		return usagef("invalid --token %d: must be positive", o.Token)
	}
	if o.TTL != 0 {
		if _, err := ParseTTL(o.TTL.String()); err != nil {
			return usagef("invalid --ttl %s: %w", o.TTL, err)
		}
	}
	return nil
}

type leaseOp func(lk *locker.Locker, pool *pgxpool.Pool, lease locker.Lease) (locker.Lease, error)

func runLease(ctx context.Context, env Env, opts LeaseOptions, op leaseOp) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	cfg := locker.Config{LogGrants: true}
	if opts.TTL > 0 {
		cfg.TTL = opts.TTL
	}
	lk, err := locker.New(cfg)
	if err != nil {
		return env.Fail(err)
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	lease, err := op(lk, pool, locker.Lease{Key: opts.Key, Owner: opts.Owner, Token: opts.Token})
	if err != nil {
		// A refused upgrade names the key's holders, as acquire's refusal does.
		var now keyState
		if errors.Is(err, locker.ErrHeld) {
			if row, found, gerr := store.Get[lockdb.LockInfo](ctx, pool, opts.Key); gerr == nil && found {
				now = readKeyState(ctx, pool, &row)
			}
		}
		if code, ok := printRefusal(env, opts.JSON, opts.Owner, err, now); ok {
			return code
		}
		return env.Fail(err)
	}
	return printLease(env, opts.JSON, lease, "")
}

// one is the lease of a locker call on one key (Acquire, Renew, Release).
func one(leases []locker.Lease, err error) (locker.Lease, error) {
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}
