package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/locker"
)

// ReleaseCommand is `lockctl release KEY`.
func ReleaseCommand() *cobra.Command {
	var o LeaseOptions
	cmd := &cobra.Command{
		Use:        "release KEY",
		Short:      "free the lease --owner holds with --token (exit 4: not held)",
		SuggestFor: []string{"unlock", "free"},
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Release(ctx, env, o)
		}),
	}
	fs := cmd.Flags()
	OwnerVar(fs, &o.Owner, "owner", "owner `id` of the lease")
	TokenVar(fs, &o.Token, "token", "fencing token of the lease")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	Required(fs, "owner", "token")
	completeLease(cmd)
	return cmd
}

// Release frees the lease named by key, owner and token. The row stays,
// marked free. Exit 4 when that lease is not current (already released,
// lost, or a wrong owner or token).
func Release(ctx context.Context, env Env, opts LeaseOptions) int {
	return runLease(ctx, env, opts, func(lk *locker.Locker, pool *pgxpool.Pool, lease locker.Lease) (locker.Lease, error) {
		return one(lk.Release(ctx, pool, lease))
	})
}
