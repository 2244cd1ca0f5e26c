package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// EndDelayCommand is `lockctl end-delay KEY`.
func EndDelayCommand() *cobra.Command {
	var o EndDelayOptions
	cmd := &cobra.Command{
		Use:   "end-delay KEY",
		Short: "end KEY's lock-delay now as an operator, so its queue's head (or the next acquirer) gets it (exit 4: not in one)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return EndDelay(ctx, env, o)
		}),
		ValidArgsFunction: completeDelayedKey,
	}
	ReasonVar(cmd.Flags(), &o.Reason, "reason", "why, recorded on the event")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// EndDelayOptions are end-delay's flags and argument.
type EndDelayOptions struct {
	Key    string
	Reason string
	JSON   bool
}

// endDelayResult is end-delay's --json object.
type endDelayResult struct {
	Key        string     `json:"key"`
	Outcome    string     `json:"outcome"` // delay_ended, not_delayed
	Owner      string     `json:"owner,omitempty"`
	Token      int64      `json:"token,omitempty"`
	DelayUntil *time.Time `json:"delay_until,omitempty"` // when it would have ended
	Actor      string     `json:"actor"`
	Reason     string     `json:"reason,omitempty"`
}

// EndDelay ends a key's lock-delay as an operator (recorded with env.Actor
// and the reason): the key is handed to the head of its queue, or left for
// the next acquirer. A key in no lock-delay is left alone: exit 4.
func EndDelay(ctx context.Context, env Env, opts EndDelayOptions) int {
	if err := lockdb.ValidateKey(opts.Key); err != nil {
		return env.Fail(usagef("invalid KEY: %w", err))
	}
	op, pool, err := operatorOn(ctx, env)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	ended, err := op.EndDelay(ctx, pool, opts.Key, opts.Reason)
	r := endDelayResult{Key: opts.Key, Outcome: lockdb.OutcomeDelayEnded, Actor: env.Actor, Reason: opts.Reason}
	switch {
	case errors.Is(err, operator.ErrNotDelayed):
		r.Outcome = lockdb.OutcomeNotDelayed
		if opts.JSON {
			return env.emitCode(r, ExitNotHeld)
		}
		env.printLine(fmt.Sprintf("%s: %s is not in a lock-delay", env.Prog, textsafe.Escape(opts.Key)))
		return ExitNotHeld
	case err != nil:
		return env.Fail(err)
	}
	until := utc(ended.DelayUntil)
	r.Owner, r.Token, r.DelayUntil = ended.Owner, ended.Token, &until
	if opts.JSON {
		return env.emit(r)
	}
	fmt.Fprintf(env.Stdout, "ended the lock-delay of %s (last held by %s, token %d; it was to run until %s) by %s\n",
		textsafe.Escape(opts.Key), textsafe.Escape(ended.Owner), ended.Token, until.Format(time.RFC3339Nano),
		textsafe.Escape(env.Actor))
	return ExitOK
}

// completeDelayedKey completes KEY with the keys in their lock-delay now.
func completeDelayedKey(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return fromDatabase(cmd, func(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
		return lockview.DelayedKeys(ctx, pool, toComplete, completionLimit)
	})
}
