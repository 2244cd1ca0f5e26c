package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// AcquireOptions are acquire's flags and argument.
type AcquireOptions struct {
	Key   string
	Owner string        // "": a new locker.NewOwnerID(), printed
	TTL   time.Duration // lease length
	Wait  time.Duration // 0: one attempt; >0: wait up to this long
	JSON  bool
}

// Acquire takes opts.Key for opts.Owner, or renews it when that owner
// already holds it (same token). With Wait it waits for the holder to
// release or expire, woken by NOTIFY. Exit 3 when another owner holds it
// (after Wait, if given).
func Acquire(ctx context.Context, env Env, opts AcquireOptions) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	if opts.Owner == "" {
		opts.Owner = locker.NewOwnerID()
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: opts.TTL, LogGrants: true})
	if err != nil {
		return env.Fail(err)
	}
	var lease locker.Lease
	if opts.Wait == 0 {
		lease, err = lk.TryAcquire(ctx, pool, opts.Key, opts.Owner)
	} else {
		lease, err = acquireWaiting(ctx, pool, opts)
	}
	if err == nil {
		return printLease(env, opts.JSON, lease, "")
	}
	if ctx.Err() != nil {
		return env.Errorf("interrupted while waiting for %s", textsafe.Escape(opts.Key))
	}
	waitedOut := errors.Is(err, context.DeadlineExceeded)
	if waitedOut && !opts.JSON {
		env.printLine(fmt.Sprintf("%s: gave up after waiting %s", env.Prog, formatDuration(opts.Wait)))
	}
	// Refused, or waited the whole of --wait: one read of the key says who
	// holds it now, for the message and the JSON fields.
	var holder *locker.LockInfo
	if waitedOut || errors.Is(err, locker.ErrHeld) {
		if row, found, gerr := lk.Get(ctx, pool, opts.Key); gerr == nil && found {
			holder = &row
			if waitedOut {
				err = &locker.HeldError{Key: row.Key, Owner: row.Owner, Token: row.Token,
					ExpiresAt: row.ExpiresAt, Remaining: row.Remaining}
			}
		}
	}
	if code, ok := printRefusal(env, opts.JSON, opts.Owner, err, holder); ok {
		return code
	}
	return env.Fail(err)
}

// check validates what the flag types cannot, before connecting.
func (o AcquireOptions) check() error {
	if err := locker.ValidateKey(o.Key); err != nil {
		return usagef("invalid KEY: %w", err)
	}
	if o.Owner != "" {
		if err := locker.ValidateOwner(o.Owner); err != nil {
			return usagef("invalid --owner: %w", err)
		}
	}
	if _, err := ParseTTL(o.TTL.String()); err != nil {
		return usagef("invalid --ttl %s: %w", o.TTL, err)
	}
	if o.Wait < 0 {
		return usagef("invalid --wait %s: must not be negative", o.Wait)
	}
	return nil
}

// acquireWaiting runs locker.Acquire for at most opts.Wait, with a Notifier
// so a release wakes it at once rather than at the next recheck.
func acquireWaiting(ctx context.Context, pool *pgxpool.Pool, opts AcquireOptions) (locker.Lease, error) {
	notifier := locker.NewNotifier(locker.ConnectWith(pool.Config().ConnConfig))
	nctx, stopNotifier := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = notifier.Run(nctx) // returns when nctx ends; it reconnects on its own
	}()
	defer func() {
		stopNotifier()
		<-done
	}()
	lk, err := locker.New(locker.Config{TTL: opts.TTL, Notifier: notifier, LogGrants: true})
	if err != nil {
		return locker.Lease{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	return lk.Acquire(wctx, pool, opts.Key, opts.Owner)
}
