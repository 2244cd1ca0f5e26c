package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/operator"
)

// ForceReleaseCommand is `lockctl force-release KEY`.
func ForceReleaseCommand() *cobra.Command {
	var o ExpireOptions
	cmd := &cobra.Command{
		Use:   "force-release KEY",
		Short: "free KEY's lease as an operator; only if --token (default: the current one; a shared or semaphore key's: every holder's) is still current (exit 4 otherwise)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return ForceRelease(ctx, env, o)
		}),
	}
	TokenVar(cmd.Flags(), &o.Token, "token", "token to free: one holder's of a shared or semaphore key (default: the key's current token; a group's frees every holder)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	completeLease(cmd)
	return cmd
}

// ForceRelease frees a lease as an operator (recorded with env.Actor), as if
// its holder had released it: waiters are woken and the next acquirer gets a
// new token. It is fenced by token like Expire (exit 4 when the token given,
// or the one just read, is no longer the current grant), and like Expire
// frees one holder of a shared or semaphore key, or with the group's token
// every holder.
func ForceRelease(ctx context.Context, env Env, opts ExpireOptions) int {
	return force(ctx, env, opts, operator.Operator.ForceRelease)
}
