package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// ExpireCommand is `lockctl expire KEY`.
func ExpireCommand() *cobra.Command {
	var o ExpireOptions
	cmd := &cobra.Command{
		Use:        "expire KEY",
		Short:      "force-expire KEY's lease as an operator; only if --token (default: the current one; a shared or semaphore key's: every holder's) is still current (exit 4 otherwise)",
		SuggestFor: []string{"steal", "kill"},
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Expire(ctx, env, o)
		}),
	}
	TokenVar(cmd.Flags(), &o.Token, "token", "token to expire: one holder's of a shared or semaphore key (default: the key's current token; a group's ends every holder)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	completeLease(cmd)
	return cmd
}

// ExpireOptions are the flags and argument of expire and force-release.
type ExpireOptions struct {
	Key   string
	Token int64 // 0: the key's current token, read first
	JSON  bool
}

// Expire force-expires a lease as an operator (recorded with env.Actor):
// the next acquirer takes the key over with a new token, and the holder's
// renewals and fenced writes fail. It is fenced by token: only the token
// given (or, without --token, the one just read) is expired, so a lock that
// changed hands meanwhile is left alone and the exit code is 4. On a
// shared or semaphore key a holder's token expires that holder's lease
// alone, and the group's token (the key row's, which it reads without
// --token) every holder's.
func Expire(ctx context.Context, env Env, opts ExpireOptions) int {
	return force(ctx, env, opts, operator.Operator.ForceExpire)
}

// forceAction is the operator's ForceExpire or ForceRelease.
type forceAction func(op operator.Operator, ctx context.Context, db locker.DBTX, key string, token int64) (locker.Lease, error)

func force(ctx context.Context, env Env, opts ExpireOptions, act forceAction) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	op, pool, err := operatorOn(ctx, env)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()

	token, code, ok := tokenToAct(ctx, env, pool, opts)
	if !ok {
		return code
	}
	done, err := forceCounted(ctx, op, pool, opts.Key, token, act)
	if err != nil {
		if code, ok := printRefusal(env, opts.JSON, "", err, keyState{}); ok {
			return code
		}
		return env.Fail(err)
	}
	// The action may have started the lease's lock-delay: say until when.
	var delayUntil *time.Time
	if row, found, err := store.Get[lockdb.LockInfo](ctx, pool, opts.Key); err == nil && found && row.Token == done.lease.Token {
		delayUntil = row.DelayUntil
	}
	return printForced(env, opts.JSON, done, delayUntil)
}

// tokenToAct is the token an operator action takes: opts.Token, or (0)
// the key's current one, read now. ok is false when it could not: it said
// why, and code is the exit status.
func tokenToAct(ctx context.Context, env Env, db locker.DBTX, opts ExpireOptions) (token int64, code int, ok bool) {
	if opts.Token != 0 {
		return opts.Token, ExitOK, true
	}
	row, found, err := store.Get[lockdb.LockInfo](ctx, db, opts.Key)
	if err != nil {
		return 0, env.Fail(err), false
	}
	if !found {
		code, _ := printRefusal(env, opts.JSON, "", &locker.Error{Kind: locker.ErrNotHeld, Key: opts.Key}, keyState{})
		return 0, code, false
	}
	return row.Token, ExitOK, true
}

// check validates what the flag types cannot, before connecting.
func (o ExpireOptions) check() error {
	if err := lockdb.ValidateKey(o.Key); err != nil {
		return usagef("invalid KEY: %w", err)
	}
	if o.Token < 0 {
		return usagef("invalid --token %d: must be positive", o.Token)
	}
	return nil
}
