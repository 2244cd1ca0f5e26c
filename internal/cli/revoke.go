package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// RevokeCommand is `lockctl revoke KEY`.
func RevokeCommand() *cobra.Command {
	var o RevokeOptions
	cmd := &cobra.Command{
		Use:   "revoke KEY",
		Short: "ask KEY's holder to let go, as an operator: its keepalive learns it at its next renewal; with --force-after the lease ends then at the latest (exit 4: --token not current)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Revoke(ctx, env, o)
		}),
	}
	TokenVar(cmd.Flags(), &o.Token, "token", "token to revoke (default: the key's current token)")
	ReasonVar(cmd.Flags(), &o.Reason, "reason", "why, told to the holder and recorded on the event")
	cmd.Flags().DurationVar(&o.ForceAfter, "force-after", -1, "end the lease this long from now at the latest, if its holder has not released it (default: no deadline)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	completeLease(cmd)
	return cmd
}

// RevokeOptions are revoke's flags and argument.
type RevokeOptions struct {
	Key        string
	Token      int64 // 0: the key's current token, read first
	Reason     string
	ForceAfter time.Duration // < 0: no deadline
	JSON       bool
}

// revokeResult is revoke's --json object.
type revokeResult struct {
	result
	Reason   string     `json:"reason,omitempty"`
	Deadline *time.Time `json:"force_at,omitempty"`
}

// Revoke asks a lease's holder to let go, as an operator (recorded with
// env.Actor and the reason); see operator.Revoke. Like expire it is fenced
// by token: a lock that changed hands meanwhile is left alone, exit 4.
func Revoke(ctx context.Context, env Env, opts RevokeOptions) int {
	target := ExpireOptions{Key: opts.Key, Token: opts.Token, JSON: opts.JSON}
	if err := target.check(); err != nil {
		return env.Fail(err)
	}
	op, pool, err := operatorOn(ctx, env)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	token, code, ok := tokenToAct(ctx, env, pool, target)
	if !ok {
		return code
	}
	done, err := op.Revoke(ctx, pool, opts.Key, token, opts.Reason, opts.ForceAfter)
	if err != nil {
		if code, ok := printRefusal(env, opts.JSON, "", err, keyState{}); ok {
			return code
		}
		return env.Fail(err)
	}
	if opts.JSON {
		r := revokeResult{result: leaseResult(done.Lease), Reason: opts.Reason}
		r.Outcome, r.Actor = lockdb.OutcomeRevoked, env.Actor
		if !done.Deadline.IsZero() {
			d := utc(done.Deadline)
			r.Deadline = &d
		}
		return env.emit(r)
	}
	l := done.Lease
	line := fmt.Sprintf("revoked %s token=%d owner=%s (by %s)", textsafe.Escape(l.Key), l.Token,
		textsafe.Escape(l.Owner), textsafe.Escape(env.Actor))
	if !done.Deadline.IsZero() {
		line += fmt.Sprintf("; it ends by %s at the latest", utc(done.Deadline).Format(time.RFC3339))
	}
	fmt.Fprintln(env.Stdout, line)
	return ExitOK
}
