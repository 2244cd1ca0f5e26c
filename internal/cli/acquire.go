package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// AcquireCommand is `lockctl acquire KEY`.
func AcquireCommand() *cobra.Command {
	var o AcquireOptions
	cmd := &cobra.Command{
		Use:        "acquire KEY…",
		Short:      "take KEY for --owner, or renew it if --owner already holds it; several keys: all or none (exit 3: held by another owner, 5: deadlock)",
		SuggestFor: []string{"lock", "take", "get"},
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key, o.Keys = args[0], args
			return Acquire(ctx, env, o)
		}),
	}
	fs := cmd.Flags()
	OwnerVar(fs, &o.Owner, "owner", "owner `id` (default: a new host:pid:random id, printed)")
	TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "lease length")
	DurationVar(fs, &o.Wait, "wait", 0, "wait up to this long while another owner holds KEY (0: try once)")
	LockDelayVar(fs, &o.LockDelay)
	AtLeastVar(fs, &o.AtLeast)
	holdModeVars(fs, &o)
	setModeVars(fs, &o)
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// AcquireOptions are acquire's flags and arguments.
type AcquireOptions struct {
	Key string
	// Keys, when it names more than one, are taken all or none
	// (acquireset.go); Key is then the first.
	Keys  []string
	Owner string        // "": a new locker.NewOwnerID(), printed
	TTL   time.Duration // lease length
	Wait  time.Duration // 0: one attempt; >0: wait up to this long
	JSON  bool
	// LockDelay keeps the key from everyone that long after the lease
	// ends without a release (locker.Request.LockDelay).
	LockDelay time.Duration
	// AtLeast keeps the keys after a release sooner than that after their
	// grant until then (locker.Request.AtLeast).
	AtLeast time.Duration
	// Shared takes Key shared (an Acquire of a shared lease); Permits > 0 takes one of
	// Permits permits of it (an Acquire of a permit). Neither: Key alone.
	Shared  bool
	Permits int
	// SharedKeys and PermitKeys (KEY=N) name keys of a set taken shared or
	// as one of N permits (setmodes.go); the set's other keys alone.
	SharedKeys []string
	PermitKeys []string
}

// Acquire takes opts.Key for opts.Owner, or renews it when that owner
// already holds it (same token); several opts.Keys all or none; with
// Shared or Permits, as one of its holders. With Wait it waits in the
// key's queue for the holder to release or expire, woken by NOTIFY. Exit 3
// when another owner holds it (after Wait, if given), 5 when the wait
// would close a cycle of waits. A signal while waiting exits 128+signal (130 for
// SIGINT, 143 for SIGTERM), as a shell reports a process the signal ended.
func Acquire(ctx context.Context, env Env, opts AcquireOptions) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	if len(opts.Keys) > 1 {
		return acquireSet(ctx, env, opts)
	}
	held, code := takeLease(ctx, env, opts)
	if held == nil {
		return code
	}
	defer held.pool.Close()
	return printLease(env, opts.JSON, held.lease, "")
}

// heldLease is a lease takeLease was granted, with the pool and locker that
// took it, for the caller to renew, release and close.
type heldLease struct {
	pool  *pgxpool.Pool
	lk    *locker.Locker
	lease locker.Lease
}

// takeLease is what acquire and run share once their flags are valid: it
// connects and takes opts.Key for opts.Owner (a new locker.NewOwnerID()
// when empty), alone, shared or as a permit (holdmode.go), in one attempt
// or waiting up to opts.Wait. When the key is
// not granted it says why (reportNotAcquired), closes the pool and returns
// nil with the exit code.
func takeLease(ctx context.Context, env Env, opts AcquireOptions) (*heldLease, int) {
	opts, pool, cfg, lk, code := prepareTake(ctx, env, opts)
	if lk == nil {
		return nil, code
	}
	var lease locker.Lease
	var err error
	if opts.Wait == 0 {
		lease, err = one(lk.Acquire(ctx, pool, opts.request(0)))
	} else {
		lease, err = waitForLease(ctx, env, pool, cfg, opts)
	}
	if err != nil {
		code := reportNotAcquired(ctx, env, lk, pool, opts, err)
		pool.Close()
		return nil, code
	}
	return &heldLease{pool: pool, lk: lk, lease: lease}, ExitOK
}

