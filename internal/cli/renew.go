package cli

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/locker"
)

// RenewCommand is `lockctl renew KEY`.
func RenewCommand() *cobra.Command {
	var o LeaseOptions
	cmd := &cobra.Command{
		Use:        "renew KEY",
		Short:      "extend the lease --owner holds with --token (exit 4: not held)",
		SuggestFor: []string{"extend", "refresh"},
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Renew(ctx, env, o)
		}),
	}
	fs := cmd.Flags()
	OwnerVar(fs, &o.Owner, "owner", "owner `id` of the lease")
	TokenVar(fs, &o.Token, "token", "fencing token of the lease")
	TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "new lease length, from now")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	Required(fs, "owner", "token")
	completeLease(cmd)
	return cmd
}

// Renew extends the lease named by key, owner and token by opts.TTL from
// the database's now. Exit 4 when that lease is no longer current or has
// expired.
func Renew(ctx context.Context, env Env, opts LeaseOptions) int {
	return runLease(ctx, env, opts, func(lk *locker.Locker, pool *pgxpool.Pool, lease locker.Lease) (locker.Lease, error) {
		return one(lk.Renew(ctx, pool, lease))
	})
}