// prepareTake is what takeLease and takeSet do before they take: an owner
// (a new locker.NewOwnerID() when opts has none), a pool and the Locker of
// opts. When it cannot, it says why and returns a nil Locker with the exit
// code.
func prepareTake(ctx context.Context, env Env, opts AcquireOptions) (AcquireOptions, *pgxpool.Pool, locker.Config, *locker.Locker, int) {
	if opts.Owner == "" {
		opts.Owner = locker.NewOwnerID()
	}
	cfg := locker.Config{TTL: opts.TTL, LogGrants: true}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return opts, nil, cfg, nil, env.Fail(err)
	}
	lk, err := locker.New(cfg)
	if err != nil {
		pool.Close()
		return opts, nil, cfg, nil, env.Fail(err)
	}
	return opts, pool, cfg, lk, ExitOK
}

// reportNotAcquired explains why opts.Key was not granted and returns the
// exit code: 128+signal when a signal interrupted the wait, ExitHeld with
// the holder (or holders) named when it is held (also after waiting the
// whole of --wait) or its holders hold it in a conflicting mode, the
// error's code otherwise.
func reportNotAcquired(ctx context.Context, env Env, lk *locker.Locker, pool *pgxpool.Pool, opts AcquireOptions, err error) int {
	if ctx.Err() != nil {
		env.printLine(fmt.Sprintf("%s: interrupted while waiting for %s", env.Prog, textsafe.Escape(opts.Key)))
		return interruptedCode(ctx)
	}
	waitedOut := errors.Is(err, context.DeadlineExceeded)
	if waitedOut && !opts.JSON {
		env.printLine(fmt.Sprintf("%s: gave up after waiting %s", env.Prog, formatDuration(opts.Wait)))
	}
	// Refused, or waited the whole of --wait: one read of the key says who
	// holds it now, for the message and the JSON fields.
	var now keyState
	if waitedOut || errors.Is(err, locker.ErrHeld) {
		if row, found, gerr := store.Get[lockdb.LockInfo](ctx, pool, opts.Key); gerr == nil && found {
			now = readKeyState(ctx, pool, &row)
			if waitedOut {
				err = waitedOutRefusal(err, row)
			}
		}
	}
	if code, ok := printRefusal(env, opts.JSON, opts.Owner, err, now); ok {
		return code
	}
	return env.Fail(err)
}

// check validates what the flag types cannot, before connecting.
func (o AcquireOptions) check() error {
	if err := checkKeys(o.Key, o.Keys); err != nil {
		return err
	}
	if o.Owner != "" {
		if err := lockdb.ValidateOwner(o.Owner); err != nil {
			return usagef("invalid --owner: %w", err)
		}
	}
	if _, err := ParseTTL(o.TTL.String()); err != nil {
		return usagef("invalid --ttl %s: %w", o.TTL, err)
	}
	if o.Wait < 0 {
		return usagef("invalid --wait %s: must not be negative", o.Wait)
	}
	if o.LockDelay < 0 || o.LockDelay > locker.MaxLockDelay {
		return usagef("invalid --lock-delay %s: must be between 0 and %s", o.LockDelay, formatDuration(locker.MaxLockDelay))
	}
	if o.AtLeast != 0 && (o.AtLeast < time.Millisecond || o.AtLeast > locker.MaxTTL) {
		return usagef("invalid --at-least %s: must be between 1ms and %s", o.AtLeast, formatDuration(locker.MaxTTL))
	}
	return o.checkHoldMode()
}
